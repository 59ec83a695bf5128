"""Issue 16 end to end: what the offline parser reads about change goes through observe and validation,
and the answer gives the current fact."""

from __future__ import annotations

from mnemonet.agents import Ownership, ValidationAgent
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService
from mnemonet.settings import Settings


async def _validate(service: MemoryService, settings: Settings) -> None:
    agent = ValidationAgent(service, settings, Ownership.solo("v1"), make_language_model(settings))
    await agent.drain()


async def _superseded(service: MemoryService) -> set[str]:
    return {s.sentence() for s in await service.graph.recent_statements(100) if s.superseded_by}


async def test_job_change(service: MemoryService, agent_settings: Settings) -> None:
    await service.observe("I work at Google", source="sam")
    await service.observe("I used to work at Google, but now I work at Microsoft", source="sam")
    await _validate(service, agent_settings)
    assert "sam works at Google" in await _superseded(service)
    answer = await service.remember("where does sam work?")
    assert answer.text.startswith("From memory: sam works at Microsoft ["), answer.text


async def test_moved_city(service: MemoryService, agent_settings: Settings) -> None:
    await service.observe("I live in Boston", source="sam")
    await service.observe("I moved from Boston to Seattle in 2019", source="sam")
    await _validate(service, agent_settings)
    assert "sam lives in Boston" in await _superseded(service)
    answer = await service.remember("where does sam live?")
    assert answer.text.startswith("From memory: sam lives in Seattle ["), answer.text


async def test_birthday(service: MemoryService, agent_settings: Settings) -> None:
    first = await service.observe("Tom's birthday is on July 5th", source="sam")
    second = await service.observe("Sorry, Tom's birthday is on July 4th", source="sam")
    assert [(s.subject, s.predicate, s.object) for s in second.statements] == [("Tom", "has_birthday", "July 4th")]
    await _validate(service, agent_settings)
    # A birthday does not change (temporal: false in the predicate schema): two values contradict.
    rows = await service.graph.read_query(
        "MATCH (a:Statement)-[:CONTRADICTS]-(b:Statement) RETURN a.id AS a, b.id AS b"
    )
    assert {(r["a"], r["b"]) for r in rows} >= {(second.statements[0].id, first.statements[0].id)}
    answer = await service.remember("when is Tom's birthday?")
    assert answer.text.startswith("From memory: Tom has birthday July 4th ["), answer.text
