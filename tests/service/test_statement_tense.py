"""Tense and valid_at go from the offline model's triples through the graph and back (issue 16, Build 2)."""

from __future__ import annotations

from datetime import date

from mnemonet.service import MemoryService


async def test_tense_and_date_are_stored_and_read_back(service: MemoryService) -> None:
    result = await service.observe(
        "I used to work at Google, but now I work at Microsoft. I moved from Boston to Seattle in 2019.", source="sam"
    )
    stored = {(s.subject, s.predicate, s.object): (s.tense, s.valid_at) for s in result.statements}
    assert stored == {
        ("sam", "works_at", "Google"): ("past", None),
        ("sam", "works_at", "Microsoft"): ("present", None),
        ("sam", "lives_in", "Boston"): ("past", "2019"),
        ("sam", "lives_in", "Seattle"): ("present", "2019"),
    }
    recent = {(s.object, s.tense, s.valid_at) for s in await service.get_recent_statements(10)}
    assert ("Google", "past", None) in recent and ("Seattle", "present", "2019") in recent


async def test_relative_dates_resolve_against_the_day_of_the_observation(service: MemoryService) -> None:
    result = await service.observe("I will move to Lisbon next year", source="sam")
    [plan] = result.statements
    assert (plan.predicate, plan.object, plan.tense) == ("lives_in", "Lisbon", "future")
    assert plan.valid_at == str(date.today().year + 1)
    assert plan.confidence < 0.9  # a plan is not a present fact


async def test_a_claim_keeps_present_tense_by_default(service: MemoryService) -> None:
    claim = await service.claim("Acme employs Alice")
    [statement] = [s for s in await service.get_recent_statements(5) if s.id == claim.statement_id]
    assert (statement.tense, statement.valid_at) == ("present", None)
