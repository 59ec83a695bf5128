"""Issue 32 end to end: a change said in other words, read by the offline model, retires the fact it
changes through observe and the validation worker; a fact that merely coexists retires nothing."""

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


async def test_changes_in_other_words_retire_what_they_change(service: MemoryService, agent_settings: Settings) -> None:
    said = [
        ("sam", "My manager is Carol", "Frank took over from Carol as my manager"),
        ("ann", "I work at Initech", "I started a new job at Hooli last month"),
        ("kim", "The budget is 50k", "The budget was cut to 20k"),
        ("lou", "The cafe on Main Street is open", "The cafe on Main Street closed down"),
        ("ivy", "Tom is a junior engineer", "Tom was promoted to senior engineer"),
        ("ned", "I use Vim", "I switched from Vim to Emacs"),
    ]
    for source, before, _ in said:
        await service.observe(before, source=source)
    for source, _, after in said:
        await service.observe(after, source=source)
    await _validate(service, agent_settings)
    # A new title lands on is_a, which holds many values ("an engineer and a cook"): it leads the answers
    # by being newer on the same slot, and retires nothing.
    assert await _superseded(service) == {
        "sam has manager Carol", "ann works at Initech", "budget has value 50k", "cafe on Main Street has status open",
        "ned uses Vim",
    }


async def test_another_source_reporting_a_change_in_other_words_wins(
    service: MemoryService, agent_settings: Settings
) -> None:
    # Equal trust, seconds apart: only the text's own cue ("relocated": a change) says which replaces which.
    await service.observe("Alice lives in Rome", source="bob")
    moved = await service.observe("I relocated to Naples", source="alice")
    assert [(s.predicate, s.object, s.revision) for s in moved.statements] == [("lives_in", "Naples", "change")]
    await _validate(service, agent_settings)
    assert "alice lives in Rome" in await _superseded(service)  # one concept, "Alice" and "alice"
    assert await service.get_unresolved_contradictions(10) == []


async def test_coexisting_facts_retire_nothing(service: MemoryService, agent_settings: Settings) -> None:
    await service.observe("I like short meetings", source="sam")
    await service.observe("I hate meetings on Fridays", source="sam")  # a narrower, different fact
    await service.observe("The server has 16 cores", source="ops")
    await service.observe("The server has 64 GB of memory", source="ops")  # another unit
    await service.observe("My manager is Carol", source="kim")
    await service.observe("My sister's new manager is Frank", source="kim")  # another person's slot
    await _validate(service, agent_settings)
    assert await _superseded(service) == set()
    assert await service.get_unresolved_contradictions(10) == []
