"""The sentence realiser over a table of statement forms (issue 32, item 8: readable answers)."""

from __future__ import annotations

import pytest

from mnemonet.model.views import StatementView
from mnemonet.truth.realise import realise


def _st(subject: str, predicate: str, obj: str, *, negated: bool = False, tense: str = "present") -> StatementView:
    return StatementView(id="st-1", subject=subject, predicate=predicate, object=obj, confidence=0.9,
                         negated=negated, tense=tense)


@pytest.mark.parametrize(("statement", "asker", "sentence"), [
    # the ungrammatical answers seen in the issue, each now a sentence
    (_st("alice", "located_in", "Lyon"), "alice", "you are located in Lyon"),
    (_st("bob", "allergic_to", "peanuts"), "bob", "you are allergic to peanuts"),
    (_st("bob", "is_a", "morning person", negated=True), None, "bob is not a morning person"),
    (_st("bob", "has_manager", "Dave"), "bob", "your manager is Dave"),
    (_st("alice", "likes", "mornings", negated=True), None, "alice does not like mornings"),
    # verbs, with their particle, in every person, tense and polarity
    (_st("alice", "lives_in", "Paris"), None, "alice lives in Paris"),
    (_st("alice", "lives_in", "Paris"), "alice", "you live in Paris"),
    (_st("alice", "works_at", "Google", tense="past"), None, "alice used to work at Google"),
    (_st("alice", "works_at", "Hooli", tense="future"), "alice", "you will work at Hooli"),
    (_st("alice", "dislikes", "meetings on Fridays"), "alice", "you dislike meetings on Fridays"),
    (_st("alice", "likes", "tea", negated=True), "alice", "you do not like tea"),
    (_st("sam", "watches", "films"), "sam", "you watch films"),
    (_st("sam", "studies", "law"), "sam", "you study law"),
    (_st("sam", "has", "a cat"), "sam", "you have a cat"),
    (_st("sam", "has", "a cat", negated=True), None, "sam does not have a cat"),
    (_st("Acme", "employs", "erin"), "erin", "Acme employs you"),
    (_st("retro", "happens_on", "Thursday"), None, "retro happens on Thursday"),
    # attributes, possessed and addressed
    (_st("alice", "has_manager", "Carol"), None, "alice's manager is Carol"),
    (_st("james", "has_manager", "Carol"), None, "james' manager is Carol"),
    (_st("alice", "has_manager", "Carol", negated=True), "alice", "your manager is not Carol"),
    (_st("alice", "has_manager", "Carol", tense="past"), "alice", "your manager was Carol"),
    (_st("alice's sister", "lives_in", "Oslo"), "alice", "your sister lives in Oslo"),
    (_st("alice", "has_favourite_colour", "blue"), "alice", "your favourite colour is blue"),
    # copulas and properties
    (_st("bob", "is_a", "doctor"), "bob", "you are a doctor"),
    (_st("bob's aunt", "is_a", "engineer"), "bob", "your aunt is an engineer"),
    (_st("bob", "puts", "honey in bob's tea"), "bob", "you put honey in your tea"),
    (_st("bob", "puts", "honey in jacob's tea"), "bob", "you put honey in jacob's tea"),
    (_st("the room", "has_property", "quiet"), None, "the room is quiet"),
    (_st("Café Lindqvist", "has_status", "closed"), None, "Café Lindqvist is closed"),
    (_st("alice's phone", "has_value", "Pixel 7"), "alice", "your phone is Pixel 7"),
    (_st("alice's rent", "has_value", "1200 euros", tense="past"), None, "alice's rent was 1200 euros"),
    (_st("rent on flat", "has_value", "£1275"), None, "rent on flat is £1275"),  # a thing's value, not a person's
    (_st("launch", "is_on", "Monday"), None, "launch is on Monday"),
    (_st("alice", "married_to", "Sam", tense="past"), None, "alice was married to Sam"),
    (_st("alice", "interested_in", "chess", negated=True), "alice", "you are not interested in chess"),
    (_st("alice", "born_in", "Lagos"), None, "alice was born in Lagos"),
    (_st("alice", "born_in", "Lagos", negated=True), None, "alice was not born in Lagos"),
    (_st("sam", "has_habit", "smoking"), "sam", "you have a habit of smoking"),
    (_st("sam", "has_habit", "smoking", negated=True).model_copy(update={"revision": "change"}), None,
     "sam has quit smoking"),
])
def test_every_statement_form_reads_as_a_sentence(statement: StatementView, asker: str | None, sentence: str) -> None:
    assert realise(statement, asker) == sentence


def test_a_summary_reads_as_its_text() -> None:
    summary = StatementView(id="st-s", subject="alice", predicate="has_summary", object="alice", confidence=0.7,
                            summary="alice: lives in Paris.")
    assert realise(summary, "alice") == "alice: lives in Paris."
