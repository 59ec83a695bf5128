"""Hits carry how often and when searches returned them; counted in memory and written in batches."""

from __future__ import annotations

import asyncio

from mnemonet.service import MemoryService, SpacedMemory


async def test_hits_carry_uses_and_last_used_at_written_in_one_batch(service: MemoryService) -> None:
    await service.observe("Alice lives in Paris", source="alice")
    first = await service.search("where does Alice live", k=3)
    assert first and all(h.uses == 0 and h.last_used_at is None for h in first)
    for _ in range(4):
        await service.search("where does Alice live", k=3)
    assert service.usage.writes == 0  # nothing written on the read path

    scheduled = service.usage._task
    assert scheduled is not None
    await asyncio.wait_for(scheduled, 30.0)  # the one write, usage_flush_interval after the first search
    again = await service.search("where does Alice live", k=3)
    top = next(h for h in again if h.id == first[0].id)
    assert top.uses == 5 and top.last_used_at is not None and top.last_used_at > 0
    assert service.usage.writes == 1  # five searches, one write


async def test_a_failed_write_keeps_the_counts_and_close_writes_them(service: MemoryService) -> None:
    await service.observe("Bob lives in Rome", source="bob")
    [hit, *_] = await service.search("Bob Rome", k=2)
    real = service.usage._vectors

    class Down:
        schema = real.schema

        def acquire(self) -> None:
            raise OSError("postgres down")

    service.usage._vectors = Down()  # type: ignore[assignment]
    await service.usage.flush()
    assert service.usage.writes == 0  # not written, not lost
    service.usage._vectors = real
    await service.usage.close()
    [again, *_] = [h for h in await service.search("Bob Rome", k=2) if h.id == hit.id]
    assert again.uses == 1



async def test_closing_a_spaced_store_writes_every_space_s_counts(spaced: SpacedMemory) -> None:
    alpha = await spaced.memory("alpha")
    await alpha.observe("Carol lives in Oslo", source="carol")
    assert await alpha.search("where does Carol live", k=2)
    assert alpha.usage.writes == 0  # counted in memory, due usage_flush_interval later
    await spaced.close()
    assert alpha.usage.writes == 1  # written at close, while the shared connections were still open


async def test_uses_noted_just_before_an_erasure_bring_back_no_row_of_an_erased_item(service: MemoryService) -> None:
    said = await service.observe("Zorbulon lives in Vexmoor", source="zorbulon")
    kept = await service.observe("Alice lives in Paris", source="alice")
    hits = await service.search("who lives in Vexmoor or Paris", k=10)
    assert {said.observation_id, kept.observation_id} <= {h.id for h in hits}
    assert service.usage.writes == 0  # counted in memory, due usage_flush_interval later
    report = await service.forget(source="zorbulon", by="dpo")
    await service.usage.flush()  # the write that was due
    async with service.vectors.acquire() as conn:
        used = {r["id"] for r in await conn.fetch(f'SELECT id FROM "{service.vectors.schema}".usage')}
    erased = {said.observation_id, *(s.id for s in said.statements)}
    assert report.observations == 1 and not used & erased, "a usage row keyed by an erased id"
    assert kept.observation_id in used  # the others' counts are written
