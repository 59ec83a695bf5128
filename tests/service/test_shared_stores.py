"""Two store nodes over one graph and one PostgreSQL: what one acknowledges the other finds; work is done once.

Each test builds two ``MemoryService``s as two store nodes do (``build_memory_service`` on the same graph key
and vector schema of the session's servers): each its own indexer, holder and connections, nothing shared but
the engines.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial

import pytest
from gated import GatedEmbedder

from mnemonet.llm import make_language_model
from mnemonet.model.errors import NotFound
from mnemonet.service import MemoryService, SpacedMemory, build_memory_service
from mnemonet.service.indexing import IndexEntry
from mnemonet.settings import Settings
from mnemonet.store.index_queue import IndexQueue, QueuedRow
from mnemonet.store.jobs import Jobs

TEXT = "Ingrid Halvorsen maintains the Tromso weather station."
QUERY = "Who looks after the weather station in Tromso?"


@pytest.fixture
async def pair(service_settings: Settings, embedder, unique_name: str
               ) -> AsyncIterator[tuple[MemoryService, MemoryService]]:
    """Two store nodes' services over this test's graph and schema (a short lease, so a lapse is seconds)."""
    settings = service_settings.model_copy(update={"index_lease": 0.5, "index_read_wait": 60.0,
                                                   "space_registry_refresh": 0.0})
    llm = make_language_model(settings)
    first = await build_memory_service(settings, llm, embedder, vector_schema=unique_name)
    second = await build_memory_service(settings, llm, embedder, vector_schema=unique_name)
    yield first, second
    await first.close()
    await second.close()


async def _all_kept(ids: list[str]) -> set[str]:
    """The test's own queued rows are of items it made up, not the graph's: none of them is erased."""
    return set(ids)


def _made_up(*services: MemoryService) -> None:
    """Let the indexers of ``services`` index rows of items that are not in the graph (the test makes them up)."""
    for service in services:
        service.indexer._present = _all_kept


def _gate(service: MemoryService) -> GatedEmbedder:
    gated = GatedEmbedder(service.embedder)
    service.indexer.embedder = gated
    return gated


async def test_a_write_acknowledged_on_one_node_is_found_by_a_search_on_the_other(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = pair
    gated = _gate(a)  # a's rows wait behind its write
    result = await a.observe(TEXT, source="ops")
    assert result.created and await b.vectors.ids_missing([result.observation_id]) == [result.observation_id]

    # b's search waits for a's rows: release a's embedder only once b is seen waiting on the shared queue.
    assert b.indexer.queue is not None
    waiting = asyncio.Event()
    settled = b.indexer.queue.settled

    async def watched(mark: int) -> bool:
        waiting.set()
        return await settled(mark)

    b.indexer.queue.settled = watched  # type: ignore[method-assign]
    search = asyncio.ensure_future(b.search(QUERY, k=5))
    await asyncio.wait_for(waiting.wait(), 30)
    gated.open.set()
    hits = await asyncio.wait_for(search, 60)
    assert hits and hits[0].id == result.observation_id
    assert await a.indexer.queue.high_water() is None  # type: ignore[union-attr]  # nothing left queued


async def test_rows_of_a_dead_node_are_taken_over_once_and_a_search_waits_for_them(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = pair
    _made_up(a, b)
    # A node that queued rows and died: nobody renews its lease.
    dead = IndexQueue(a.vectors, "default", "dead-node")
    rows = [QueuedRow(id=f"obs-dead-{i}", kind="observation", text=f"ops: the dead node's note number {i}",
                      created_at=1_700_000_000_000 + i) for i in range(3)]
    await dead.put(rows)
    search = asyncio.ensure_future(a.search("the dead node's note number 2", k=3))
    memories = [SpacedMemory(a), SpacedMemory(b)]

    async def taken() -> int:  # both nodes look, as their takeover loops do; only one may take a row
        return sum(await asyncio.gather(*(m.take_over_index() for m in memories)))

    took = 0
    while took < len(rows):  # the lease runs out 0.5 s after the put
        took += await taken()
        await asyncio.sleep(0.05)
    assert took == len(rows) and await taken() == 0
    hits = await asyncio.wait_for(search, 60)
    assert hits and hits[0].id == "obs-dead-2"
    await a.indexer.drained()
    await b.indexer.drained()
    assert await a.vectors.ids_missing([r.id for r in rows]) == []
    assert a.indexer.taken_over + b.indexer.taken_over == len(rows)
    assert await dead.hold([r.id for r in rows]) == set(), "the dead holder holds nothing any more"


async def test_a_stalled_node_indexes_nothing_another_took_over(pair: tuple[MemoryService, MemoryService]) -> None:
    a, b = pair
    _made_up(a, b)
    gated = _gate(a)
    first = IndexEntry("obs-stall-1", "observation", "ops: first note while stalled", 1_700_000_000_000)
    second = IndexEntry("obs-stall-2", "observation", "ops: second note while stalled", 1_700_000_000_001)
    await a.indexer.submit([first])
    await asyncio.wait_for(gated.started.wait(), 30)  # a is stuck in its embedder with the first row
    a.indexer._renewal.cancel()  # type: ignore[union-attr]  # and stops renewing: its leases lapse
    await a.indexer.submit([second])
    while True:  # the lease runs out 0.5 s after a's last renewal
        if await b.indexer.take_over():
            break
        await asyncio.sleep(0.05)
    await b.indexer.drained()
    gated.open.set()  # a wakes up: its first row it still indexes; the second is b's now
    await a.indexer.close()
    assert await a.vectors.ids_missing([first.id, second.id]) == []
    assert a.indexer.lost + b.indexer.taken_over >= 1 and a.indexer.lost <= b.indexer.taken_over


async def test_the_graph_schema_is_set_up_once_and_a_periodic_sync_once_per_interval(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = pair
    assert a.coordination is not None
    [schema] = await a.coordination.jobs.ledger("schema")
    assert (schema.starts, schema.completions) == (1, 1)  # the second node found it done
    spaced = [SpacedMemory(a), SpacedMemory(b)]
    settings = a.settings.model_copy(update={"vector_sync_interval": 3600.0})
    for memory in spaced:
        memory.settings = settings
    await asyncio.gather(*(m.sync_vectors(10) for m in spaced))
    [sync] = await a.coordination.jobs.ledger("vector-sync")
    assert (sync.starts, sync.completions) == (1, 1)


async def test_once_runs_a_job_on_one_node_and_another_finishes_one_that_failed(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = pair
    jobs = [Jobs(a.vectors, "node-a"), Jobs(b.vectors, "node-b")]
    ran: list[str] = []
    started, go = asyncio.Event(), asyncio.Event()

    async def work(name: str) -> str:
        ran.append(name)
        started.set()
        await go.wait()
        return name

    both = asyncio.gather(*(j.once("job:x", "test", partial(work, j.holder)) for j in jobs))
    await asyncio.wait_for(started.wait(), 30)
    go.set()
    results = await both
    assert len(ran) == 1 and sorted(r for r, _ in results) == [False, True]

    async def broken() -> None:
        raise RuntimeError("the node died in it")

    with pytest.raises(RuntimeError):
        await jobs[0].once("job:y", "test", broken)
    assert await jobs[1].once("job:y", "test", lambda: work("again")) == (True, "again")
    [record] = [r for r in await jobs[0].ledger("test") if r.key == "job:y"]
    assert (record.starts, record.completions, record.holder) == (2, 1, "node-b")


async def test_a_space_is_created_once_and_an_erasure_through_one_node_closes_it_on_the_other(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = (SpacedMemory(m) for m in pair)
    views = await asyncio.gather(a.create_space("alpha", by="ops"), b.create_space("alpha", by="ops"))
    assert views[0] == views[1]
    await (await b.memory("alpha")).observe("ops: alpha keeps its own notes", source="ops")
    assert a.default.coordination is not None
    schemas = [r for r in await a.default.coordination.jobs.ledger("schema") if r.key.startswith("schema:space:")]
    assert [(r.starts, r.completions) for r in schemas] == [(1, 1)]
    report = await a.forget(whole_space=True, space="alpha", by="ops")
    assert report.tombstone_id and report.observations == 1
    with pytest.raises(NotFound):
        await b.memory("alpha")


async def test_a_forget_cut_short_on_one_node_is_finished_from_the_other(
    pair: tuple[MemoryService, MemoryService], monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = pair
    written = await a.observe("ops: Yrsa Blomqvist rents locker 42", source="yrsa")
    await a.indexer.drained()

    async def killed() -> bool:
        raise ConnectionError("store node killed before its compaction")

    monkeypatch.setattr(a.graph, "compact", killed)
    with pytest.raises(ConnectionError):
        await a.forget(source="yrsa", by="dpo")
    assert await a.graph.get_observations([written.observation_id]) == []  # erased; its bytes not compacted

    report = await b.forget(source="yrsa", by="dpo")  # the client's retry through another node
    assert report.tombstone_id is not None and report.observations == 1
    assert report.graph_compacted and report.vectors_compacted
    assert [t.id for t in await b.tombstones()] == [report.tombstone_id]
    assert b.coordination is not None
    [job] = await b.coordination.jobs.ledger("erasure")
    assert (job.starts, job.completions, job.state) == (2, 1, "done")  # begun on a, finished on b


async def test_a_space_erasure_cut_short_on_one_node_is_finished_from_the_other(
    pair: tuple[MemoryService, MemoryService], monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = (SpacedMemory(m) for m in pair)
    await a.create_space("beta", by="ops")
    await (await a.memory("beta")).observe("ops: beta holds one note", source="ops")

    async def killed() -> bool:
        raise ConnectionError("store node killed before its compaction")

    graph = (await a.memory("beta")).graph
    monkeypatch.setattr(type(graph), "compact", lambda self: killed())
    with pytest.raises(ConnectionError):
        await a.forget(whole_space=True, space="beta", by="dpo")
    monkeypatch.undo()
    assert "beta" in [s.name for s in await b.spaces()]  # still listed: the erasure did not finish

    report = await b.forget(whole_space=True, space="beta", by="dpo")
    assert report.tombstone_id and report.observations == 1 and report.graph_compacted
    assert "beta" not in [s.name for s in await a.spaces()]
    assert a.default.coordination is not None
    [job] = [r for r in await a.default.coordination.jobs.ledger("erasure") if r.key == "erase-space:beta"]
    assert (job.starts, job.completions) == (2, 1)


async def test_a_retry_of_a_write_whose_node_died_before_queuing_its_row_makes_it_searchable(
    pair: tuple[MemoryService, MemoryService], monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = pair

    async def died(entries: object) -> None:  # a commits the observation, then dies before queuing its row
        return None

    monkeypatch.setattr(a.indexer, "submit", died)
    first = await a.observe(TEXT, source="ops", idempotency_key="retry-1")
    retry = await b.observe(TEXT, source="ops", idempotency_key="retry-1")  # the client's retry elsewhere
    assert first.created and not retry.created and retry.observation_id == first.observation_id
    hits = await b.search(QUERY, k=5)
    assert hits and hits[0].id == first.observation_id


async def test_renewals_holds_and_removals_at_once_take_their_locks_in_one_order(
    pair: tuple[MemoryService, MemoryService],
) -> None:
    a, b = pair
    _made_up(a, b)
    queue = IndexQueue(a.vectors, "default", "busy-node")
    for round_ in range(8):
        # written in the reverse of their ids' order, so the table's order and the ids' index order differ
        rows = [QueuedRow(id=f"obs-busy-{round_}-{i:03d}", kind="observation", text=f"busy note {i}",
                          created_at=1_700_000_000_000 + i) for i in reversed(range(300))]
        await queue.put(rows)
        ids = [r.id for r in rows]
        await asyncio.gather(queue.renew(), queue.hold(ids[::-1]), queue.done(ids), queue.renew(), queue.hold(ids))
        assert await queue.hold(ids) == set(), "every row removed, none left held"
