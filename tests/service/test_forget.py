"""Forget (erasure) through MemoryService on the session's embedded databases: what goes, what stays, the tombstone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from gated import GatedEmbedder

from mnemonet.model.ids import short_id
from mnemonet.service import MemoryService
from mnemonet.store import vector_erase


async def _everything(service: MemoryService) -> str:
    """Every node's and relationship's properties in the test's graph, as one string (a raw graph read)."""
    rows = await service.graph.read_query("MATCH (n) RETURN properties(n) AS p")
    rows += await service.graph.read_query("MATCH ()-[r]->() RETURN properties(r) AS p")
    return repr(rows)


async def _table_scan(service: MemoryService) -> str:
    """Every row of every table in the test's vector schema, as one string (a pg table scan)."""
    async with service.vectors.acquire() as conn:
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", service.vectors.schema)
        rows = []
        for t in tables:
            rows += await conn.fetch(f'SELECT * FROM "{service.vectors.schema}"."{t["tablename"]}"')
    return repr([dict(r) for r in rows])


async def test_forget_a_source_erases_its_text_everywhere_and_leaves_a_tombstone(service: MemoryService) -> None:
    await service.observe("Zorbulon Quaxley lives in Vexmoor", source="zorbulon")
    await service.observe("Zorbulon Quaxley prefers Glimmerwick tea", source="zorbulon")
    await service.claim("Zorbulon Quaxley likes Pravtonic music", source="zorbulon")
    kept = await service.observe("Alice lives in Paris", source="alice")
    await service.indexer.drained()  # indexed behind the writes (index_in_background)
    for needle in ("Vexmoor", "Glimmerwick", "Pravtonic", "zorbulon"):
        assert needle.lower() in (await _everything(service)).lower()
        assert needle.lower() in (await _table_scan(service)).lower()

    report = await service.forget(source="zorbulon", by="dpo")
    assert report.kind == "source" and report.tombstone_id is not None and report.by == "dpo"
    # Two Source nodes: zorbulon observing (a user) and claiming (an agent).
    assert report.observations == 2 and report.statements >= 3 and report.sources == 2
    assert report.concepts >= 3 and report.vectors >= 5
    assert report.graph_compacted and report.vectors_compacted

    graph, table = (await _everything(service)).lower(), (await _table_scan(service)).lower()
    for needle in ("vexmoor", "glimmerwick", "pravtonic", "zorbulon", "quaxley"):
        assert needle not in graph, needle
        assert needle not in table, needle
        assert await service.search(needle, k=10, mode="keyword") == []
        assert all(needle not in h.text.lower() for h in await service.search(needle, k=10))
    # What another source said stays, and answers.
    assert "alice lives in paris" in graph and "paris" in table
    assert [o.id for o in await service.get_recent_observations()] == [kept.observation_id]
    assert "Paris" in (await service.remember("where does Alice live?")).text
    # The tombstone: what kind, how many, when, by whom; never the content.
    [tomb] = await service.tombstones()
    assert tomb.id == report.tombstone_id and tomb.kind == "source" and tomb.by == "dpo"
    assert (tomb.observations, tomb.statements, tomb.concepts) == (report.observations, report.statements,
                                                                    report.concepts)
    [node] = await service.graph.read_query("MATCH (t:Tombstone) RETURN properties(t) AS p")
    assert "zorbulon" not in repr(node).lower()
    # Loaded by its id, it says it is a tombstone; what it records the erasure of is its own field.
    [loaded] = await service.load([report.tombstone_id])
    assert (loaded["kind"], loaded["tombstone_kind"], loaded["by"]) == ("tombstone", "source", "dpo")

    again = await service.forget(source="zorbulon", by="dpo")  # a retry erases nothing and writes no tombstone
    assert again.tombstone_id is None and again.observations == again.statements == 0
    assert len(await service.tombstones()) == 1


async def test_forget_one_observation_takes_what_stands_only_on_it(service: MemoryService) -> None:
    first = await service.observe("I prefer morning meetings", source="user")
    second = await service.observe("Actually I prefer Zentrick afternoon meetings", source="user")
    inferred = await service.claim("user likes Zentrick afternoons", source="inference", basis=[second.observation_id])
    both = await service.claim("user likes meetings", source="inference",
                               basis=[first.observation_id, second.observation_id])
    retraction = await service.retract(second.statements[0].id, "checking", source="user")

    report = await service.forget(observation_id=second.observation_id, by="admin")
    assert report.kind == "observation" and report.observations == 1
    gone = {s.id for s in second.statements} | {inferred.statement_id}
    assert report.statements == len(gone) and report.retractions == 1
    assert await service.graph.get_statements(sorted(gone)) == []
    assert await service.graph.get_observations([second.observation_id]) == []
    assert await service.graph.retractions_of([second.statements[0].id]) == []
    assert await service.graph.get_node(retraction.retraction_id) is None
    # Derived from another observation too: it stays, resting on what is left.
    [kept] = await service.graph.get_statements([both.statement_id])
    assert kept.derived_from == [first.observation_id]
    assert [s.id for s in first.statements] == [s.id for s in await service.graph.get_statements(
        [s.id for s in first.statements])]
    assert "zentrick" not in (await _everything(service)).lower()
    assert "zentrick" not in (await _table_scan(service)).lower()
    # Shared concepts stay; the one only the erased observation used is gone.
    names = {c.name for c in await service.get_concepts()}
    assert "user" in names and not any("zentrick" in n.lower() for n in names)
    answer = await service.remember("what are my meeting preferences?")
    assert "morning" in answer.text.partition("\n")[0]
    assert short_id(second.observation_id) not in answer.text


async def test_forget_scrubs_the_erased_text_from_other_rows_embedding_context(service: MemoryService) -> None:
    session = {"session": "s1"}
    said = await service.observe("Brinvolt Marsh is my middle name", source="user", metadata=session)
    reply = await service.observe("Noted, thank you", source="agent", metadata=session)
    await service.indexer.drained()  # indexed behind the write (index_in_background)
    [row] = await service.vectors.get([reply.observation_id])
    if "Brinvolt" not in row.context:
        pytest.fail("the reply was embedded without the turn before it; the scrub is not exercised")
    report = await service.forget(observation_id=said.observation_id, by="admin")
    assert report.contexts_scrubbed == 1
    [row] = await service.vectors.get([reply.observation_id])
    assert row.context == "" and "brinvolt" not in (await _table_scan(service)).lower()
    # Its vector was made with the erased turn's: it is remade from its own text alone.
    [alone] = await service.embedder.embed([row.text], "passage")
    assert row.vector is not None and _cosine(row.vector, alone) > 0.9999


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of observation_id or source"),
        ({"observation_id": "obs-1", "source": "x"}, "exactly one of observation_id or source"),
        ({"observation_id": "bad id"}, "observation_id"),
        ({"source": ""}, "source"),
        ({"source": "x", "by": ""}, "by"),
    ],
)
async def test_bad_forget_requests_are_refused(service: MemoryService, kwargs: dict[str, str], message: str) -> None:
    await service.observe("Alice lives in Paris", source="alice")
    with pytest.raises(ValueError, match=message):
        await service.forget(**kwargs)
    assert (await service.stats())["graph"]["Observation"] == 1 and await service.tombstones() == []


async def test_forgetting_an_unknown_observation_removes_nothing(service: MemoryService) -> None:
    await service.observe("Alice lives in Paris", source="alice")
    report = await service.forget(observation_id="obs-0000", by="admin")
    assert report.tombstone_id is None and report.observations == 0
    assert (await service.stats())["graph"]["Observation"] == 1


async def test_a_sync_under_way_when_forget_comes_writes_no_erased_row_back(service: MemoryService) -> None:
    said = await service.observe("Zorbulon lives in Vexmoor", source="zorbulon")
    await service.indexer.drained()
    await vector_erase.erase(service.vectors, [said.observation_id], [])  # as after a failed index write
    service.indexer.forget_recent()  # and a restart: the sync embeds the text again
    gated = GatedEmbedder(service.embedder)
    service.indexer.embedder = gated
    sync = asyncio.ensure_future(service.sync_vectors())
    await asyncio.wait_for(gated.started.wait(), 30)  # the sync has read the observation and is embedding it
    forget = asyncio.ensure_future(service.forget(observation_id=said.observation_id, by="dpo"))
    await asyncio.sleep(0.05)
    assert not forget.done(), "the erase waits for the sync under way"
    gated.open.set()
    assert await asyncio.wait_for(sync, 30) == 1
    assert (await asyncio.wait_for(forget, 60)).observations == 1
    assert await service.vectors.ids_missing([said.observation_id]) == [said.observation_id]
    assert "vexmoor" not in (await _table_scan(service)).lower()
