"""The canonical claim sentence: references to statements resolve to their sentence, hedges become confidence."""

from __future__ import annotations

import pytest

from mnemonet.llm.claims import parse_canonical_claim, statement_reference


@pytest.mark.parametrize(("text", "subject", "obj", "confidence"), [
    ("user probably prefers tea", "user", "tea", 0.7),  # issue 32, item 7: never "user probably"
    ("Bob likes tea maybe", "Bob", "tea", 0.5),
    ("I think user likes jazz", "user", "jazz", 0.7),
    ("user likes maybe-later lists", "user", "maybe-later lists", 0.9),  # inside a name it is no hedge
    ("user prefers tea (confidence 0.8)", "user", "tea", 0.8),
])
def test_a_hedge_is_confidence_never_part_of_a_name(text: str, subject: str, obj: str, confidence: float) -> None:
    triple = parse_canonical_claim(text)
    assert triple is not None
    assert (triple.subject, triple.object, triple.confidence) == (subject, obj, confidence)


@pytest.mark.parametrize(("phrase", "statement"), [
    ("the claim that ned likes tea", "ned likes tea"),
    ("the statement that quin likes opera.", "quin likes opera"),
    ("that bob lives in Rome", "bob lives in Rome"),
    ("quin likes opera", "quin likes opera"),
])
def test_a_reference_names_its_statement(phrase: str, statement: str) -> None:
    assert statement_reference(phrase) == statement


def test_a_contradiction_between_referenced_claims_names_both_statements() -> None:
    triple = parse_canonical_claim("the claim that ned likes tea contradicts the claim that quin likes opera")
    assert triple is not None
    assert (triple.subject, triple.predicate, triple.object) == ("ned likes tea", "contradicts", "quin likes opera")
