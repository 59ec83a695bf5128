"""An erasure and the writes it concerns exclude each other (``service/write_gate.py``; issue 31, row 3).

Each test holds a write of the erased source inside the language model's extraction call (the observation
written, its extraction not yet), so every step happens in a known order without timing.
"""

from __future__ import annotations

import asyncio

import pytest
from gated import GatedEmbedder, GatedExtraction

from mnemonet.model.api import InferredClaim
from mnemonet.model.errors import Busy
from mnemonet.service import MemoryService
from mnemonet.service.common import observation_entry
from mnemonet.store.graph_errors import UnknownReference


def _hold(service: MemoryService, word: str = "Zorbulon") -> GatedExtraction:
    gated = GatedExtraction(service.llm, word)
    service.llm = gated
    return gated


def _set(service: MemoryService, **settings: object) -> None:
    service.settings = service.settings.model_copy(update=settings)


async def test_forget_erases_a_write_under_way_whole_and_a_write_that_comes_meanwhile_waits(
    service: MemoryService,
) -> None:
    held = _hold(service)
    under_way = asyncio.ensure_future(service.observe("Zorbulon lives in Vexmoor", source="zorbulon"))
    await held.started.wait()  # its observation is written; its statements wait for the model
    forget = asyncio.ensure_future(service.forget(source="zorbulon", by="dpo"))
    await asyncio.sleep(0)  # the erasure closes the gate and waits for the write under way
    later = asyncio.ensure_future(service.observe("Zorbulon moved to Quexbury", source="zorbulon"))
    other = await service.observe("Alice lives in Paris", source="alice")  # another source writes on
    assert other.created and not forget.done() and not later.done()
    held.open.set()
    first, report = await under_way, await forget
    assert report.observations == 1 and report.statements == len(first.statements) >= 1  # erased whole
    assert await service.graph.get_observations([first.observation_id]) == []
    assert await service.graph.get_statements([s.id for s in first.statements]) == []
    after = await later  # written once the erasure was done, whole
    assert [o.id for o in await service.graph.get_observations([after.observation_id])] == [after.observation_id]
    assert len(await service.graph.get_statements([s.id for s in after.statements])) == len(after.statements) >= 1
    await service.indexer.drained()
    assert await service.vectors.ids_missing([after.observation_id, first.observation_id]) == [first.observation_id]


async def test_a_write_waits_at_most_forget_write_wait_then_is_refused_busy(service: MemoryService) -> None:
    _set(service, forget_write_wait=0.2)
    held = _hold(service)
    under_way = asyncio.ensure_future(service.observe("Zorbulon lives in Vexmoor", source="zorbulon"))
    await held.started.wait()
    forget = asyncio.ensure_future(service.forget(source="zorbulon", by="dpo"))
    await asyncio.sleep(0)
    with pytest.raises(Busy, match="forget_write_wait"):
        await service.observe("Zorbulon moved to Quexbury", source="zorbulon")
    held.open.set()
    await under_way
    assert (await forget).observations == 1
    assert (await service.stats())["graph"]["Observation"] == 0, "the refused write wrote nothing"


async def test_an_erasure_waits_at_most_forget_drain_wait_then_is_refused_erasing_nothing(
    service: MemoryService,
) -> None:
    _set(service, forget_drain_wait=0.2)
    held = _hold(service)
    under_way = asyncio.ensure_future(service.observe("Zorbulon lives in Vexmoor", source="zorbulon"))
    await held.started.wait()
    with pytest.raises(Busy, match="forget_drain_wait"):
        await service.forget(source="zorbulon", by="dpo")
    held.open.set()
    written = await under_way
    assert await service.graph.get_observations([written.observation_id]) and await service.tombstones() == []
    # The gate is open again: the source writes, and a later erasure takes everything.
    await service.observe("Zorbulon moved to Quexbury", source="zorbulon")
    assert (await service.forget(source="zorbulon", by="dpo")).observations == 2


async def test_writes_resting_on_the_erased_items_wait_for_the_erasure_and_then_find_them_gone(
    service: MemoryService,
) -> None:
    said = await service.observe("Zorbulon lives in Vexmoor", source="zorbulon", defer_extraction=True)
    held = _hold(service)
    under_way = asyncio.ensure_future(service.observe("Zorbulon keeps bees", source="zorbulon"))
    await held.started.wait()
    forget = asyncio.ensure_future(service.forget(source="zorbulon", by="dpo"))
    await asyncio.sleep(0)
    # A worker's claim, another source's claim on it and a retraction of it: each rests on the erased item.
    resting = [
        asyncio.ensure_future(service.record_inference(
            said.observation_id, [InferredClaim(text="Zorbulon lives in Vexmoor")], source="inference")),
        asyncio.ensure_future(service.claim("alice likes Vexmoor", source="alice",
                                            basis=[said.observation_id])),
        asyncio.ensure_future(service.retract(said.observation_id, "not true", source="alice")),
    ]
    await asyncio.sleep(0)
    assert not any(w.done() for w in resting), "each waits for the erasure"
    held.open.set()
    await under_way
    assert (await forget).observations == 2
    for write in resting:  # nothing resting on the erased observation is written after it
        with pytest.raises(UnknownReference):
            await write
    counts = (await service.stats())["graph"]
    assert (counts["Observation"], counts["Statement"], counts["Retraction"]) == (0, 0, 0)


async def _waiting_for(lock: asyncio.Lock, within: float) -> None:
    """Until a task waits for ``lock`` (asyncio.Lock keeps its waiters in ``_waiters``); fails after ``within`` s."""
    deadline = asyncio.get_running_loop().time() + within
    while not getattr(lock, "_waiters", None):
        assert asyncio.get_running_loop().time() < deadline, "no one came to wait for the lock"
        await asyncio.sleep(0.01)


async def test_queued_rows_of_what_is_erased_are_cancelled_unembedded_and_counted(service: MemoryService) -> None:
    gated = GatedEmbedder(service.embedder)
    service.indexer.embedder = gated
    await service.observe("Alice lives in Paris", source="alice")
    await gated.started.wait()  # alice's rows are in the embedder call, under the erasure lock
    said = await service.observe("Zorbulon lives in Vexmoor", source="zorbulon")  # its rows queue behind
    forget = asyncio.ensure_future(service.forget(source="zorbulon", by="dpo"))
    # The state this test is about: the erasure waits for the lock while zorbulon's rows are still queued. Before
    # the lock it waits for the writes under way (a worker's, on a busy machine): the gate opens only then.
    await _waiting_for(service.erasing, within=15.0)
    assert not forget.done()
    gated.open.set()
    report = await forget
    await service.indexer.drained()
    assert not any("vexmoor" in t.lower() for t in gated.texts), "an erased text reached the embedder"
    # Its rows were never written, and are counted as erased all the same: one for each item that went.
    assert report.observations == 1 and report.vectors == 1 + report.statements + report.concepts
    assert await service.vectors.ids_missing([said.observation_id]) == [said.observation_id]


async def test_a_row_handed_in_after_its_item_was_erased_is_not_written(service: MemoryService) -> None:
    said = await service.observe("Zorbulon lives in Vexmoor", source="zorbulon")
    await service.indexer.drained()
    [view] = await service.graph.get_observations([said.observation_id])
    await service.forget(source="zorbulon", by="dpo")
    # As a write still under way (a worker's rows, a sync that read the item before) hands it in after.
    await service.indexer.submit([observation_entry(view)])
    await service.indexer.drained()
    assert await service.indexer.index([observation_entry(view)]) == 0
    assert await service.vectors.ids_missing([said.observation_id]) == [said.observation_id]
    assert await service.vectors.count() == 0


async def test_clear_waits_for_every_write_under_way_and_leaves_none_half_written(service: MemoryService) -> None:
    held = _hold(service)
    under_way = asyncio.ensure_future(service.observe("Zorbulon lives in Vexmoor", source="zorbulon"))
    await held.started.wait()
    clearing = asyncio.ensure_future(service.clear())
    await asyncio.sleep(0)
    later = asyncio.ensure_future(service.observe("Alice lives in Paris", source="alice", defer_extraction=True))
    await asyncio.sleep(0)
    assert not clearing.done() and not later.done(), "clear waits for the write under way, every write for it"
    held.open.set()
    await under_way
    await clearing
    after = await later
    assert [o.id for o in await service.get_recent_observations()] == [after.observation_id]
    assert (await service.stats())["graph"]["Statement"] == 0
