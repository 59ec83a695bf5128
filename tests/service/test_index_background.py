"""Statements and concepts embedded after observe answers (``index_in_background``), real databases and embedder."""

from __future__ import annotations

from mnemonet.service import MemoryService

TEXT = "Alice works at Acme and lives in Paris."


async def _yielded(service: MemoryService, observation_id: str) -> list[str]:
    """Ids of the statements and concepts the observation's extraction wrote."""
    statements = await service.graph.statements_from_observation(observation_id)
    concepts = {c.id for c in await service.graph.concepts(100)}
    assert statements and concepts, "the offline model extracts statements and concepts from this text"
    return [s.id for s in statements] + sorted(concepts)


async def test_observe_answers_with_its_own_vector_and_the_rest_drains(service: MemoryService) -> None:
    assert service.settings.index_in_background, "the default"
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
