"""Hybrid search over the vector index, graph re-ranking, and read-time resolution.

``search`` ranks graph items for a query: k-NN and full-text lists fused by
reciprocal rank fusion. In ``hybrid+graph`` mode ``FittedRanker`` instead
takes both lists unfused, adds the candidates' session windows and concept
neighbours, and scores them all with its fitted model (``search_ranking``
'rules': ``GraphRanker``'s bonuses on the fused list, as before). Finally
superseded statements (and superseded summaries) and retracted items drop out
and contradicted ones are flagged.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Literal

from mnemonet.embed.base import Embedder
from mnemonet.model.errors import InvalidInput
from mnemonet.model.views import SearchHit, StatementView
from mnemonet.service.fitted_rank import FittedRanker, Origins, Pool, named_sources, without_names
from mnemonet.service.graph_rank import Candidate, GraphRanker, Ranking
from mnemonet.service.priors import with_priors
from mnemonet.settings import Settings
from mnemonet.store import vector_usage
from mnemonet.store.graph import GraphStore
from mnemonet.store.vector_types import VectorHit, check_kinds, check_since
from mnemonet.store.vectors import VectorStore

SearchMode = Literal["keyword", "vector", "hybrid", "hybrid+graph"]
SEARCH_MODES: tuple[SearchMode, ...] = ("keyword", "vector", "hybrid", "hybrid+graph")


class Retriever:
    """Turns a query into ranked, explained hits over the graph's embedded items."""

    def __init__(
        self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, settings: Settings,
        caught_up: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.graph = graph
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings
        self.ranker = GraphRanker(graph, vectors, settings)
        self.fitted = FittedRanker(graph, vectors, settings)
        # Waits for the rows of writes acknowledged before a search (VectorIndexer.caught_up).
        self._caught_up = caught_up

    async def search(
        self,
        query: str,
        k: int = 10,
        kinds: Sequence[str] | None = None,
        since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        """Up to ``k`` hits, best first, each saying why it matched (ranks, graph path, flags)."""
        max_k = self.settings.search_max_k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
            raise InvalidInput(f"k: must be an integer between 1 and {max_k}")
        if mode not in SEARCH_MODES:
            raise InvalidInput(f"mode: must be one of {', '.join(SEARCH_MODES)}")
        kinds_list, since = check_kinds(kinds), check_since(since)
        # The wait for the writes acknowledged before (with the shared queue, a read of it) holds back every
        # read of the stores, not the query's embedding: the fitted ranking embeds meanwhile.
        settled = asyncio.ensure_future(self._caught_up()) if self._caught_up is not None else None
        try:
            return await self._search(query, k, kinds_list, since, mode, settled)
        finally:
            if settled is not None and not settled.done():
                settled.cancel()
            elif settled is not None and not settled.cancelled():
                settled.exception()  # one error is reported (the search's); this one is retrieved, not lost

    async def _search(
        self, query: str, k: int, kinds_list: list[str] | None, since: int | None, mode: SearchMode,
        settled: asyncio.Future[None] | None,
    ) -> list[SearchHit]:
        # The same candidate pool whatever k is, so a smaller k returns a prefix of a larger one.
        pool = min(max(k, self.settings.search_candidates), self.settings.vector_max_k)
        if mode == "hybrid+graph" and self.settings.search_ranking != "rules":
            ranking = await self._fitted(query, pool, kinds_list, since, settled)
            hits = await self._resolve([ranking.hits, ranking.folded], k)
            return _normalise(hits[:k])
        if settled is not None:
            await settled
        if mode == "keyword":
            raw = await self.vectors.keyword(query, pool, kinds_list, since)
        elif mode == "vector":
            raw = await self.vectors.knn(await self._embed_query(query), pool, kinds_list, since)
        else:
            # An embedder that takes every core of this machine is waited for: overlapping it with PostgreSQL's
            # work made both slower (bench/README.md). Another (remote, or a query on one thread) is not: keyword
            # search runs meanwhile.
            embed = partial(self._embed_query, query)
            raw = await self.vectors.hybrid(
                query, await embed() if self.embedder.query_takes_all_cores else embed, pool, kinds_list, since
            )
            raw = await self._with_priors(raw)
        if mode == "hybrid+graph" and raw:
            candidates = [Candidate.of(_to_hit(h, mode), h) for h in raw]
            ranking = await self.ranker.rank(query, candidates, kinds_list, since)
            # Folded statements are redundant beside their observation: they follow every other hit.
            hits = await self._resolve([ranking.hits, ranking.folded], k)
        else:
            hits = await self._resolve([[_to_hit(h, mode) for h in raw]], k)
        return _normalise(hits[:k])

    async def _fitted(
        self, query: str, pool: int, kinds: list[str] | None, since: int | None, settled: asyncio.Future[None] | None
    ) -> Ranking:
        """Both lists, each ``hybrid_candidate_factor`` times ``pool`` long, ranked by ``FittedRanker``."""
        n = min(pool * self.settings.hybrid_candidate_factor, self.settings.vector_max_k)
        return self.fitted.rank(await self.candidate_pool(query, n, kinds, since, settled))

    async def candidate_pool(
        self, query: str, per_list: int, kinds: list[str] | None = None, since: int | None = None,
        settled: asyncio.Future[None] | None = None,
    ) -> Pool:
        """The fitted ranking's candidates with their features, the k-NN and keyword lists ``per_list`` long
        (what hybrid+graph search ranks; the bench measures and fits on it). The stores are read once
        ``settled`` (if any) is done; the query is embedded meanwhile."""
        # The keyword list's statements are looked up for folding as soon as it is read, beside the embedding
        # or the k-NN search (bench/README.md "Search latency, round 14").
        if self.embedder.query_takes_all_cores:  # as in hybrid: such an embedder first, another beside keyword
            vector = await self._embed_query(query)
            dense, (lexical, origins) = await asyncio.gather(
                self._settled_then(settled, self.vectors.knn, vector, per_list, kinds, since),
                self._keyword_then_origins(query, per_list, kinds, since, settled))
        else:
            (vector, dense), (lexical, origins) = await asyncio.gather(
                self._embed_then_knn(query, per_list, kinds, since, settled),
                self._keyword_then_origins(query, per_list, kinds, since, settled))
        return await self.fitted.pool(query, vector, dense, lexical, kinds, since, origins,
                                      await self._unnamed(query, [*dense, *lexical]))

    async def _unnamed(self, query: str, hits: list[VectorHit]) -> list[float] | None:
        """The query without the sources it names (found among ``hits``), embedded; None when it names none
        (``search_unnamed_query``; fitted_rank.without_names says why)."""
        if not self.settings.search_unnamed_query:
            return None
        stripped = without_names(query, named_sources(query, hits))
        return None if stripped is None else await self._embed_query(stripped)

    @staticmethod
    async def _settled_then(
        settled: asyncio.Future[None] | None, read: Callable[..., Awaitable[list[VectorHit]]], *args: Any
    ) -> list[VectorHit]:
        if settled is not None:
            await settled
        return await read(*args)

    async def _keyword_then_origins(
        self, query: str, n: int, kinds: list[str] | None, since: int | None, settled: asyncio.Future[None] | None
    ) -> tuple[list[VectorHit], Origins]:
        lexical = await self._settled_then(settled, self.vectors.keyword, query, n, kinds, since)
        folds = kinds is None or "observation" in kinds  # as FittedRanker.pool: statements fold into observations
        return lexical, await self.fitted.origins(lexical) if folds else {}

    async def _embed_then_knn(
        self, query: str, n: int, kinds: list[str] | None, since: int | None, settled: asyncio.Future[None] | None
    ) -> tuple[list[float], list[VectorHit]]:
        vector = await self._embed_query(query)
        return vector, await self._settled_then(settled, self.vectors.knn, vector, n, kinds, since)

    async def _with_priors(self, raw: list[VectorHit]) -> list[VectorHit]:
        """Recency and use fused in as two more ranked lists, when their settings weigh them (priors.py)."""
        s = self.settings
        if s.search_recency_weight <= 0 and s.search_use_weight <= 0:
            return raw
        uses = await vector_usage.uses_of(self.vectors, [h.id for h in raw]) if s.search_use_weight > 0 else {}
        return with_priors(raw, uses, s.search_recency_weight, s.search_use_weight, s.rrf_k)

    async def _embed_query(self, query: str) -> list[float]:
        [vector] = await self.embedder.embed([query], kind="query")
        return vector

    async def _resolve(self, tiers: list[Sequence[SearchHit]], k: int) -> list[SearchHit]:
        """At least the first ``k`` hits (fewer if there are not), superseded statements dropped, contradicted flagged.

        Tiers (each best first) stay in order; confidence and recency break ties within one.
        Statements are read from the graph only as far down as ``k`` kept hits reach (and the
        hits a tie-breaker could lift above the last of them): usually one read of about ``k``
        statements, and none when the top hits are observations.
        """
        now = time.time() * 1000
        out: list[SearchHit] = []
        for tier in tiers:
            kept: list[SearchHit] = []
            rest = tier
            while rest and (need := k - len(out) - len(kept)) > 0:
                while need < len(rest) and rest[need].score * _MAX_TIE_BREAKER >= rest[need - 1].score:
                    need += 1
                take, rest = rest[:need], rest[need:]
                ids = [h.id for h in take if h.kind in ("statement", "summary")]
                observed = [h.id for h in take if h.kind == "observation"]
                # Two independent reads: one round trip's wait when the hits mix statements and observations.
                statement_views, retractions = await asyncio.gather(
                    self.graph.get_statements(ids) if ids else _nothing(),
                    self.graph.retractions_of(observed) if observed else _nothing(),
                )
                views = {v.id: v for v in statement_views}
                retracted = {r.target_id for r in retractions}
                for h in take:
                    view = views.get(h.id)
                    if view is None:
                        if h.id not in retracted:
                            kept.append(h)
                    elif not view.superseded_by and not view.withdrawn:
                        flags = ["contradicted"] if view.contradicted_by else []
                        kept.append(h.model_copy(update={"flags": flags, "score": h.score * _tie_breaker(view, now)}))
            out += sorted(kept, key=lambda h: h.score, reverse=True)
        return out


async def _nothing() -> list[Any]:
    return []


# The largest factor _tie_breaker gives: a hit below another by more than this stays below it.
_MAX_TIE_BREAKER = 1.0 + 1e-4 + 1e-5


def _tie_breaker(view: StatementView, now: float) -> float:
    """A factor just above 1, far smaller than one rank step (RRF ranks 50 and 51 differ by 0.9%).

    Confidence first, then recency (days); relative, so it scales with any mode's scores.
    """
    age_days = max(0.0, (now - view.created_at) / 86_400_000)
    return 1.0 + 1e-4 * view.confidence + 1e-5 / (1.0 + age_days)


def _to_hit(hit: VectorHit, mode: str) -> SearchHit:
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
