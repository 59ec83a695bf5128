"""The session brief's rules on plain data: only current facts, open conflicts, changes, ids, the budget."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mnemonet.model.brief import SessionBrief
from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import INFERENCE_SOURCE
from mnemonet.model.views import RetractionView, StatementView
from mnemonet.settings import Settings
from mnemonet.truth.brief import MIN_BUDGET, BriefMaterial, ConceptUse, compose_brief, estimate_tokens
from mnemonet.truth.vocabulary import default_vocabulary

POLICY = Settings()
DAY = 86_400_000
SHORT_ID = re.compile(r"\b[a-z]{2,5}-[0-9a-f]{8}\b")


def st(n: int, subject: str, predicate: str, obj: str, source: str = "user", at: int = DAY,
       **more: Any) -> StatementView:
    """A statement with id ``st-0000000n`` + padding (short ids stay distinct)."""
    return StatementView(id=f"st-{n:08x}{'0' * 24}", subject=subject, predicate=predicate, object=obj,
                         confidence=1.0, source=source, created_at=at, **more)


def linked(a: StatementView, b: StatementView) -> tuple[StatementView, StatementView]:
    """``a`` and ``b`` with the CONTRADICTS link between them, as the validation worker writes it."""
    return a.model_copy(update={"contradicted_by": [b.id]}), b.model_copy(update={"contradicted_by": [a.id]})


def brief(statements: list[StatementView], subject: str | None = None, budget: int = 800, **more: Any) -> SessionBrief:
    material = BriefMaterial(subject=subject, subjects=[subject] if subject else ["user"], as_of=10 * DAY,
                             statements=statements, **more)
    return compose_brief(material, default_vocabulary(), POLICY, budget)


def test_superseded_retracted_withdrawn_and_summaries_are_never_facts() -> None:
    now = st(1, "user", "lives_in", "Lisbon")
    gone = [
        st(2, "user", "lives_in", "Paris", superseded_by=[now.id]),
        st(3, "user", "works_at", "Acme", retracted_by=["rtr-1"]),
        st(4, "user", "likes", "tea", derived_from_retracted=True),
        st(5, "user", "has_summary", "user", summary="user lives in Paris"),
    ]
    made = brief([now, *gone])
    assert [f.ids for f in made.facts] == [[now.id]]
    assert "Lisbon" in made.text and not any(word in made.text for word in ("Paris", "Acme", "likes tea"))
    assert made.facts[0].line == "  - user lives in Lisbon (user; st-00000001)"


def test_a_contradiction_the_policy_settles_states_the_standing_side_and_says_the_change() -> None:
    old, new = linked(st(1, "user", "lives_in", "Paris", at=DAY), st(2, "user", "lives_in", "Lisbon", at=2 * DAY))
    made = brief([old, new], since=DAY + 1)
    assert [f.ids for f in made.facts] == [[new.id]] and made.conflicts == []
    [change] = made.changes
    assert change.ids == [old.id, new.id] and "the standing side of a contradiction" in change.line
    assert made.facts[0].new and made.facts[0].line.endswith("[new]")
    assert brief([old, new], since=2 * DAY + 1).changes == []  # settled before ``since``: no change since


def test_an_open_conflict_is_stated_only_as_a_conflict() -> None:
    a, b = linked(st(1, "Kim", "lives_in", "Oslo", source="alice", at=DAY),
                  st(2, "Kim", "lives_in", "Bergen", source="bob", at=DAY + 1000))
    made = brief([a, b, st(3, "Kim", "likes", "skiing")], subject="Kim")
    assert [f.sentence for f in made.facts] == ["Kim likes skiing"]
    [conflict] = made.conflicts
    assert conflict.ids == [a.id, b.id] and "unresolved" in conflict.line
    assert "alice says Kim lives in Oslo" in conflict.line and "bob says Kim lives in Bergen" in conflict.line
    assert made.text.partition("\n")[0].endswith("1 current fact, 1 open conflict.")


def test_a_workers_inference_speaks_for_whoever_said_what_it_was_drawn_from() -> None:
    drawn, said = linked(st(1, "Dana", "located_in", "Paris", source=INFERENCE_SOURCE, at=DAY, derived_from=["obs-1"]),
                         st(2, "Dana", "located_in", "Lisbon", source="alice", at=DAY + 1))
    assert len(brief([drawn, said]).conflicts) == 1  # two sources a millisecond apart: open
    made = brief([drawn, said], speakers={drawn.id: "alice"})  # alice correcting herself: the newer stands
    assert [f.ids for f in made.facts] == [[said.id]] and made.conflicts == []


def test_a_workers_twin_is_not_repeated_and_one_claim_is_one_line() -> None:
    base = st(1, "alice", "lives_in", "Rome", source="alice", derived_from=["obs-1"])
    twin = st(2, "alice", "located_in", "Rome", source=INFERENCE_SOURCE, derived_from=["obs-1"])
    again = st(3, "alice", "lives_in", "Rome", source="bob", derived_from=["obs-2"], at=2 * DAY)
    made = brief([base, twin, again])
    [fact] = made.facts
    assert fact.ids == [again.id, base.id]
    assert fact.line == "  - alice lives in Rome (bob, alice; st-00000003, st-00000001)"


def test_changes_since_say_what_was_replaced_and_taken_back() -> None:
    new = st(2, "user", "works_at", "Globex", at=3 * DAY)
    old = st(1, "user", "works_at", "Acme", at=DAY, superseded_by=[new.id])
    twin = st(3, "user", "employed_by", "Acme", source=INFERENCE_SOURCE, superseded_by=[new.id])
    taken = RetractionView(id="rtr-0000000a" + "0" * 24, target_id="st-0000000b" + "0" * 24, kind="statement",
                           reason="wrong person", source="bob", created_at=4 * DAY, target_text="user likes tea")
    made = brief([new], since=2 * DAY, superseded=[old, twin], retractions=[taken])
    assert [(c.kind, c.ids) for c in made.changes] == [("retracted", [taken.target_id, taken.id]),
                                                       ("superseded", [old.id, new.id])]
    assert "user works at Acme (st-00000001) -> user works at Globex (st-00000002)" in made.text
    assert "taken back: user likes tea (st-0000000b), by bob: wrong person (rtr-0000000a)" in made.text
    assert "Changed since" not in brief([new], superseded=[old], retractions=[taken]).text  # only with since


def test_every_line_cites_ids_and_the_text_stays_within_its_budget() -> None:
    facts = [st(i, "user", "likes", f"thing number {i}", at=DAY + i) for i in range(1, 80)]
    a = st(100, "Kim", "lives_in", "Oslo", source="alice", contradicted_by=["st-00000065" + "0" * 24])
    b = st(101, "Kim", "lives_in", "Bergen", source="bob", contradicted_by=[a.id])
    concepts = [ConceptUse(id="cpt-00000001" + "0" * 24, name="user", statements=79, searches=3)]
    for budget in (MIN_BUDGET, 150, 400, 2000):
        made = brief([*facts, a, b], budget=budget, concepts=concepts)
        assert made.tokens == estimate_tokens(made.text) <= budget
        if budget > MIN_BUDGET:  # each section gets its turn, the conflicts first
            assert made.conflicts and made.facts and made.concepts
        else:
            assert made.conflicts
        body = made.text.splitlines()[1:]
        assert all(SHORT_ID.search(line) for line in body if line.startswith("  - "))
        assert len(made.facts) + len(made.conflicts) + len(made.concepts) + made.omitted == 79 + 1 + 1
        assert (f"{made.omitted} more lines left out to stay within {budget} tokens" in made.text) == (made.omitted > 0)
    assert brief([*facts, a, b], budget=4000).omitted == 0


def test_a_budget_below_the_least_is_refused_and_a_long_subject_still_fits() -> None:
    with pytest.raises(InvalidInput, match="budget"):
        brief([], budget=MIN_BUDGET - 1)
    name = "x" * 200
    about = [st(1, name, "likes", "y" * 200), st(2, name, "likes", "tea")]
    made = brief(about, subject=name, budget=MIN_BUDGET)
    assert made.tokens <= MIN_BUDGET and made.omitted == 2  # the header names 60 characters of it; no fact fits
    assert made.text.startswith(f"What memory holds about {'x' * 57}... (as of")
    assert [f.sentence for f in brief(about, subject=name, budget=150).facts] == [f"{name} likes tea"]
    empty = brief([], subject="Zed")
    assert empty.text.startswith("Nothing in memory is about Zed") and empty.facts == []


def test_about_a_subject_only_its_own_conflicts_are_listed() -> None:
    a, b = linked(st(1, "Kim", "lives_in", "Oslo", source="alice"), st(2, "Kim", "lives_in", "Bergen", source="bob",
                                                                    at=DAY + 1))
    mine = st(3, "user", "likes", "tea")
    assert brief([mine], subject="user", partners=[a, b]).conflicts == []
    assert len(brief([mine], partners=[a, b]).conflicts) == 1  # the team's brief lists every open one


def test_a_change_the_rules_find_counts_before_the_validation_worker_links_it() -> None:
    old = st(1, "user", "lives_in", "Paris", at=DAY)
    new = st(2, "user", "lives_in", "Lisbon", at=2 * DAY, revision="change")
    likes = [st(3, "user", "likes", "tea", at=DAY), st(4, "user", "likes", "coffee", at=2 * DAY)]
    made = brief([old, new, *likes], since=0)
    assert {f.sentence for f in made.facts} == {"user lives in Lisbon", "user likes tea", "user likes coffee"}
    [change] = made.changes
    assert change.ids == [old.id, new.id]


def test_a_claim_said_again_shares_the_contradictions_of_the_same_claim() -> None:
    first, afternoon = linked(st(1, "user", "prefers", "mornings", at=DAY), st(3, "user", "prefers", "afternoons",
                                                                                at=3 * DAY))
    again = st(2, "user", "prefers", "mornings", at=2 * DAY)  # another observation, never linked
    assert [f.sentence for f in brief([first, again, afternoon]).facts] == ["user prefers afternoons"]
    later = st(4, "user", "prefers", "mornings", at=4 * DAY)  # said again after the change: it stands
    assert [f.sentence for f in brief([first, afternoon, later]).facts] == ["user prefers mornings"]
