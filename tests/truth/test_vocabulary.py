"""The relation vocabulary: packaged defaults, a user's file merged over them, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemonet.model.views import StatementView
from mnemonet.truth.currency import classify
from mnemonet.truth.vocabulary import Vocabulary


def _st(subject: str, predicate: str, obj: str, negated: bool = False) -> StatementView:
    return StatementView(id=f"{subject}-{predicate}-{obj}-{negated}", subject=subject, predicate=predicate,
                         object=obj, confidence=0.9, negated=negated)


def test_defaults_know_aliases_cardinality_polarity_and_exclusivity() -> None:
    schema = Vocabulary.load()
    assert schema.canonical("is_called") == "has_name" and schema.canonical("hates") == "dislikes"
    assert schema.spec("lives_in").cardinality == "single" and schema.spec("has_hobby").cardinality == "multi"
    assert schema.spec("born_in").temporal is False and schema.spec("unknown_thing").cardinality == "multi"
    assert schema.polarity("likes", False) == 1 and schema.polarity("likes", True) == -1
    assert schema.exclusive("is_married", "is_single") is not None and schema.exclusive("likes", "wants") is None
    assert schema.spec("has_summary").skip


def test_a_users_file_extends_the_defaults(tmp_path: Path) -> None:
    extra = tmp_path / "predicates.yaml"
    extra.write_text(
        "predicates:\n  drives: {aliases: [commutes_by], cardinality: single}\n"
        "exclusive:\n  - {name: diet, scope: subject, sides: [[is_vegan], [eats_meat]]}\n")
    schema = Vocabulary.load(extra)
    assert schema.canonical("commutes_by") == "drives" and schema.canonical("is_called") == "has_name"
    assert classify(_st("al", "drives", "bus"), _st("al", "commutes_by", "car"), schema).kind == "contradicts"
    assert classify(_st("al", "eats_meat", "beef"), _st("al", "is_vegan", "yes"), schema).kind == "contradicts"


@pytest.mark.parametrize("text, field", [
    ("predicates:\n  x: {cardinality: several}\n", "predicates.x.cardinality"),
    ("exclusive:\n  - {name: g, scope: object, sides: [[a]]}\n", "exclusive.0.sides"),
    ("predicates:\n  x: {colour: red}\n", "predicates.x.colour"),
    ("predicates: [unclosed\n", "cannot read"),
])
def test_a_bad_file_is_refused_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        Vocabulary.load(bad)


def test_prefers_within_a_topic_is_left_to_the_model() -> None:
    schema = Vocabulary.load()
    verdict = classify(_st("user", "prefers", "afternoon"), _st("user", "prefers", "morning meetings"), schema)
    assert verdict.kind == "ambiguous"
    feelings = classify(_st("user", "dislikes", "mornings"), _st("user", "prefers", "morning meetings"), schema)
    assert feelings.kind == "ambiguous" and "morning" in feelings.reason
    assert classify(_st("user", "dislikes", "mornings"), _st("user", "likes", "mornings", True), schema).kind == "none"


def test_values_said_together_conflict_only_with_a_revision_cue() -> None:
    schema = Vocabulary.load()
    amara, tobi = (_st("al", "has_manager", name).model_copy(update={"derived_from": ["obs-1"]})
                   for name in ("Amara", "Tobi"))
    assert classify(tobi, amara, schema).kind == "none"  # "my managers are Amara and Tobi" (co-managers)
    assert classify(tobi.model_copy(update={"derived_from": ["obs-2"]}), amara, schema).kind == "contradicts"
    on_basis = {"derived_from": ["st-basis"]}  # claims on one basis statement were not said together
    assert classify(tobi.model_copy(update=on_basis), amara.model_copy(update=on_basis), schema).kind == "contradicts"
    assert classify(tobi.model_copy(update={"revision": "correction"}), amara, schema).kind == "contradicts"


def test_a_contradiction_needs_the_same_qualified_slot() -> None:
    # Issue 32, item 4: "a bar on weekends" and "a bookshop on weekdays" are two jobs; a narrower value beside
    # a broader one never conflicts with it; the same slot, qualified alike or not at all, does.
    schema = Vocabulary.load()
    weekdays, weekends = _st("al", "works_at", "bookshop on weekdays"), _st("al", "works_at", "bar on weekends")
    assert classify(weekends, weekdays, schema).kind == "none"
    assert classify(weekends, _st("al", "works_at", "Acme"), schema).kind == "none"
    assert classify(_st("al", "works_at", "Globex"), _st("al", "works_at", "Acme"), schema).kind == "contradicts"
    assert classify(_st("al", "works_at", "Globex"), weekdays, schema).kind == "contradicts"
    # a time that is the value itself is no qualifier: two preferred times of one topic are still a question
    assert classify(_st("al", "prefers", "afternoon meetings"), _st("al", "prefers", "morning meetings"),
                    schema).kind == "ambiguous"
