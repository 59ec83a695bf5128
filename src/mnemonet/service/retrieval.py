"""Hybrid search over the vector index, one hop of graph expansion, and read-time resolution.

``search`` ranks graph items for a query: k-NN and full-text lists fused by
reciprocal rank fusion, then items one hop away in the graph from the top
hits (statements sharing a concept with them) join at a discounted score,
then superseded statements drop out and contradicted ones are flagged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Literal

from mnemonet.embed.base import Embedder
from mnemonet.model.views import SearchHit, StatementView
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.vector_types import VectorHit
from mnemonet.store.vectors import VectorStore

SearchMode = Literal["keyword", "vector", "hybrid", "hybrid+graph"]
SEARCH_MODES: tuple[str, ...] = ("keyword", "vector", "hybrid", "hybrid+graph")
MAX_K = 100

# How far an expanded neighbour's score sits below the hit it was reached from.
EXPANSION_DISCOUNT = 0.5
# Top hits whose graph neighbourhood is expanded.
EXPANSION_SEEDS = 5


class Retriever:
    """Turns a query into ranked, explained hits over the graph's embedded items."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, settings: Settings) -> None:
        self.graph = graph
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings

    async def search(
        self,
        query: str,
        k: int = 10,
        kinds: Sequence[str] | None = None,
        since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        """Up to ``k`` hits, best first, each saying why it matched."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k: must be an integer between 1 and {MAX_K}")
        if mode not in SEARCH_MODES:
            raise ValueError(f"mode: must be one of {', '.join(SEARCH_MODES)}")
        pool = k * 2
        kinds_list = list(kinds) if kinds is not None else None
        if mode == "keyword":
            raw = await self.vectors.keyword(query, pool, kinds_list, since)
        else:
            [qvec] = await self.embedder.embed([query], kind="query")
            if mode == "vector":
                raw = await self.vectors.knn(qvec, pool, kinds_list, since)
            else:
                raw = await self.vectors.hybrid(query, qvec, pool, kinds_list, since)
        hits = [_to_hit(h, rank, mode) for rank, h in enumerate(raw, start=1)]
        if mode == "hybrid+graph" and hits:
            hits = await self._expand(hits, kinds_list, since)
        hits = await self._resolve(hits)
        return _normalise(hits[:k])

    async def _expand(self, hits: list[SearchHit], kinds: list[str] | None, since: int | None) -> list[SearchHit]:
        """Add statements one hop away (sharing a concept) from the top statement hits."""
        if kinds is not None and "statement" not in kinds:
            return hits
        seen = {h.id for h in hits}
        seeds = [h for h in hits if h.kind == "statement"][:EXPANSION_SEEDS]
        if not seeds:
            return hits
        seed_views = {s.id: s for s in await self.graph.get_statements([h.id for h in seeds])}
        extra: list[SearchHit] = []
        for seed in seeds:
            view = seed_views.get(seed.id)
            if view is None:
                continue
            for neighbour in await self.graph.statements_about(view.subject, limit=10):
                if neighbour.id in seen or (since is not None and neighbour.created_at < since):
                    continue
                seen.add(neighbour.id)
                extra.append(
                    SearchHit(
                        id=neighbour.id, kind="statement", text=neighbour.sentence(),
                        score=seed.score * EXPANSION_DISCOUNT,
                        graph_path=f"{seed.id} -ABOUT_SUBJECT-> ({view.subject}) <-ABOUT_SUBJECT- {neighbour.id}",
                    )
                )
        return sorted(hits + extra, key=lambda h: h.score, reverse=True)

    async def _resolve(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Drop superseded statements; flag contradicted ones; confidence and recency break ties."""
        statement_ids = [h.id for h in hits if h.kind == "statement"]
        if not statement_ids:
            return hits
        views = {v.id: v for v in await self.graph.get_statements(statement_ids)}
        now = time.time() * 1000
        kept: list[SearchHit] = []
        for h in hits:
            view = views.get(h.id)
            if view is None:
                kept.append(h)
                continue
            if view.superseded_by:
                continue
            flags = ["contradicted"] if view.contradicted_by else []
            kept.append(h.model_copy(update={"flags": flags, "score": h.score + _tie_breaker(view, now)}))
        return sorted(kept, key=lambda h: h.score, reverse=True)


def _tie_breaker(view: StatementView, now: float) -> float:
    """A nudge far smaller than one rank step: confidence first, then recency (days)."""
    age_days = max(0.0, (now - view.created_at) / 86_400_000)
    return 1e-4 * view.confidence + 1e-5 / (1.0 + age_days)


def _to_hit(hit: VectorHit, rank: int, mode: str) -> SearchHit:
    return SearchHit(
        id=hit.id, kind=hit.kind, text=hit.text, score=float(hit.score),
        vector_rank=hit.vector_rank if mode != "keyword" else None,
        keyword_rank=hit.keyword_rank if mode != "vector" else None,
    )


def _normalise(hits: list[SearchHit]) -> list[SearchHit]:
    """Scores scaled to (0, 1], the best hit at 1, so callers can compare across queries."""
    if not hits:
        return hits
    top = max(h.score for h in hits)
    if top <= 0 or math.isnan(top):
        return hits
    return [h.model_copy(update={"score": round(h.score / top, 6)}) for h in hits]
