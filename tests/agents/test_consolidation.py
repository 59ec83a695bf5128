"""The consolidation worker on a real store: cumulative summaries DERIVED_FROM what they rest on."""

from __future__ import annotations

import time

from mnemonet.agents import ConsolidationAgent, Ownership
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

HOBBIES = ["chess", "jazz", "tea", "hiking", "opera", "sushi", "tennis", "poetry", "cycling", "baking",
           "rowing", "karaoke", "origami", "fishing", "painting", "skiing", "gardening", "juggling"]


async def test_summaries_build_on_each_other(service: MemoryService, agent_settings: Settings) -> None:
    for hobby in HOBBIES[:12]:
        await service.observe(f"I like {hobby}")
    agent = ConsolidationAgent(service, agent_settings, Ownership.solo("c1"), make_language_model(agent_settings))

    assert await agent.drain() == 1  # only "user" gained >= 5 statements
    [first] = await _summaries(service)
    assert first.subject == "user" and len(first.derived_from) == 12
    assert all(h in first.summary for h in HOBBIES[:12])
    hits = await service.vectors.keyword("chess jazz tea", 5, ["summary"], None)
    assert [h.id for h in hits] == [first.id]  # embedded as kind "summary"

    assert await agent.drain() == 0  # nothing new: no second summary
    fresh = [st.id for hobby in HOBBIES[12:] for st in (await service.observe(f"I like {hobby}")).statements]
    assert await agent.drain() == 1

    second = next(s for s in await _summaries(service) if s.id != first.id)
    assert sorted(second.derived_from) == sorted([first.id, *fresh])  # the 6 new ones and the previous summary
    assert all(h in second.summary for h in HOBBIES)  # cumulative: built on the first
    assert (await service.graph.counts())["Statement"] == 18 + 2  # nothing modified or deleted
    assert agent.stats()["llm_calls"] == 2 and agent.stats()["claims_made"] == 2


async def test_cycles_wait_for_quiet_but_not_forever(service: MemoryService, agent_settings: Settings) -> None:
    settings = agent_settings.model_copy(update={
        "consolidation_quiet_period": 10.0, "consolidation_max_interval": 60.0})
    agent = ConsolidationAgent(service, settings, Ownership.solo("c1"), make_language_model(settings))
    assert agent.due()  # never ran, nothing heard: run
    agent.notify({"type": "claim", "ids": ["st-1"]})
    agent.last_cycle = time.monotonic()
    assert not agent.due()  # writes just happened and a cycle just ran
    agent.last_cycle -= 61.0
    assert agent.due()  # continuous writes: at least every max_interval
    agent.last_cycle = time.monotonic()
    agent.last_event -= 11.0
    assert agent.due()  # quiet for the quiet period


async def _summaries(service: MemoryService):
    rows = await service.graph.read_query("MATCH (s:Statement {predicate: 'has_summary'}) RETURN s.id AS id")
    return await service.graph.get_statements([r["id"] for r in rows])
