"""The engine seam: what the graph store needs from a graph engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mnemonet.store.graph_errors import GraphStoreError


@dataclass(frozen=True)
class WriteOutcome:
    """Rows a write returned and what it changed."""

    rows: list[dict[str, Any]]
    nodes_created: int
    relationships_created: int


class GraphDriver(Protocol):
    """A connection to one graph (FalkorDB graph key or Neo4j database).

    Drivers raise ``GraphStoreError`` for engine failures, ``WriteConflict``
    when a uniqueness constraint stopped a concurrent duplicate, and
    ``ReadOnlyViolation`` when the engine refused a write in read-only mode.
    """

    name: str

    async def write(self, cypher: str, params: dict[str, Any]) -> WriteOutcome:
        """Run one statement atomically in write mode."""
        ...

    async def write_many(self, writes: Sequence[tuple[str, dict[str, Any]]]) -> list[WriteOutcome | GraphStoreError]:
        """Run several statements in order, each atomically, in as few round trips and durable flushes as the
        engine allows; a statement's failure is its own entry (``GraphStoreError``) and stops none of the others."""
        ...

    async def read(self, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one statement in the engine's read-only mode; rows as plain dicts."""
        ...

    def schema_statements(self) -> list[str]:
        """The idempotent DDL for the store's indexes and constraints."""
        ...

    async def ensure_schema(self) -> None:
        """Run ``schema_statements``; safe to repeat."""
        ...

    async def clear(self) -> None:
        """Delete every node and relationship except token revocations and audit records (indexes stay)."""
        ...

    def for_graph(self, graph_name: str) -> GraphDriver:
        """A driver of another graph on the same engine and connection (one per memory space)."""
        ...

    async def drop(self) -> None:
        """Delete this whole graph (a deleted memory space)."""
        ...

    async def compact(self, timeout: float, poll: float) -> bool:
        """Rewrite the engine's files so the bytes of deleted nodes are gone from disk, and wait for it
        (polling every ``poll`` seconds, at most ``timeout``); False if the engine cannot be made to."""
        ...

    async def close(self) -> None:
        ...
