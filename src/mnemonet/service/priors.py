"""Recency and use as two more ranked lists of hybrid search's reciprocal rank fusion (both off by default).

The fused candidates (k-NN and keyword) are ranked again newest first, and by
how many earlier searches returned them; each such list adds
``weight / (rrf_k + rank)`` to a candidate's score, as the k-NN and keyword
lists did (weight 1 = as strong as one of them). Rank-based, so no time scale
or count scale to tune: among candidates that match about as well, the newer
or the more used comes first; a candidate that matches much worse is not
lifted over one that matches much better.

Measured on LoCoMo (bench/retrieval_locomo.py, bench/README.md): recency
lowered recall there and use did not raise it, so both default to 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from mnemonet.store.vector_types import VectorHit, tie_order


def with_priors(
    hits: list[VectorHit], uses: Mapping[str, tuple[int, int]], recency_weight: float, use_weight: float,
    rrf_k: int,
) -> list[VectorHit]:
    """``hits`` (fused, best first) re-scored with the recency and use lists and re-sorted.

    ``uses`` maps an id to (searches that returned it, when last, Unix ms); an id never
    returned is in no use list (it gets no use bonus, rather than the last rank's).
    """
    if not hits or (recency_weight <= 0 and use_weight <= 0):
        return hits
    bonus = dict.fromkeys((h.id for h in hits), 0.0)
    if recency_weight > 0:
        newest = sorted(hits, key=lambda h: (-h.created_at, *_order(h)))
        for rank, hit in enumerate(newest, 1):
            bonus[hit.id] += recency_weight / (rrf_k + rank)
    if use_weight > 0:
        used = sorted((h for h in hits if uses.get(h.id, (0, 0))[0] > 0),
                      key=lambda h: (-uses[h.id][0], -uses[h.id][1], *_order(h)))
        for rank, hit in enumerate(used, 1):
            bonus[hit.id] += use_weight / (rrf_k + rank)
    rescored = [replace(h, score=h.score + bonus[h.id]) for h in hits]
    return sorted(rescored, key=lambda h: (-h.score, *_order(h)))


def _order(hit: VectorHit) -> tuple[object, ...]:
    return tie_order(hit.vector_rank, hit.keyword_rank, hit.created_at, hit.id)
