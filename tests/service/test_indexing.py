"""What the vector index holds for observations: contextual embeddings of conversation turns (real databases)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np
import pytest

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.service import MemoryService
from mnemonet.service.indexing import IndexEntry, VectorIndexer
from mnemonet.store.vector_types import contextual_vector

QUESTION = "What did you have at the dinner with your mother last night?"
REPLY = "Lots of salads, sandwiches and a banana split sundae, my favourite."


async def _all_kept(ids: list[str]) -> set[str]:
    """An indexer of the test's own indexes items it made up, not the graph's: none of them is erased."""
    return set(ids)


def _indexer(service: MemoryService, embedder: Embedder, **settings: object) -> VectorIndexer:
    return VectorIndexer(service.vectors, embedder, service.settings.model_copy(update=settings),
                         present=_all_kept, lock=asyncio.Lock())


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_a_reply_is_embedded_with_the_turn_it_answers(service: MemoryService) -> None:
    asked = await service.observe(QUESTION, source="john", metadata={"session": "chat-1"})
    await service.observe("Unrelated: the printer is jammed.", source="ops", metadata={"session": "chat-2"})
    replied = await service.observe(REPLY, source="maria", metadata={"session": "chat-1"})
    await service.indexer.drained()  # indexed behind the writes (index_in_background), often in one call
    [first, reply] = await service.vectors.get([asked.observation_id, replied.observation_id])
    assert first.context == "", "the first turn of a session has nothing before it"
    assert reply.context == f"john: {QUESTION}", "the previous turn of its own session, not the latest write"
    assert reply.text == f"maria: {REPLY}" and reply.vector is not None
    [alone, context] = await service.embedder.embed([reply.text, reply.context])
    contextual = contextual_vector(alone, context, len(reply.text), len(reply.context))
    assert _cosine(reply.vector, contextual) > 0.999
    # The reply names no dinner or mother; with the question in its vector, the question finds it better.
    [query] = await service.embedder.embed(["What food was at the dinner with her mother?"], kind="query")
    assert _cosine(query, reply.vector) > _cosine(query, alone) + 0.02
    # Only the vector sees the context: keyword search and hits show the turn's own text.
    keyword = await service.vectors.keyword("dinner mother", 5)
    assert [h.id for h in keyword] == [asked.observation_id]


async def test_context_is_the_end_of_the_turns_before_and_can_be_off(service: MemoryService) -> None:
    for text in ("first turn about ferries", "second turn about trains"):
        await service.observe(text, source="ann", metadata={"session": "s"})
    await service.indexer.drained()
    now = int(time.time() * 1000) + 1  # each variant of the third turn is recorded at the same time, after both

    async def index_with(n: int, **settings: object) -> str:
        """Index a third turn of the session under changed settings; the context stored with it."""
        indexer = _indexer(service, service.embedder, **settings)
        entry = IndexEntry(f"obs-third-{n}", "observation", "ann: third turn", now, {"session": "s"})
        assert await indexer.index([entry]) == 1
        [row] = await service.vectors.get([entry.id])
        return row.context

    assert await index_with(1, index_context_turns=2) == "ann: first turn about ferries\nann: second turn about trains"
    # Within 28 characters the newest words are kept, whole words only.
    assert await index_with(2, index_context_turns=2, index_context_chars=28) == "second turn about trains"
    assert await index_with(3, index_context_turns=0) == ""
    # Observations without a session are embedded alone.
    loose = await service.observe("a note with no session", source="ann")
    await service.indexer.drained()
    [row] = await service.vectors.get([loose.observation_id])
    assert row.context == ""


class _Counting:
    """The session's embedder, recording every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.model, self.dimension = inner.model, inner.dimension
        self.query_takes_all_cores = inner.query_takes_all_cores
        self._inner = inner
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        self.texts.extend(texts)
        return await self._inner.embed(texts, kind)


@pytest.mark.parametrize("same_call", [False, True])
async def test_a_turn_costs_one_embedding_its_context_is_the_vector_the_turn_before_got(
    service: MemoryService, same_call: bool
) -> None:
    counting = _Counting(service.embedder)
    indexer = _indexer(service, counting)
    now = int(time.time() * 1000)
    turns = [IndexEntry(f"obs-turn-{same_call}-{n}", "observation", text, now + n, {"session": f"s-{same_call}"})
             for n, text in enumerate([f"john: {QUESTION}", f"maria: {REPLY}", "john: And for dessert?"])]
    statement = IndexEntry(f"st-said-{same_call}", "statement", "maria likes salads", now + 1, vector=False)
    if same_call:  # a turn indexed in the same call as the turn before it still gets it as context
        assert await indexer.index([*turns, statement]) == 4
    else:
        for entry in turns:
            assert await indexer.index([entry, statement] if entry is turns[1] else [entry]) == (
                2 if entry is turns[1] else 1)
    assert counting.texts == [t.text for t in turns], "each turn embedded once; contexts and statements never"
    rows = await service.vectors.get([t.id for t in turns] + [statement.id])
    assert [r.context for r in rows[:3]] == ["", turns[0].text, turns[1].text]
    [alone, context] = await service.embedder.embed([turns[1].text, turns[0].text])
    expected = contextual_vector(alone, context, len(turns[1].text), len(turns[0].text))
    assert rows[1].vector is not None and _cosine(rows[1].vector, expected) > 0.999
    assert (rows[3].vector, rows[3].model) == (None, "")
    assert [h.id for h in await service.vectors.keyword("salads", 5, ["statement"])] == [statement.id]
