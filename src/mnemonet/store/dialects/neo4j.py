"""Neo4j 5 dialect: the official async driver over Bolt.

Writes run in managed write transactions (the driver retries transient
failures); reads in READ access mode, where the server refuses writes.
Uniqueness constraints make concurrent MERGEs safe and turn a concurrent
duplicate CREATE into ``WriteConflict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import READ_ACCESS, AsyncGraphDatabase, AsyncManagedTransaction, unit_of_work
from neo4j.exceptions import ClientError, ConstraintError, Neo4jError, ServiceUnavailable, SessionExpired
from neo4j.graph import Node, Path, Relationship

from mnemonet.model.errors import InvalidInput
from mnemonet.store.dialects.base import WriteOutcome
from mnemonet.store.graph_errors import GraphStoreError, GraphUnavailable, ReadOnlyViolation, WriteConflict

_UNIQUE: tuple[tuple[str, str], ...] = (
    ("Concept", "key"), ("Concept", "id"), ("Statement", "id"), ("Observation", "id"),
    ("Source", "key"), ("Source", "id"), ("Predicate", "name"),
)
_INDEXED: tuple[tuple[str, str], ...] = (
    ("Statement", "created_at"), ("Observation", "created_at"), ("Statement", "predicate"),
    ("Observation", "extraction"),
)

SCHEMA: tuple[str, ...] = tuple(
    f"CREATE CONSTRAINT {label.lower()}_{prop}_unique IF NOT EXISTS FOR (n:{label}) REQUIRE n.{prop} IS UNIQUE"
    for label, prop in _UNIQUE
) + tuple(
    f"CREATE INDEX {label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})" for label, prop in _INDEXED
)

# Large graphs are deleted in batches so no transaction outgrows the heap.
# The server cannot be reached (the driver's own retries are spent): a 503 "graph unavailable", not a bug.
_UNREACHABLE = (ServiceUnavailable, SessionExpired, OSError)
# Token revocations, the audit log, forget's tombstones and the registry of spaces stay: erasing memories
# must not bring revoked tokens back, erase the record of who erased them, nor forget the other spaces.
CLEAR = ("MATCH (n) WHERE NOT (n:TokenRevocation OR n:AuditRecord OR n:Tombstone OR n:Space) "
         "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")


def plain(value: Any) -> Any:
    """Driver values to JSON-ready Python: nodes and relationships become dicts."""
    if isinstance(value, Node):
        return {"labels": sorted(value.labels), **{k: plain(v) for k, v in value.items()}}
    if isinstance(value, Relationship):
        return {"type": value.type, **{k: plain(v) for k, v in value.items()}}
    if isinstance(value, Path):
        return {"nodes": [plain(n) for n in value.nodes], "edges": [plain(r) for r in value.relationships]}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class Neo4jDriver:
    """One Neo4j database."""

    name = "neo4j"

    def __init__(self, uri: str, user: str, password: str, database: str, timeout: float = 30.0) -> None:
        # The driver retries a transaction on an unreachable server for 30 s by default: bound it by our timeout.
        self._driver = AsyncGraphDatabase.driver(uri, auth=(user, password), max_transaction_retry_time=timeout,
                                                 connection_timeout=timeout)
        self._where = f"neo4j at {uri}"
        self._database = database
        self._timeout = timeout

    async def write(self, cypher: str, params: dict[str, Any]) -> WriteOutcome:
        # The timeout goes on the transaction function: a managed transaction's run() refuses a Query object
        # (TypeError "Query object is only supported for session.run").
        @unit_of_work(timeout=self._timeout)
        async def work(tx: AsyncManagedTransaction) -> WriteOutcome:
            result = await tx.run(cypher, params)
            rows = [{k: plain(v) for k, v in record.items()} async for record in result]
            counters = (await result.consume()).counters
            return WriteOutcome(rows, counters.nodes_created, counters.relationships_created)

        try:
            async with self._driver.session(database=self._database) as session:
                return await session.execute_write(work)
        except ConstraintError as exc:
            raise WriteConflict(f"neo4j: {exc.message}") from exc
        except Neo4jError as exc:
            raise GraphStoreError(f"neo4j: {exc.message}") from exc
        except _UNREACHABLE as exc:
            raise GraphUnavailable(f"{self._where}: {exc}") from exc

    async def write_many(self, writes: Sequence[tuple[str, dict[str, Any]]]) -> list[WriteOutcome | GraphStoreError]:
        """One write after another, each its own transaction (Neo4j groups commits itself): no shared
        round trip here, the seam is kept so the store runs the same code on both engines."""
        outcomes: list[WriteOutcome | GraphStoreError] = []
        for cypher, params in writes:
            try:
                outcomes.append(await self.write(cypher, params))
            except GraphStoreError as exc:
                outcomes.append(exc)
        return outcomes

    async def read(self, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        @unit_of_work(timeout=self._timeout)
        async def work(tx: AsyncManagedTransaction) -> list[dict[str, Any]]:
            result = await tx.run(cypher, params)
            return [{k: plain(v) for k, v in record.items()} async for record in result]

        try:
            async with self._driver.session(database=self._database, default_access_mode=READ_ACCESS) as session:
                return await session.execute_read(work)
        except ClientError as exc:
            if "AccessMode" in (exc.code or ""):
                raise ReadOnlyViolation("cypher: the engine refused a write in read-only mode "
                    f"({exc.message})") from exc
            raise GraphStoreError(f"neo4j: {exc.message}") from exc
        except Neo4jError as exc:
            raise GraphStoreError(f"neo4j: {exc.message}") from exc
        except _UNREACHABLE as exc:
            raise GraphUnavailable(f"{self._where}: {exc}") from exc

    def schema_statements(self) -> list[str]:
        return list(SCHEMA)

    async def ensure_schema(self) -> None:
        try:
            async with self._driver.session(database=self._database) as session:
                for statement in self.schema_statements():
                    await (await session.run(statement)).consume()
        except Neo4jError as exc:
            raise GraphStoreError(f"neo4j: {exc.message}") from exc
        except _UNREACHABLE as exc:
            raise GraphUnavailable(f"{self._where}: {exc}") from exc

    async def clear(self) -> None:
        try:
            # CALL ... IN TRANSACTIONS needs an auto-commit transaction: session.run.
            async with self._driver.session(database=self._database) as session:
                await (await session.run(CLEAR)).consume()
        except Neo4jError as exc:
            raise GraphStoreError(f"neo4j: {exc.message}") from exc
        except _UNREACHABLE as exc:
            raise GraphUnavailable(f"{self._where}: {exc}") from exc

    def for_graph(self, graph_name: str) -> Neo4jDriver:
        """Spaces other than ``default``: not on Neo4j yet (community edition has one database; one
        database per space needs an edition with ``CREATE DATABASE``, which no build machine runs)."""
        raise InvalidInput(f"space graph {graph_name!r}: memory spaces other than 'default' need the FalkorDB "
                           "backend (Neo4j community edition holds one database)")

    async def drop(self) -> None:
        raise InvalidInput("memory spaces other than 'default' need the FalkorDB backend")

    async def compact(self, timeout: float, poll: float) -> bool:
        # Neo4j reuses the records of deleted nodes in place; no Cypher rewrites its store files
        # (neo4j-admin copy does, offline). Forget's report says so.
        return False

    async def close(self) -> None:
        await self._driver.close()


def emitted_cypher() -> dict[str, str]:
    """Every Cypher text this dialect sends, for linting with Neo4j's own front-end."""
    from mnemonet.store import graph_cypher

    texts = dict(graph_cypher.all_queries())
    texts["clear"] = CLEAR
    texts.update({f"schema{i}": statement for i, statement in enumerate(SCHEMA)})
    return texts
