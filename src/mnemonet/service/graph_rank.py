"""The graph half of hybrid+graph search: re-rank fused hits with what the graph and the session know.

Four steps, each a named setting (0 turns it off), measured one by one in
``bench/retrieval_locomo.py``:

1. lifting: a statement extracted from an observation (same write, so the
   same ``created_at``) adds its score to that observation and folds into it:
   a turn found through its own statements ranks as one hit, and the folded
   statements, redundant beside it, follow every other hit;
2. speaker match: hits whose source is named in the query weigh more;
3. adjacent turns: the observations just before and after a top observation
   in the same session join (conversations answer across turns);
4. shared concepts: observations and statements sharing a non-hub concept
   with a top hit join.

Reached items join at a discount of the score of the hit they were reached
from; an item reached that was already a hit adds the same bonus.

Steps 3 and 4 read PostgreSQL and the graph concurrently. No step reads a
statement's full view: resolution reads those of the few hits it returns.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mnemonet.model.views import SearchHit
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.vector_context import session_neighbours
from mnemonet.store.vector_types import VectorHit, tie_order
from mnemonet.store.vectors import VectorStore

_WORD = re.compile(r"\w+")


@dataclass
class Candidate:
    """A hit being ranked: its score so far, and what speaker matching and filters need."""

    hit: SearchHit
    score: float
    source: str | None
    created_at: int

    @classmethod
    def of(cls, hit: SearchHit, row: VectorHit) -> Candidate:
        return cls(hit, hit.score, _source(row.metadata), row.created_at)


@dataclass
class Ranking:
    """``GraphRanker.rank``'s result: hits and folded statements, each best first."""

    hits: Sequence[SearchHit]
    folded: Sequence[SearchHit]


@dataclass
class _Reached:
    """Items one expansion step reached, before their bonuses are added: (seed id, item row, path)."""

    rows: list[tuple[str, VectorHit, str]] = field(default_factory=list)


class GraphRanker:
    """Applies the four steps of the module docstring to a fused candidate list."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, settings: Settings) -> None:
        self.graph = graph
        self.vectors = vectors
        self.settings = settings

    async def rank(
        self, query: str, candidates: list[Candidate], kinds: Sequence[str] | None, since: int | None
    ) -> Ranking:
        """Hits and folded statements, each best first.

        Scores are not normalised yet; graph paths are set where the graph added a hit.
        """
        s = self.settings
        pool = {c.hit.id: c for c in candidates}
        folded: list[Candidate] = []
        observations_allowed = kinds is None or "observation" in kinds
        if observations_allowed and s.search_lift_weight > 0:
            folded = await self._lift(pool)
        named = set(_WORD.findall(query.lower()))

        def weight(c: Candidate) -> float:
            spoken = c.source is not None and set(_WORD.findall(c.source.lower())) <= named
            return c.score * (1.0 + s.search_source_boost) if spoken else c.score

        seeds = sorted(pool.values(), key=weight, reverse=True)[: s.search_expansion_seeds]
        seed_weight = {c.hit.id: weight(c) for c in seeds}
        # A folded statement reached again would only repeat its observation.
        skip = {c.hit.id for c in folded}
        adjacent, shared = await asyncio.gather(
            self._adjacent(seeds, since) if observations_allowed and s.search_adjacent_turns > 0 else _nothing(),
            self._shared_concepts(seeds, kinds, since, skip)
            if s.search_concept_expansion > 0 else _nothing(),
        )
        # Adjacent turns first, then shared concepts: an item both reach is explained by its adjacency.
        for step, discount in ((adjacent, s.search_adjacent_discount), (shared, s.search_concept_discount)):
            for seed_id, row, path in step.rows:
                self._reach(pool, row, seed_weight[seed_id] * discount, path)
        return Ranking(_ordered(pool.values(), weight), _ordered(folded, weight))

    async def _lift(self, pool: dict[str, Candidate]) -> list[Candidate]:
        """Fold extracted statements into their observations; returns the folded statements."""
        statement_hits = [c for c in pool.values() if c.hit.kind == "statement"]
        if not statement_hits:
            return []
        origins = await self.graph.extracted_from([c.hit.id for c in statement_hits])
        folded: list[Candidate] = []
        for c in statement_hits:
            # Only a statement of the observation's own extraction folds; later claims stay hits.
            obs = origins.get(c.hit.id)
            if obs is None:
                continue
            target = pool.get(obs.id)
            if target is None:
                hit = SearchHit(
                    id=obs.id, kind="observation", text=obs.text, score=0.0,
                    graph_path=f"{c.hit.id} -DERIVED_FROM-> {obs.id}",
                )
                target = pool[obs.id] = Candidate(hit, 0.0, obs.source, obs.created_at)
            target.score += self.settings.search_lift_weight * c.score
            del pool[c.hit.id]
            c.hit = c.hit.model_copy(update={"graph_path": f"{c.hit.id} -DERIVED_FROM-> {obs.id}"})
            folded.append(c)
        return folded

    async def _adjacent(self, seeds: list[Candidate], since: int | None) -> _Reached:
        s = self.settings
        ids = [c.hit.id for c in seeds if c.hit.kind == "observation"]
        pairs = await session_neighbours(
            self.vectors, ids, s.search_session_key, s.search_adjacent_turns, int(s.search_session_span * 1000)
        )
        return _Reached([
            (seed_id, row, f"{seed_id} -NEXT_IN_SESSION- {row.id}")
            for seed_id, row in pairs if since is None or row.created_at >= since
        ])

    async def _shared_concepts(
        self, seeds: list[Candidate], kinds: Sequence[str] | None, since: int | None, skip: set[str]
    ) -> _Reached:
        """Items sharing a concept with a seed (text, time and source from their vector rows)."""
        s = self.settings
        rows = await self.graph.shared_concept_neighbours(
            [c.hit.id for c in seeds], s.search_hub_degree, s.search_concept_expansion, s.search_seed_concepts
        )
        rows = [r for r in rows if (kinds is None or r["kind"] in kinds) and r["id"] not in skip]
        if not rows:
            return _Reached()
        items = {v.id: v for v in await self.vectors.get(sorted({r["id"] for r in rows}))}
        reached = _Reached()
        for r in rows:
            item = items.get(r["id"])
            if item is None or (since is not None and item.created_at < since):
                continue
            row = VectorHit(
                id=item.id, kind=item.kind, text=item.text, score=0.0, vector_rank=None, keyword_rank=None,
                created_at=item.created_at, metadata=item.metadata,
            )
            rel = "MENTIONS" if r["kind"] == "observation" else "ABOUT"
            reached.rows.append((r["seed"], row, f"{r['seed']} -> ({r['concept']}) <-{rel}- {r['id']}"))
        return reached

    @staticmethod
    def _reach(pool: dict[str, Candidate], row: VectorHit, bonus: float, path: str) -> None:
        """Add ``bonus`` to an item reached through the graph (joining it if new); its first path explains it."""
        target = pool.get(row.id)
        if target is None:
            hit = SearchHit(id=row.id, kind=row.kind, text=row.text, score=0.0, graph_path=path)
            target = pool[row.id] = Candidate.of(hit, row)
        elif target.hit.graph_path is None:
            target.hit = target.hit.model_copy(update={"graph_path": path})
        target.score += bonus


async def _nothing() -> _Reached:
    return _Reached()


def _ordered(candidates: Iterable[Candidate], weight: Callable[[Candidate], float]) -> list[SearchHit]:
    ranked = sorted(candidates, key=lambda c: (-weight(c), *tie_order(
        c.hit.vector_rank, c.hit.keyword_rank, c.created_at, c.hit.id)))
    return [c.hit.model_copy(update={"score": weight(c)}) for c in ranked]


def _source(metadata: dict[str, object] | None) -> str | None:
    value = (metadata or {}).get("source")
    return value if isinstance(value, str) and value else None
