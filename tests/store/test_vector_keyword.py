"""Keyword candidates: rows matching one common word alone are not ranked; the ranked rows are capped."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mnemonet.settings import Settings
from mnemonet.store.vector_types import VectorItem
from mnemonet.store.vectors import VectorStore

# "harbour" is in 8 rows and "violin" in 7: common at keyword_common_rows=3. "quartz" is in 2.
TEXTS = {
    "r0": "harbour",
    "r1": "harbour quartz",
    **{f"r{i}": "harbour violin" for i in range(2, 8)},
    "r8": "quartz violin",
    "r9": "violin",
    "r10": "harbour harbour",  # the best match for "harbour" alone, written last
}
QUERY = "the quartz harbour violin"


Open = Callable[..., Awaitable[VectorStore]]


@pytest.fixture
async def open_store(postgres_url: str, unique_name: str) -> AsyncIterator[Open]:
    """Opens the test's table (written on first use) with the keyword settings given."""
    opened: list[VectorStore] = []

    async def open_with(**settings: Any) -> VectorStore:
        store = await VectorStore.open(Settings(database_url=postgres_url, **settings), schema=unique_name)
        opened.append(store)
        if len(opened) == 1:
            await store.upsert([
                VectorItem(id=i, kind="observation", text=t, model="tiny", vector=[1.0, 0.5], created_at=n)
                for n, (i, t) in enumerate(TEXTS.items())
            ])
        return store

    yield open_with
    for store in opened:
        await store.close()


async def test_quoted_lexemes_select_their_rows(open_store: Open) -> None:
    store = await open_store(keyword_common_rows=3)
    await store.upsert([
        VectorItem(id="q1", kind="observation", text="o'neil back\\slash", model="tiny", vector=[1.0, 0.5],
                   created_at=20),
    ])
    assert [h.id for h in await store.keyword("o'neil", 5)] == ["q1"]
    assert [h.id for h in await store.keyword("back\\slash", 5)] == ["q1"]


async def test_rows_matching_one_common_word_alone_are_not_ranked(open_store: Open) -> None:
    full, bounded = await open_store(keyword_common_rows=0), await open_store(keyword_common_rows=3)
    everything = {h.id for h in await full.keyword(QUERY, 20)}
    assert everything == set(TEXTS)
    hits = await bounded.keyword(QUERY, 20)
    assert {h.id for h in hits} == everything - {"r0", "r9", "r10"}
    # The rows ranked keep their order: the same scores, the same ties by id.
    kept = {h.id for h in hits}
    assert [h.id for h in hits] == [h.id for h in await full.keyword(QUERY, 20) if h.id in kept]
    assert (await bounded.keyword("harbour", 3))[0].id == "r10", "a common word alone still finds its rows"
    assert {h.id for h in await bounded.keyword("harbour violin", 20)} == {f"r{i}" for i in range(2, 8)}, \
        "two common words select the rows holding both"


async def test_ranked_rows_are_capped_but_k_hits_still_come_back(open_store: Open) -> None:
    full, capped = await open_store(keyword_common_rows=0), await open_store(keyword_max_candidates=3)
    assert (await full.keyword("harbour", 1))[0].id == "r10"
    # Bitmap scans find rows in table order, so the cap leaves out r10, the best match, written last.
    assert (await capped.keyword("harbour", 1))[0].id != "r10"
    assert len(await capped.keyword("harbour", 8)) == 8, "at least k rows are ranked"


async def test_pairs_of_common_words_are_read_heaviest_first(open_store: Open) -> None:
    # At keyword_common_rows=3 all three words are common: "appl" is in 6 rows, "banana" in 5,
    # "cherri" in 4, so banana+cherry weighs most and apple+banana least.
    full, bounded = await open_store(keyword_common_rows=0), await open_store(keyword_common_rows=3,
                                                                             keyword_pair_rows=2)
    texts = {
        **{f"a{i}": "apple banana" for i in range(3)}, "a3": "apple",
        **{f"b{i}": "apple cherry" for i in range(2)},
        **{f"c{i}": "banana cherry" for i in range(2)},
    }
    await full.upsert([VectorItem(id=i, kind="observation", text=t, model="tiny", vector=[1.0, 0.5], created_at=30 + n)
                       for n, (i, t) in enumerate(texts.items())])
    query = "apple, banana or cherry?"
    assert [h.id for h in await full.keyword(query, 4)] == ["c0", "c1", "b0", "b1"]
    # Two rows read: the heaviest pair's. Rows are written apple+banana first, so reading
    # the pairs in any other order would fill the two with them.
    assert [h.id for h in await bounded.keyword(query, 2)] == ["c0", "c1"]
    # At least k rows are read: the next pair's follow.
    assert [h.id for h in await bounded.keyword(query, 4)] == ["c0", "c1", "b0", "b1"]
