"""The inference worker on a real store: claims DERIVED_FROM the observation, done once, resumable."""

from __future__ import annotations

from typing import Any

import pytest

from mnemonet.agents import InferenceAgent, Ownership
from mnemonet.llm import make_language_model
from mnemonet.model.api import InferredClaim
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.graph_errors import UnknownReference


async def test_claims_are_written_derived_from_the_observation_and_never_twice(
    service: MemoryService, agent_settings: Settings
) -> None:
    works = await service.observe("Alice works at Acme.")
    question = await service.observe("Is it raining?")  # supports no claim: done all the same
    agent = InferenceAgent(service, agent_settings, Ownership.solo("w1"))

    assert await agent.drain() == 2
    [claim] = await service.graph.statements_by_source(InferenceAgent.source, [works.observation_id])
    assert (claim.subject, claim.predicate, claim.object) == ("Acme", "employs", "Alice")
    assert claim.derived_from == [works.observation_id] and claim.confidence == 0.8
    assert await service.pending_observations(InferenceAgent.source) == []
    assert agent.stats()["claims_made"] == 1 and agent.stats()["llm_calls"] == 2

    # A restarted worker reads its progress back from the graph: nothing to redo.
    again = InferenceAgent(service, agent_settings, Ownership.solo("w1"))
    assert await again.drain() == 0 and again.stats()["llm_calls"] == 0
    # A racing twin's duplicate write is absorbed by the derived ids and the marker.
    repeat = await service.record_inference(works.observation_id, [InferredClaim(text="Acme employs Alice")],
                                            InferenceAgent.source)
    assert repeat.created is False
    assert (await service.graph.counts())["Statement"] == 2  # the observed one and the inferred one
    assert question.observation_id not in [o.id for o in await service.pending_observations(InferenceAgent.source)]


async def test_inferred_claims_speak_for_the_observations_source(
    service: MemoryService, agent_settings: Settings
) -> None:
    alice = await service.observe("I work at Acme", source="alice")
    bob = await service.observe("I live in Rome", source="bob")
    await InferenceAgent(service, agent_settings, Ownership.solo("w1")).drain()
    claims = await service.graph.statements_by_source(InferenceAgent.source, [alice.observation_id, bob.observation_id])
    assert sorted((c.subject, c.predicate, c.object) for c in claims) == [
        ("Acme", "employs", "alice"), ("bob", "located_in", "Rome")]  # before: "Acme employs user"


async def test_two_workers_split_the_backlog_by_ownership(service: MemoryService, agent_settings: Settings) -> None:
    for i in range(12):
        await service.observe(f"Person{i} lives in Town{i}.")
    members = lambda: ["a", "b"]  # noqa: E731
    a = InferenceAgent(service, agent_settings, Ownership("a", members))
    b = InferenceAgent(service, agent_settings, Ownership("b", members))

    first = await a.drain()
    assert 0 < first < 12  # only its own share
    assert await b.drain() == 12 - first
    assert a.stats()["skipped"] >= 12 - first
    assert await service.pending_observations(InferenceAgent.source) == []


async def test_record_inference_refuses_bad_input(service: MemoryService) -> None:
    with pytest.raises(UnknownReference):
        await service.record_inference("obs-missing", [], "inference-agent")
    with pytest.raises(ValueError, match="observation_id"):
        await service.record_inference("bad id!", [], "inference-agent")
    with pytest.raises(ValueError, match="source"):
        await service.record_inference("obs-1", [], "  ")


async def test_one_model_call_extracts_and_infers_when_asked(
    agent_settings: Settings, agents_embedder: Any, unique_name: str
) -> None:
    settings = agent_settings.model_copy(update={"infer_with_extraction": "on"})
    llm = make_language_model(settings)
    svc = await build_memory_service(settings, llm, agents_embedder, vector_schema=unique_name)
    try:
        works = await svc.observe("I work at Acme", source="alice")
        question = await svc.observe("Is it raining?", source="alice")  # supports no claim: done all the same
        assert [s.sentence() for s in works.statements] == ["alice works at Acme"]  # the literal ones only
        assert llm.usage()["calls"] == 2 and svc.llm_calls["observe"] == 2  # one call per observation
        [claim] = await svc.graph.statements_by_source(InferenceAgent.source, [works.observation_id])
        assert (claim.subject, claim.predicate, claim.object, claim.confidence) == ("Acme", "employs", "alice", 0.8)
        assert claim.derived_from == [works.observation_id]
        # The inference worker finds both done: no call of its own.
        agent = InferenceAgent(svc, settings, Ownership.solo("w1"))
        assert await agent.drain() == 0 and agent.stats()["llm_calls"] == 0
        assert llm.usage()["calls"] == 2
        pending = [o.id for o in await svc.pending_observations(InferenceAgent.source)]
        assert works.observation_id not in pending and question.observation_id not in pending
        # A worker racing on the same observation writes the same ids: absorbed, nothing doubled.
        repeat = await svc.record_inference(works.observation_id, [InferredClaim(text="Acme employs alice")],
                                            InferenceAgent.source)
        assert repeat.created is False and (await svc.graph.counts())["Statement"] == 2
    finally:
        await svc.clear()
        await svc.close()


@pytest.mark.parametrize(("mode", "worker_runs", "together"), [
    ("auto", False, False),  # the default, and no inference worker known: claims are the worker's to make
    ("auto", True, True),  # the default where one runs: one call
    ("off", True, False),
    ("on", False, True),
])
async def test_extraction_infers_the_claims_where_an_inference_worker_runs(
    agent_settings: Settings, agents_embedder: Any, unique_name: str, mode: str, worker_runs: bool, together: bool,
) -> None:
    assert Settings.model_fields["infer_with_extraction"].default == "auto"
    settings = agent_settings.model_copy(update={"infer_with_extraction": mode})
    llm = make_language_model(settings)
    svc = await build_memory_service(settings, llm, agents_embedder, vector_schema=unique_name)
    svc.inference_runs = lambda: worker_runs  # what a node reads from its membership
    try:
        works = await svc.observe("I work at Acme", source="alice")
        claims = await svc.graph.statements_by_source(InferenceAgent.source, [works.observation_id])
        assert [c.sentence() for c in claims] == (["Acme employs alice"] if together else [])
        pending = [o.id for o in await svc.pending_observations(InferenceAgent.source)]
        assert pending == ([] if together else [works.observation_id])
        assert llm.usage()["calls"] == 1
    finally:
        await svc.clear()
        await svc.close()


@pytest.mark.parametrize(("given", "mode"), [(True, "on"), (False, "off"), ("true", "on"), ("0", "off"),
                                             ("auto", "auto"), ("ON", "on")])
def test_infer_with_extraction_reads_the_old_true_and_false(given: object, mode: str) -> None:
    assert Settings(infer_with_extraction=given).infer_with_extraction == mode


def test_infer_with_extraction_refuses_other_words() -> None:
    with pytest.raises(ValueError, match="infer_with_extraction"):
        Settings(infer_with_extraction="sometimes")


async def test_one_call_writes_what_extraction_and_a_separate_inference_write(
    agent_settings: Settings, agents_embedder: Any, unique_name: str
) -> None:
    """The combined call is a cheaper way to the same memory: the same statements, on the same concepts."""
    texts = ["I prefer morning meetings", "actually I hate mornings, afternoon is better", "I work at Acme",
             "Bob moved to Rome last year"]

    async def memory(together: bool) -> set[tuple[str, str, bool]]:
        name = f"{unique_name}_{'one' if together else 'two'}"
        mode = "on" if together else "off"
        settings = agent_settings.model_copy(update={"infer_with_extraction": mode, "graph_name": name})
        svc = await build_memory_service(settings, make_language_model(settings), agents_embedder,
                                         vector_schema=name)
        try:
            for text in texts:
                await svc.observe(text)
            await InferenceAgent(svc, settings, Ownership.solo("w1")).drain()
            return {(s.sentence(), s.source or "", s.negated) for s in await svc.graph.recent_statements(50)}
        finally:
            await svc.clear()
            await svc.close()

    one, two = await memory(True), await memory(False)
    assert one == two
    # "mornings" is the concept "morning" the first observation made, in both: the dislike meets the preference.
    assert ("user dislikes morning", "user", False) in one
