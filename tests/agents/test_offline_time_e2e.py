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


async def test_corrected_birthday_supersedes(service: MemoryService, agent_settings: Settings) -> None:
    first = await service.observe("Tom's birthday is July 4th", source="sam")
    second = await service.observe("Sorry, Tom's birthday is July 5th", source="sam")
    assert [(s.subject, s.predicate, s.object, s.revision) for s in second.statements] == [
        ("Tom", "has_birthday", "July 5th", "correction")]
    await _validate(service, agent_settings)
    # A birthday does not change (temporal: false), but "Sorry, ..." says the speaker corrects itself.
    rows = await service.graph.read_query(
        "MATCH (a:Statement)-[r:SUPERSEDES]->(b:Statement) RETURN a.id AS a, b.id AS b, r.reason AS reason"
    )
    assert [(r["a"], r["b"]) for r in rows] == [(second.statements[0].id, first.statements[0].id)]
    assert "sam corrects its own has_birthday" in rows[0]["reason"]
    answer = await service.remember("when is Tom's birthday?")
    assert answer.text.startswith("From memory: Tom's birthday is July 5th ["), answer.text
    assert "July 4th" not in answer.text.partition("\n")[0]


async def test_uncued_restatement_of_a_fact_that_does_not_change_stays_a_conflict(
    service: MemoryService, agent_settings: Settings
) -> None:
    await service.observe("Tom's birthday is July 4th", source="sam")
    await service.observe("Tom's birthday is July 5th", source="sam")
    await _validate(service, agent_settings)
    assert await _superseded(service) == set()
    [conflict] = await service.get_unresolved_contradictions(10)
    assert {conflict.a.object, conflict.b.object} == {"July 4th", "July 5th"}


async def test_likes_then_dislikes_is_open_unless_the_speaker_says_it_changed(
    service: MemoryService, agent_settings: Settings
) -> None:
    await service.observe("I like sushi", source="sam")
    await service.observe("I hate sushi", source="sam")  # no cue: an exclusivity pair stays open
    await service.observe("I like jazz", source="kim")
    await service.observe("Actually I hate jazz", source="kim")  # a correction: the newer stands
    await _validate(service, agent_settings)
    assert await _superseded(service) == {"kim likes jazz"}
    assert {frozenset((c.a.sentence(), c.b.sentence())) for c in await service.get_unresolved_contradictions(10)} \
        == {frozenset(("sam likes sushi", "sam dislikes sushi"))}
