"""Yes or no before the lead, only when the lead statement settles the question (``truth.polar``)."""

from __future__ import annotations

import pytest

from mnemonet.model.views import StatementView
from mnemonet.truth.polar import verdict, with_verdict
from mnemonet.truth.relevance import Question
from mnemonet.truth.vocabulary import default_vocabulary

VOCABULARY = default_vocabulary()


def _st(subject: str, predicate: str, obj: str, *, negated: bool = False) -> StatementView:
    return StatementView(id=f"st-{abs(hash((subject, predicate, obj, negated)))}", subject=subject,
                         predicate=predicate, object=obj, confidence=0.9, created_at=1, source="user",
                         negated=negated)


LIVES_MUNICH = _st("user", "lives_in", "Munich")
LIVES_BERLIN = _st("user", "lives_in", "Berlin")
MANAGER_FRANK = _st("user", "has_manager", "Frank")
MANAGER_CAROL = _st("user", "has_manager", "Carol")

# (question, asker, lead, what the lead's slot held before, verdict)
TABLE: list[tuple[str, str, StatementView, list[StatementView], bool | None]] = [
    ("do I live in Munich?", "user", LIVES_MUNICH, [LIVES_BERLIN], True),
    ("do I still live in Berlin?", "user", LIVES_MUNICH, [LIVES_BERLIN], False),
    ("is Berlin still my home?", "user", LIVES_MUNICH, [LIVES_BERLIN], False),
    ("is Frank my manager?", "user", MANAGER_FRANK, [MANAGER_CAROL], True),
    ("is my manager still Carol?", "user", MANAGER_FRANK, [MANAGER_CAROL], False),
    ("does alice live in Munich?", "alice", _st("alice", "lives_in", "Munich"), [], True),
    ("am I learning German?", "user", _st("user", "learns", "German", negated=True), [], False),
    ("do I like mornings?", "user", _st("user", "likes", "mornings", negated=True), [], False),
    ("do I enjoy jazz?", "user", _st("user", "likes", "jazz"), [], True),
    ("am I a morning person?", "user", _st("user", "is_a", "morning person", negated=True), [], False),
    ("is Ola a nurse?", "user", _st("Ola", "is_a", "nurse"), [], True),
    ("does Ola work as a nurse?", "user", _st("Ola", "is_a", "nurse"), [], True),  # a job is asked for is_a
    ("does Ola own a nurse?", "user", _st("Ola", "is_a", "nurse"), [], None),
    # a habit is whatever one does or is on: given up, it answers any relation naming it
    ("am I on a keto diet?", "user", _st("user", "has_habit", "keto diet", negated=True), [], False),
    ("do I still smoke?", "user", _st("user", "has_habit", "smoking", negated=True), [], False),
    ("do I go running?", "user", _st("user", "has_habit", "running"), [], True),
    # Nothing settles it: another value with nothing replaced (many may hold), another relation, a question
    # about the past, a negated question, a choice, a question asking for a value.
    ("do I speak Japanese?", "user", _st("user", "speaks", "French"), [], None),
    ("do I live in Paris?", "user", LIVES_MUNICH, [LIVES_BERLIN], None),
    ("do I work in Munich?", "user", LIVES_MUNICH, [], None),
    ("did I live in Berlin?", "user", LIVES_MUNICH, [LIVES_BERLIN], None),
    ("don't I live in Munich?", "user", LIVES_MUNICH, [], None),
    ("do I live in Munich or Berlin?", "user", LIVES_MUNICH, [LIVES_BERLIN], None),
    ("where do I live?", "user", LIVES_MUNICH, [LIVES_BERLIN], None),
    ("do I still live in Berlin?", "user", _st("user", "lives_in", "Berlin", negated=True), [LIVES_BERLIN], False),
]


@pytest.mark.parametrize(("question", "asker", "lead", "replaced", "expected"), TABLE,
                         ids=[row[0] for row in TABLE])
def test_verdict(question: str, asker: str, lead: StatementView, replaced: list[StatementView],
                 expected: bool | None) -> None:
    assert verdict(Question.read(question, asker), lead, replaced, VOCABULARY) is expected


def test_the_verdict_goes_before_the_lead_once() -> None:
    assert with_verdict("You live in Munich.", True) == "Yes. You live in Munich."
    lead = "From memory: you live in Munich [st-1]."
    assert with_verdict(lead, False) == f"No. {lead}"
    assert with_verdict("You live in Munich.", None) == "You live in Munich."
    assert with_verdict("No, you moved to Munich in May.", False) == "No, you moved to Munich in May."
    assert with_verdict("Nobody said.", False) == "No. Nobody said."


def test_words_naming_the_value_again_leave_the_question_open() -> None:
    taking = _st("user", "takes", "Spanish course")
    question = Question.read("am I taking a Spanish course?", "user")
    assert verdict(question, taking, [], VOCABULARY) is True
    assert verdict(question, taking, [], VOCABULARY, ["I finished my Spanish course last week."]) is None
    assert verdict(question, taking, [], VOCABULARY, ["I bought a new bike."]) is True
