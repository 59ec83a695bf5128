"""Equal fused scores are ordered by what matched, never by id: the same memory ranks alike in any space."""

from __future__ import annotations

from mnemonet.store.vector_types import VectorHit
from mnemonet.store.vectors import fuse


def hit(item_id: str, created_at: int = 0) -> VectorHit:
    return VectorHit(id=item_id, kind="observation", text=item_id, score=0.0, vector_rank=None, keyword_rank=None,
                     created_at=created_at, metadata={})


def test_a_tie_goes_to_the_better_dense_rank_whatever_the_ids() -> None:
    for first, second in (("obs-zzz", "obs-aaa"), ("obs-aaa", "obs-zzz")):
        # dense ranks 1 and 2, keyword ranks 2 and 1: the same fused score
        fused = fuse([hit(first), hit(second)], [hit(second), hit(first)], k=2, rrf_k=60)
        assert fused[0].score == fused[1].score
        assert [h.id for h in fused] == [first, second]


def test_a_dense_only_hit_ties_ahead_of_a_keyword_only_hit() -> None:
    fused = fuse([hit("obs-b")], [hit("obs-a")], k=2, rrf_k=60)
    assert fused[0].score == fused[1].score
    assert [h.id for h in fused] == ["obs-b", "obs-a"]
