"""Statements and concepts embedded after observe answers (``index_in_background``), real databases and embedder."""

from __future__ import annotations

import asyncio
import time

import pytest

from mnemonet.service import MemoryService
from mnemonet.service.indexing import IndexEntry, VectorIndexer

TEXT = "Alice works at Acme and lives in Paris."


@pytest.fixture
def service(service: MemoryService) -> MemoryService:
    """The package's service with the statements' and concepts' vectors deferred."""
    service.settings = service.indexer.settings = service.settings.model_copy(update={"index_in_background": True})
    return service


async def _yielded(service: MemoryService, observation_id: str) -> list[str]:
    """Ids of the statements and concepts the observation's extraction wrote."""
    statements = await service.graph.statements_from_observation(observation_id)
    concepts = {c.id for c in await service.graph.concepts(100)}
    assert statements and concepts, "the offline model extracts statements and concepts from this text"
    return [s.id for s in statements] + sorted(concepts)


async def test_observe_answers_with_its_own_vector_and_the_rest_drains(service: MemoryService) -> None:
    result = await service.observe(TEXT, source="bob", metadata={"session": "s1"})
    yielded = await _yielded(service, result.observation_id)
    # The observation's own vector is written before observe answers; what it yields is queued.
    assert await service.vectors.ids_missing([result.observation_id]) == []
    waiting = (await service.stats())["backlog"]["vectors"]
    assert waiting == len(yielded) == service.indexer.backlog
    assert set(await service.vectors.ids_missing(yielded)) == set(yielded)
    # Meanwhile search finds the observation, and its statements come back through it from the graph.
    hits = await service.search("Where does Alice work?", k=5)
    assert hits[0].id == result.observation_id
    recall = await service.recall("Where does Alice work?")
    assert {s.id for s in recall.statements} >= {s for s in yielded if s.startswith("st-")}
    await service.indexer.drained()
    assert (await service.stats())["backlog"]["vectors"] == 0
    assert await service.vectors.ids_missing(yielded) == []
    assert service.indexer.failures == 0


async def test_inline_when_turned_off(service: MemoryService) -> None:
    service.settings = service.settings.model_copy(update={"index_in_background": False})
    result = await service.observe(TEXT, source="bob")
    assert service.indexer.backlog == 0
    assert await service.vectors.ids_missing(await _yielded(service, result.observation_id)) == []


async def test_close_embeds_what_waits(service: MemoryService) -> None:
    result = await service.observe(TEXT, source="bob")
    yielded = await _yielded(service, result.observation_id)
    assert service.indexer.backlog == len(yielded)
    await service.indexer.close()  # as MemoryService.close does before the stores close
    assert await service.vectors.ids_missing(yielded) == []


async def test_a_full_batch_goes_at_once_and_drained_sends_the_rest(service: MemoryService) -> None:
    settings = service.settings.model_copy(update={"index_background_batch": 2, "index_background_wait": 600.0})
    indexer = VectorIndexer(service.vectors, service.embedder, settings)
    now = int(time.time() * 1000)
    entries = [IndexEntry(f"st-linger-{i}", "statement", f"ann likes ferry number {i}", now) for i in range(3)]
    indexer.defer(entries[:2])  # a full batch: embedded without lingering for index_background_wait
    assert indexer._drain is not None
    await asyncio.wait_for(asyncio.shield(indexer._drain), settings.embed_timeout * 2)
    assert indexer.backlog == 0
    assert await service.vectors.ids_missing([e.id for e in entries[:2]]) == []
    indexer.defer(entries[2:])  # alone it would linger; drained() sends it now
    assert indexer.backlog == 1
    await asyncio.wait_for(indexer.drained(), settings.embed_timeout * 2)
    assert await service.vectors.ids_missing([entries[2].id]) == []


async def test_forget_and_clear_leave_no_deferred_vector_behind(service: MemoryService) -> None:
    result = await service.observe(TEXT, source="bob")
    statements = [s.id for s in await service.graph.statements_from_observation(result.observation_id)]
    assert service.indexer.backlog  # the statements' vectors wait
    await service.forget(observation_id=result.observation_id)
    await service.indexer.drained()
    missing = await service.vectors.ids_missing([result.observation_id, *statements])
    assert set(missing) == {result.observation_id, *statements}, "forgotten, and not brought back by the drain"
    await service.observe(TEXT, source="carol")
    assert service.indexer.backlog
    await service.clear()
    await service.indexer.drained()
    assert await service.vectors.count() == 0


async def test_the_next_observation_carries_what_the_last_one_deferred(service: MemoryService) -> None:
    service.indexer.settings = service.indexer.settings.model_copy(update={"index_background_wait": 600.0})
    first = await service.observe(TEXT, source="bob")
    deferred = await _yielded(service, first.observation_id)
    assert service.indexer.backlog == len(deferred)
    second = await service.observe("Bob drives a red Volvo to Berlin.", source="bob")
    # No background call could have gone (600 s): the second turn's own call embedded them.
    assert await service.vectors.ids_missing([second.observation_id, *deferred]) == []
    assert service.indexer.backlog > 0  # the second turn's own statements and concepts wait now
    await service.indexer.drained()
    assert service.indexer.backlog == 0
