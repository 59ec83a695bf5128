"""Rows indexed behind the write (``index_in_background``): real databases and embedder."""

from __future__ import annotations

import asyncio
import time

from gated import GatedEmbedder

from mnemonet.model.records import ObservationRecord, SourceSpec
from mnemonet.service import MemoryService
from mnemonet.service.indexing import IndexEntry, VectorIndexer

TEXT = "Alice works at Acme and lives in Paris."


def _gated(service: MemoryService, **settings: object) -> GatedEmbedder:
    """Make the service index through a gated embedder (searches still embed their queries at once)."""
    gated = GatedEmbedder(service.embedder)
    service.indexer.embedder = gated
    service.indexer.settings = service.indexer.settings.model_copy(update=settings)
    return gated


async def _rows(service: MemoryService, ids: list[str]) -> set[str]:
    return set(ids) - set(await service.vectors.ids_missing(ids))


async def test_observe_answers_before_its_row_and_a_search_after_it_waits_for_it(service: MemoryService) -> None:
    gated = _gated(service)
    result = await service.observe(TEXT, source="bob", metadata={"session": "s1"})
    # Answered with the graph written; its row (and its statements' and concepts') waits for the embedder.
    assert await _rows(service, [result.observation_id]) == set()
    assert (await service.stats())["backlog"]["vectors"] == service.indexer.backlog > 0
    search = asyncio.ensure_future(service.search("Where does Alice work?", k=5))
    await asyncio.sleep(0)
    assert not search.done(), "a search waits for the rows of the writes it follows"
    gated.open.set()
    hits = await asyncio.wait_for(search, 60)
    assert hits[0].id == result.observation_id
    assert service.indexer.backlog == 0 and service.indexer.failures == 0
    assert (await service.stats())["backlog"]["vectors"] == 0


async def test_each_write_indexed_before_it_answers_when_turned_off(service: MemoryService) -> None:
    service.indexer.settings = service.indexer.settings.model_copy(update={"index_in_background": False})
    result = await service.observe(TEXT, source="bob")
    assert service.indexer.backlog == 0
    assert await _rows(service, [result.observation_id]) == {result.observation_id}


async def _written(service: MemoryService, ids: list[str]) -> None:
    """Observations in the graph under ``ids``: the indexer writes rows only of items the graph holds."""
    for n, obs_id in enumerate(ids):
        await service.graph.write_observation(ObservationRecord(
            id=obs_id, text=f"ferry number {n}", source=SourceSpec(name="ann", kind="user")))


async def test_writes_wait_for_room_past_the_backlog_bound_and_share_calls(service: MemoryService) -> None:
    gated = _gated(service, index_backlog_max=3, index_background_batch=64)
    now = int(time.time() * 1000)
    entries = [IndexEntry(f"obs-room-{i}", "observation", f"ann: ferry number {i}", now + i) for i in range(5)]
    await _written(service, [e.id for e in entries])
    await service.indexer.submit(entries[:3])  # fills the backlog: the first call takes them all
    later = asyncio.ensure_future(service.indexer.submit(entries[3:]))
    await asyncio.sleep(0.05)
    assert not later.done() and service.indexer.backlog == 3, "a write past the bound waits for room"
    gated.open.set()
    await asyncio.wait_for(later, 60)
    await asyncio.wait_for(service.indexer.drained(), 60)
    assert gated.calls == 2, "what waited went in one call"
    assert await _rows(service, [e.id for e in entries]) == {e.id for e in entries}


async def test_a_read_waits_at_most_index_read_wait(service: MemoryService) -> None:
    gated = _gated(service, index_read_wait=0.2)
    await service.observe("Alice works at Acme.", source="bob")
    hits = await asyncio.wait_for(service.search("Where does Alice work?", k=5), 30)
    assert hits == [], "past the bound the search goes on without the row still queued"
    gated.open.set()
    await service.indexer.drained()
    assert await service.search("Where does Alice work?", k=5)


async def test_close_indexes_what_waits(service: MemoryService) -> None:
    gated = _gated(service)
    result = await service.observe(TEXT, source="bob")
    assert service.indexer.backlog
    gated.open.set()
    await service.indexer.close()  # as MemoryService.close does before the stores close
    assert await _rows(service, [result.observation_id]) == {result.observation_id}


async def test_forget_and_clear_leave_no_queued_row_behind(service: MemoryService) -> None:
    gated = _gated(service)
    result = await service.observe(TEXT, source="bob")
    statements = [s.id for s in await service.graph.statements_from_observation(result.observation_id)]
    assert service.indexer.backlog
    gated.open.set()
    await service.forget(observation_id=result.observation_id)
    await service.indexer.drained()
    assert await _rows(service, [result.observation_id, *statements]) == set(), "forgotten, not brought back"
    gated.open.clear()
    await service.observe(TEXT, source="carol")
    assert service.indexer.backlog
    clearing = asyncio.ensure_future(service.clear())
    await asyncio.sleep(0.05)
    assert not clearing.done(), "clear waits for the rows being embedded (the erasure lock), then erases them"
    gated.open.set()
    await asyncio.wait_for(clearing, 60)
    await service.indexer.drained()
    assert await service.vectors.count() == 0


async def test_an_indexer_of_its_own_drains_in_calls_of_at_most_the_batch(service: MemoryService) -> None:
    gated = GatedEmbedder(service.embedder)
    indexer = VectorIndexer(service.vectors, gated, service.settings.model_copy(update={"index_background_batch": 2}),
                            present=service.graph.existing_items, lock=asyncio.Lock())
    now = int(time.time() * 1000)
    entries = [IndexEntry(f"obs-batch-{i}", "observation", f"bob: train number {i}", now + i) for i in range(5)]
    await _written(service, [e.id for e in entries])
    await indexer.submit(entries)
    gated.open.set()
    await asyncio.wait_for(indexer.drained(), 60)
    assert gated.calls == 3  # 2 + 2 + 1
    assert await _rows(service, [e.id for e in entries]) == {e.id for e in entries}
