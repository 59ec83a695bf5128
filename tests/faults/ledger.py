"""The graph as the ledger of the inference workers' work: who marked what, and which claims came of it.

Partition tests read it straight from the graph (through a store node's
service, or a driver of their own), never from the workers' counters: a
reply lost to a partition leaves a counter behind the graph.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mnemonet.agents import InferenceAgent

SOURCE = InferenceAgent.source

_OBSERVATIONS = "MATCH (o:Observation) RETURN o.id AS id"
_MARKS = "MATCH (:Source {name: $source})-[p:PROCESSED]->(o:Observation) RETURN o.id AS id, count(p) AS n"
_CLAIMS = ("MATCH (:Source {name: $source})<-[:ASSERTED_BY]-(s:Statement)-[:DERIVED_FROM]->(o:Observation) "
           "RETURN o.id AS id, count(s) AS n")

Read = Callable[[str, dict[str, Any]], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True)
class Ledger:
    """Every observation; per observation, PROCESSED markers by the inference source and claims it derived."""

    observations: frozenset[str]
    marks: dict[str, int]
    claims: dict[str, int]

    @property
    def pending(self) -> int:
        """Observations the inference source has not marked yet: the backlog."""
        return len(self.observations - set(self.marks))

    def missed_or_repeated(self) -> list[str]:
        """Why this is not exactly-once work, one line per observation (empty when it is)."""
        return [f"{obs}: {self.marks.get(obs, 0)} markers, {self.claims.get(obs, 0)} claims"
                for obs in sorted(self.observations)
                if self.marks.get(obs, 0) != 1 or self.claims.get(obs, 0) != 1]


async def read_ledger(read: Read) -> Ledger:
    """The ledger through ``read(cypher, params)`` (a store's ``graph.read_query`` or a driver's ``read``)."""
    observations = frozenset(r["id"] for r in await read(_OBSERVATIONS, {}))
    marks = {r["id"]: r["n"] for r in await read(_MARKS, {"source": SOURCE})}
    claims = {r["id"]: r["n"] for r in await read(_CLAIMS, {"source": SOURCE})}
    return Ledger(observations, marks, claims)


def observation_text(i: int) -> str:
    """An observation the offline model turns into exactly one claim."""
    return f"Person{i} works at Company{i}."
