"""The consolidation worker on a real store: summaries of current knowledge only, one current per concept."""

from __future__ import annotations

import time

from mnemonet.agents import ConsolidationAgent, Ownership
from mnemonet.llm import make_language_model
from mnemonet.model.views import StatementView
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

HOBBIES = ["chess", "jazz", "tea", "hiking", "opera", "sushi", "tennis", "poetry", "cycling", "baking",
           "rowing", "karaoke", "origami", "fishing", "painting", "skiing", "gardening", "juggling"]


def _agent(service: MemoryService, settings: Settings) -> ConsolidationAgent:
    return ConsolidationAgent(service, settings, Ownership.solo("c1"), make_language_model(settings))


async def test_a_new_summary_supersedes_the_previous_one(service: MemoryService, agent_settings: Settings) -> None:
    for hobby in HOBBIES[:12]:
        await service.observe(f"I like {hobby}")
    agent = _agent(service, agent_settings)

    assert await agent.drain() == 1  # only "user" gained >= 5 statements
    [first] = await _summaries(service)
    assert first.subject == "user" and len(first.derived_from) == 12
    assert all(h in first.summary for h in HOBBIES[:12])  # type: ignore[operator]
    await service.indexer.drained()  # indexed behind the write (index_in_background)
    hits = await service.vectors.keyword("chess jazz tea", 5, ["summary"], None)
    assert [h.id for h in hits] == [first.id]  # embedded as kind "summary"

    assert await agent.drain() == 0  # nothing new: no second summary
    for hobby in HOBBIES[12:]:
        await service.observe(f"I like {hobby}")
    assert await agent.drain() == 1

    summaries = {s.id: s for s in await _summaries(service)}
    [current] = [s for s in summaries.values() if not s.superseded_by]  # one current summary per concept
    assert summaries[first.id].superseded_by == [current.id]
    assert len(current.derived_from) == 18 and first.id not in current.derived_from  # built on statements only
    assert all(h in current.summary for h in HOBBIES)  # type: ignore[operator]
    assert (await service.graph.counts())["Statement"] == 18 + 2  # nothing modified or deleted
    assert agent.stats()["llm_calls"] == 2 and agent.stats()["claims_made"] == 2
    # A superseded summary leaves search.
    assert first.id not in {h.id for h in await service.search("chess jazz tea", k=20)}


async def test_summaries_never_state_superseded_facts(service: MemoryService, agent_settings: Settings) -> None:
    morning = (await service.observe("I prefer morning meetings")).statements[0]
    for hobby in HOBBIES[:4]:
        await service.observe(f"I like {hobby}")
    agent = _agent(service, agent_settings)
    assert await agent.drain() == 1
    [first] = await _summaries(service)
    assert "morning meetings" in first.summary  # type: ignore[operator]  # current when written

    afternoon = (await service.observe("I prefer afternoon meetings")).statements[0]
    await service.link_statements("SUPERSEDES", afternoon.id, morning.id, "newer preference", "validation-agent")
    # One new statement is below min_new, but the summary now rests on a superseded one: it is replaced.
    assert await agent.drain() == 1
    summaries = {s.id: s for s in await _summaries(service)}
    [current] = [s for s in summaries.values() if not s.superseded_by]
    assert "afternoon meetings" in current.summary and "morning" not in current.summary  # type: ignore[operator]
    assert morning.id not in current.derived_from and summaries[first.id].superseded_by == [current.id]
    assert await agent.drain() == 0  # settled: no summary loop

    answer = await service.remember("what are my meeting preferences?")
    assert not answer.recall.statements[0].summary  # summaries are context, after the statements
    lead = answer.text.partition("\n")[0]
    assert "afternoon" in lead and "morning" not in lead


async def test_conflicts_between_sources_are_summarised_as_unresolved(
    service: MemoryService, agent_settings: Settings
) -> None:
    acme = (await service.claim("Dana works at Acme", source="alice")).statement
    globex = (await service.claim("Dana works at Globex", source="bob")).statement
    assert acme is not None and globex is not None
    await service.link_statements("CONTRADICTS", globex.id, acme.id, "one employer at a time", "validation-agent")
    for place in ("Paris", "Rome", "Oslo"):
        await service.claim(f"Dana likes {place}", source="alice")
    agent = _agent(service, agent_settings.model_copy(update={"consolidation_min_new_statements": 3}))

    assert await agent.drain() >= 1
    [dana] = [s for s in await _summaries(service) if s.subject == "Dana"]
    text = dana.summary or ""
    assert "alice says Dana works at Acme (" in text and "bob says Dana works at Globex (" in text
    assert "-- unresolved" in text and {acme.id, globex.id} <= set(dana.derived_from)
    assert "Dana: Dana works at" not in text  # neither side stated as a plain fact


async def test_cycles_wait_for_quiet_but_not_forever(service: MemoryService, agent_settings: Settings) -> None:
    settings = agent_settings.model_copy(
        update={"consolidation_quiet_period": 10.0, "consolidation_max_interval": 60.0})
    agent = _agent(service, settings)
    assert agent.due()  # never ran, nothing heard: run
    agent.notify({"type": "claim", "ids": ["st-1"]})
    agent.last_cycle = time.monotonic()
    assert not agent.due()  # writes just happened and a cycle just ran
    agent.last_cycle -= 61.0
    assert agent.due()  # continuous writes: at least every max_interval
    agent.last_cycle = time.monotonic()
    agent.last_event -= 11.0
    assert agent.due()  # quiet for the quiet period


async def _summaries(service: MemoryService) -> list[StatementView]:
    rows = await service.graph.read_query("MATCH (s:Statement {predicate: 'has_summary'}) RETURN s.id AS id")
    return await service.graph.get_statements([r["id"] for r in rows])
