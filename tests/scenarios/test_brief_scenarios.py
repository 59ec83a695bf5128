"""The session brief after the conversations with updates (issue 30, item 4).

Each conversation of ``updates.yaml`` is played as ``bench/scenarios.py`` plays it (the real ``MemoryService``
on the embedded databases, the offline model, the inference, validation and consolidation workers), then
briefed: for the team, about the subject of its answer, since the start, and within the smallest budget.
Every brief must state only current facts (each statement it states is current, none is a side of a
conflict it lists, and a value the answer rejects is stated as a fact only where the answer's own evidence
states it too: "Maria does not work at Contoso"), list the open conflicts, cite ids on every line and stay
within its budget. Then the facts holding the answer are retracted: the next brief no longer states them and
lists the retraction among its changes.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.model.brief import SessionBrief
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.truth.brief import MIN_BUDGET, estimate_tokens

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_scenarios", REPO / "bench" / "scenarios.py")
assert _spec is not None and _spec.loader is not None
scenarios = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = scenarios  # its dataclasses look their module up while being defined
_spec.loader.exec_module(scenarios)

SHORT_ID = re.compile(r"\b[a-z]{2,5}-[0-9a-f]{8}\b")


async def _not_current(brief: SessionBrief, service: MemoryService) -> list[str]:
    """What is wrong with any brief: its budget, a line citing no id, a fact that is not current."""
    found = []
    if brief.tokens != estimate_tokens(brief.text) or brief.tokens > brief.budget:
        found.append(f"{brief.tokens} tokens for a budget of {brief.budget}")
    found += [f"a line cites no id: {line!r}" for line in brief.text.splitlines()[1:]
              if line.startswith("  - ") and not SHORT_ID.search(line)]
    ids = [i for fact in brief.facts for i in fact.ids]
    for item in await service.load(ids):
        if item["superseded_by"] or item["retracted_by"] or item["derived_from_retracted"] or item["summary"]:
            found.append(f"stated as a fact, not current: {item['subject']} {item['predicate']} {item['object']}")
    if sides := {i for conflict in brief.conflicts for i in conflict.ids} & set(ids):
        found.append(f"a side of an open conflict stated as a fact: {sorted(sides)}")
    return found


def _rejected(brief: SessionBrief, subject: str, reject: list[str], evidence: list[str]) -> list[str]:
    """Facts about ``subject`` stating a value the answer rejects, unless the answer's evidence states it too
    ("bob lives in Rome" is no wrong answer to where alice lives)."""
    return [f"states {value!r}, which the answer does not: {fact.line.strip()}"
            for value in reject for fact in brief.facts
            if fact.subject.casefold() == subject.casefold() and value.casefold() in fact.line.casefold()
            and not any(value.casefold() in e.casefold() for e in evidence)]


async def _check(scenario: Any, service: MemoryService) -> list[str]:
    """Everything wrong with the briefs of one played conversation (empty when nothing is)."""
    answer = await service.remember(scenario.question)
    evidence = scenarios.sections(answer.text).get("Evidence", [])
    expect = scenario.expect.casefold()
    team = await service.brief()
    found = await _not_current(team, service)
    facts = [fact for fact in team.facts if expect in fact.line.casefold()]
    conflicts = [c for c in team.conflicts if expect in c.line.casefold()]
    if not facts and not conflicts:
        return [*found, f"the current answer is not in the brief:\n{team.text}"]
    if conflicts:
        assert len(conflicts[0].ids) == 2 and "1 open conflict" in team.text.partition("\n")[0]
    [subject] = {item["subject"] for item in await service.load(facts[0].ids if facts else conflicts[0].ids[:1])}
    found += _rejected(team, subject, scenario.reject, evidence)
    about = await service.brief(subject)
    found += await _not_current(about, service) + _rejected(about, subject, scenario.reject, evidence)
    if not any(expect in line.casefold() for line in [f.line for f in about.facts] + [c.line for c in about.conflicts]):
        found.append(f"the current answer is not in the brief about {subject}:\n{about.text}")
    # Since the start: what was replaced is listed as a change, with what replaced it, never as a fact.
    since = await service.brief(since=0)
    found += await _not_current(since, service) + _rejected(since, subject, scenario.reject, evidence)
    if since.changes and not all(len(change.ids) == 2 for change in since.changes):
        found.append(f"a change without both its ids: {since.changes}")
    tight = await service.brief(budget=MIN_BUDGET)
    found += await _not_current(tight, service)
    if not tight.facts and not tight.conflicts:
        found.append(f"the smallest budget holds no fact or conflict:\n{tight.text}")

    # Taken back: no longer stated, and listed as a change since the start.
    taken = [i for fact in facts for i in fact.ids]
    for statement_id in taken:
        await service.retract(statement_id, "wrong, says the test")
    after = await service.brief(since=0)
    found += await _not_current(after, service)
    if stated := set(taken) & {i for fact in after.facts for i in fact.ids}:
        found.append(f"retracted, still stated: {sorted(stated)}")
    retracted = {i for change in after.changes if change.kind == "retracted" for i in change.ids}
    if not set(taken) <= retracted:
        found.append(f"retractions missing from the changes:\n{after.text}")
    return found


async def test_the_brief_states_only_current_facts_after_each_conversation_with_updates(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str,
) -> None:
    base = Settings(llm="offline", falkordb_port=falkordb_server.port, database_url=postgres_url)
    embedder = make_embedder(base)
    problems: dict[str, list[str]] = {}
    conflicts = 0
    for scenario in scenarios.load():
        name = f"brief_{uuid.uuid4().hex[:12]}"
        settings = base.model_copy(update={"graph_name": name})
        service = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema=name)
        try:
            await scenarios.play(scenario, service)
            conflicts += len((await service.brief()).conflicts)
            if found := await _check(scenario, service):
                problems[scenario.name] = found
        finally:
            await service.clear()
            await service.close()
    assert problems == {}
    assert conflicts == 1  # "two agents disagree with no cue": the one conversation the policy leaves open
