"""Retract: taking a statement or an observation back by appending a record, on the real embedded databases."""

from __future__ import annotations

import pytest

from mnemonet.model.errors import Forbidden
from mnemonet.model.ids import short_id
from mnemonet.service import MemoryService
from mnemonet.store.graph_errors import UnknownReference

QUESTION = "what are my meeting preferences?"


async def _meetings(service: MemoryService) -> tuple[str, str, str]:
    """The meeting scenario: (morning statement id, afternoon statement id, afternoon observation id)."""
    first = await service.observe("I prefer morning meetings", source="user")
    second = await service.observe("Actually I prefer afternoon meetings", source="user")
    [morning] = [s for s in first.statements if s.predicate == "prefers"]
    [afternoon] = [s for s in second.statements if s.predicate == "prefers"]
    assert "morning" in morning.object and "afternoon" in afternoon.object
    return morning.id, afternoon.id, second.observation_id


async def test_retracting_the_correction_brings_the_earlier_answer_back_with_the_retraction_cited(
    service: MemoryService,
) -> None:
    morning, afternoon, _ = await _meetings(service)
    before = await service.remember(QUESTION)
    assert "afternoon" in before.text.partition("\n")[0]

    result = await service.retract(afternoon, "said by mistake", source="alice", any_source=True)  # an admin
    assert result.created and result.target_id == afternoon and result.kind == "statement"
    assert result.source == "alice" and result.reason == "said by mistake"

    answer = await service.remember(QUESTION)
    lead, _, rest = answer.text.partition("\n")
    assert "morning" in lead and "afternoon" not in lead
    assert result.retraction_id in answer.cited and afternoon not in answer.cited[:1]
    retracted_part = rest.partition("Retracted:")[2]
    assert f"({short_id(afternoon)})" in retracted_part and "said by mistake" in retracted_part
    assert "alice" in retracted_part
    assert all(s.id != afternoon for s in answer.recall.statements + answer.recall.superseded)
    assert [r.target_id for r in answer.recall.retractions] == [afternoon]
    # Append-only: the statement is still in the graph, marked.
    [view] = await service.graph.get_statements([afternoon])
    assert view.retracted_by == [result.retraction_id]
    assert morning in {s.id for s in answer.recall.statements}


async def test_a_superseding_statement_retracted_no_longer_supersedes(service: MemoryService) -> None:
    morning = await service.claim("user prefers morning meetings", source="user", idempotency_key="m1")
    afternoon = await service.claim("user prefers afternoon meetings instead of morning meetings", source="user",
                                    idempotency_key="m2")
    assert afternoon.supersedes == [morning.statement_id]
    await service.retract(afternoon.statement_id, "wrong person", source="user")
    [view] = await service.graph.get_statements([morning.statement_id])
    assert view.superseded_by == []  # superseded only by a retracted statement: current again
    answer = await service.remember(QUESTION)
    assert "morning" in answer.text.partition("\n")[0]
    current = [s.id for s in await service.graph.statements_about("user", limit=50)]
    assert morning.statement_id in current and afternoon.statement_id not in current


async def test_a_source_retracts_only_its_own_items_but_an_admin_any(service: MemoryService) -> None:
    said = await service.claim("Henrietta is allergic to peanuts", source="bob")
    seen = await service.observe("Henrietta told me she is allergic to peanuts", source="bob")
    for item in (said.statement_id, seen.observation_id):
        for other in ("alice", "Henrietta"):  # another source, and the statement's subject: neither may
            with pytest.raises(Forbidden, match="written by 'bob'"):
                await service.retract(item, "not true", source=other)
    assert await service.graph.retractions_of([said.statement_id, seen.observation_id]) == []
    assert (await service.retract(said.statement_id, "I was wrong", source="bob")).source == "bob"
    assert (await service.retract(seen.observation_id, "moderated", source="ops", any_source=True)).source == "ops"


async def test_retract_is_idempotent(service: MemoryService) -> None:
    _, afternoon, _ = await _meetings(service)
    first = await service.retract(afternoon, "mistake", source="user")
    again = await service.retract(afternoon, "mistake", source="user")
    assert again.retraction_id == first.retraction_id and not again.created
    other = await service.retract(afternoon, "another reason", source="ops", any_source=True)  # once, whoever may
    assert other.retraction_id == first.retraction_id and not other.created and other.source == "user"
    rows = await service.graph.read_query("MATCH (r:Retraction)-[x:RETRACTS]->() RETURN count(x) AS n")
    assert rows == [{"n": 1}]


async def test_retracting_an_observation_flags_what_was_derived_only_from_it(service: MemoryService) -> None:
    morning, afternoon, afternoon_obs = await _meetings(service)
    result = await service.retract(afternoon_obs, "not what I said", source="user")
    assert result.kind == "observation" and afternoon in result.flagged
    [view] = await service.graph.get_statements([afternoon])
    assert view.derived_from_retracted and view.retracted_by == []
    answer = await service.remember(QUESTION)
    assert "morning" in answer.text.partition("\n")[0]
    hits = await service.search("afternoon meetings", k=20)
    assert afternoon_obs not in {h.id for h in hits} and afternoon not in {h.id for h in hits}
    assert morning in {s.id for s in answer.recall.statements}
    # Never a basis for a new claim, neither found by search nor named.
    claim = await service.claim("user likes afternoon meetings", source="user")
    assert afternoon_obs not in claim.derived_from and afternoon not in claim.derived_from
    with pytest.raises(ValueError, match="retracted"):
        await service.claim("user enjoys afternoon meetings", source="user", basis=[afternoon_obs])


async def test_a_retracted_side_closes_its_contradiction(service: MemoryService) -> None:
    tea = await service.claim("Carol likes tea", source="carol", idempotency_key="t1")
    coffee = await service.claim("Carol likes coffee", source="dave", idempotency_key="t2")
    assert await service.link_statements("CONTRADICTS", coffee.statement_id, tea.statement_id, "clash", "validator")
    assert len(await service.get_unresolved_contradictions()) == 1
    await service.retract(coffee.statement_id, "dave was wrong", source="dave")
    assert await service.get_unresolved_contradictions() == []
    [view] = await service.graph.get_statements([tea.statement_id])
    assert view.contradicted_by == []


@pytest.mark.parametrize(
    ("target", "reason", "error", "message"),
    [
        ("st_unknown", "why", UnknownReference, "id"),
        ("", "why", ValueError, "id"),
        ("bad id with spaces", "why", ValueError, "id"),
        (None, "why", ValueError, "id"),
        ("PLACEHOLDER", "", ValueError, "reason"),
        ("PLACEHOLDER", "x" * 2001, ValueError, "reason"),
        ("PLACEHOLDER", 5, ValueError, "reason"),
    ],
)
async def test_bad_retractions_are_refused_and_write_nothing(
    service: MemoryService, target: object, reason: object, error: type[Exception], message: str,
) -> None:
    _, afternoon, _ = await _meetings(service)
    with pytest.raises(error, match=message):
        await service.retract(afternoon if target == "PLACEHOLDER" else target, reason, source="user")  # type: ignore[arg-type]
    rows = await service.graph.read_query("MATCH (r:Retraction) RETURN count(r) AS n")
    assert rows == [{"n": 0}]


async def test_a_concept_or_a_record_cannot_be_retracted(service: MemoryService) -> None:
    await _meetings(service)
    [concept] = await service.get_concepts(limit=1)
    with pytest.raises(ValueError, match="only a statement or an observation"):
        await service.retract(concept.id, "no", source="user")


HOBBIES = ["chess", "jazz", "tea", "hiking", "opera"]
SUMMARIES = "consolidation-agent"


async def _hobbies(service: MemoryService) -> dict[str, str]:
    """One observation per hobby; hobby -> (statement id, observation id) of "user likes <hobby>"."""
    out = {}
    for hobby in HOBBIES:
        written = await service.observe(f"I like {hobby}", source="user")
        [liked] = [s for s in written.statements if hobby in s.object]
        out[hobby] = liked.id
        out[f"obs:{hobby}"] = written.observation_id
    return out


async def test_consolidation_never_sees_a_retracted_statement(service: MemoryService) -> None:
    liked = await _hobbies(service)
    await service.retract(liked["chess"], "never liked it", source="user")
    await service.retract(liked["obs:jazz"], "not what I said", source="user")  # jazz: derived only from it

    # Three current statements remain: not enough fresh ones for min_new = 4.
    assert await service.pending_consolidation(SUMMARIES, 4) == []
    [work] = await service.pending_consolidation(SUMMARIES, 3)
    stated = {s.id for s in work.statements}
    assert stated == {liked[h] for h in ("tea", "hiking", "opera")}


async def test_a_retraction_after_a_summary_makes_the_concept_due_again(service: MemoryService) -> None:
    liked = await _hobbies(service)
    [work] = await service.pending_consolidation(SUMMARIES, 5)
    await service.record_summary(work.concept_id, "user likes chess, jazz, tea, hiking and opera",
                                 [s.id for s in work.statements], SUMMARIES)
    assert await service.pending_consolidation(SUMMARIES, 2) == []  # covered (each hobby is one statement)

    await service.retract(liked["chess"], "never liked it", source="user")
    [again] = await service.pending_consolidation(SUMMARIES, 2)  # nothing fresh, but the summary is stale
    assert again.concept_id == work.concept_id
    assert liked["chess"] not in {s.id for s in again.statements} and len(again.statements) == 4


async def test_the_predicate_profile_does_not_count_retracted_values(service: MemoryService) -> None:
    acme = await service.claim("Dana works at Acme", source="alice")
    globex = await service.claim("Dana works at Globex", source="alice")
    assert acme.statement is not None and globex.statement is not None
    predicate = acme.statement.predicate
    before = await service.predicate_profile(predicate, [])
    assert (before.subjects, before.multi_subjects) == (1, 1)

    await service.retract(globex.statement_id, "wrong company", source="alice")
    after = await service.predicate_profile(predicate, [])
    assert (after.subjects, after.multi_subjects) == (1, 0)
    await service.retract(acme.statement_id, "wrong person", source="alice")
    gone = await service.predicate_profile(predicate, [])
    assert (gone.subjects, gone.multi_subjects) == (0, 0)


async def test_a_contradiction_by_a_retracted_statement_does_not_make_a_summary_stale(service: MemoryService) -> None:
    liked = await _hobbies(service)
    [work] = await service.pending_consolidation(SUMMARIES, 5)
    await service.record_summary(work.concept_id, "user likes chess, jazz, tea, hiking and opera",
                                 [s.id for s in work.statements], SUMMARIES)
    denial = await service.claim("user dislikes chess", source="bob")
    await service.link_statements("CONTRADICTS", denial.statement_id, liked["chess"], "likes or not",
                                  "validation-agent")
    assert work.concept_id in {w.concept_id for w in await service.pending_consolidation(SUMMARIES, 2)}

    await service.retract(denial.statement_id, "bob was joking", source="bob")
    assert await service.pending_consolidation(SUMMARIES, 2) == []  # the summary states what is current again


async def test_a_retracted_summary_makes_the_concept_due_again(service: MemoryService) -> None:
    await _hobbies(service)
    [work] = await service.pending_consolidation(SUMMARIES, 5)
    summary = await service.record_summary(work.concept_id, "user likes chess, jazz, tea, hiking and opera",
                                           [s.id for s in work.statements], SUMMARIES)
    assert await service.pending_consolidation(SUMMARIES, 2) == []

    await service.retract(summary.id, "the summary got it wrong", source="user", any_source=True)  # an admin
    # A retracted summary covers nothing: its statements are fresh again, so a new summary is due.
    [again] = await service.pending_consolidation(SUMMARIES, 5)
    assert again.concept_id == work.concept_id and len(again.statements) == 5


async def test_retracted_statements_are_not_handed_to_validation(service: MemoryService) -> None:
    liked = await _hobbies(service)
    await service.retract(liked["chess"], "never liked it", source="user")
    pending = {s.id for s in await service.pending_statements("validation-agent", limit=100)}
    assert liked["tea"] in pending and liked["chess"] not in pending
