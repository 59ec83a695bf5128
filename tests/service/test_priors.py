"""Recency and use as ranked lists of the fusion: the pure re-scoring, then on the real store."""

from __future__ import annotations

from mnemonet.service import MemoryService
from mnemonet.service.priors import with_priors
from mnemonet.service.retrieval import Retriever
from mnemonet.store import vector_usage
from mnemonet.store.vector_types import VectorHit

RRF_K = 10


def hit(item_id: str, score: float, created_at: int) -> VectorHit:
    return VectorHit(id=item_id, kind="observation", text=item_id, score=score, vector_rank=None,
                     keyword_rank=None, created_at=created_at, metadata={})


def test_both_weights_off_leave_the_fusion_as_it_was() -> None:
    hits = [hit("a", 0.2, 1), hit("b", 0.1, 3)]
    assert with_priors(hits, {"b": (9, 5)}, 0.0, 0.0, RRF_K) is hits


def test_recency_lifts_the_newer_of_close_matches_but_not_over_a_much_better_one() -> None:
    close = [hit("old", 0.0909, 1), hit("new", 0.0900, 2)]
    assert [h.id for h in with_priors(close, {}, 1.0, 0.0, RRF_K)] == ["new", "old"]
    # A candidate first in both lists (2/11) stays above a newer one found in one list at rank 5 (1/15).
    far = [hit("best", 2 / (RRF_K + 1), 1), hit("newest", 1 / (RRF_K + 5), 2)]
    ranked = with_priors(far, {}, 1.0, 0.0, RRF_K)
    assert [h.id for h in ranked] == ["best", "newest"]
    assert ranked[1].score == 1 / (RRF_K + 5) + 1 / (RRF_K + 1)  # newest: rank 1 of the recency list


def test_use_lifts_the_more_used_and_never_used_items_get_no_bonus() -> None:
    hits = [hit("a", 0.10, 1), hit("b", 0.09, 1), hit("c", 0.085, 1)]
    ranked = with_priors(hits, {"c": (5, 10), "b": (2, 20)}, 0.0, 1.0, RRF_K)
    assert [h.id for h in ranked] == ["c", "b", "a"]
    assert ranked[2].score == 0.10  # "a" was never returned: in no use list


async def test_the_weights_are_settings_of_hybrid_search_on_the_real_store(service: MemoryService) -> None:
    older = await service.observe("the staging database password rotates every monday", source="ops")
    newer = await service.observe("the staging database password rotates every friday", source="ops")
    query = "when does the staging database password rotate?"

    def retriever(**weights: float) -> Retriever:
        return Retriever(service.graph, service.vectors, service.embedder,
                         service.settings.model_copy(update=weights), caught_up=service.indexer.caught_up)

    async def first(r: Retriever) -> str:
        return (await r.search(query, k=2, kinds=["observation"], mode="hybrid"))[0].id

    [top, _] = await retriever().search(query, k=2, kinds=["observation"], mode="hybrid")
    assert (top.id, top.vector_rank, top.keyword_rank) == (older.observation_id, 1, 1)
    # First in both lists, the older one leads by 2/11 - 2/12: recency at weight 1 (+1/11 - 1/12) keeps it
    # there; at weight 3 the newer one leads.
    assert await first(retriever(search_recency_weight=1.0)) == older.observation_id
    assert await first(retriever(search_recency_weight=3.0)) == newer.observation_id
    await vector_usage.add_uses(service.vectors, {older.observation_id: 3}, 1)
    assert await first(retriever(search_recency_weight=3.0, search_use_weight=2.0)) == older.observation_id
