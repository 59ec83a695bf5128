"""Yes or no to a question that asks for one ("do I still live in Berlin?"), when the lead statement says which.

A polar question names a relation and a value. The lead statement answers it when it is in that relation:
it gives the value named (yes), or denies it (a negated statement: no), or gives another value in the slot
the named one held before (the named value is among those the lead replaced: no). Anything else gets no
verdict and the lead is said as it is, and so does a lead whose value was spoken of again after it (the
extraction may have missed a change): a wrong "yes" or "no" is worse than none.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemonet.model.views import StatementView
from mnemonet.truth.relevance import Question
from mnemonet.truth.text import fold, terms
from mnemonet.truth.vocabulary import HABIT_RELATION, Vocabulary

YES, NO = "Yes.", "No."
_BE = frozenset({"is", "are", "am"})


def verdict(
    question: Question, lead: StatementView, replaced: Sequence[StatementView], vocabulary: Vocabulary,
    said_since: Sequence[str] = (),
) -> bool | None:
    """True (yes), False (no) or None (the lead does not settle it) for ``question`` answered by ``lead``;
    ``replaced`` are the statements the lead's slot held before it, ``said_since`` the texts of what was
    observed after the lead was said: words naming the lead's value again may change it ("I finished my
    Spanish course" after "I'm taking a Spanish course"), so they leave the question open."""
    if not question.polar or question.past:  # "did I live in Berlin?" is not answered by where one lives now
        return None
    value = terms(lead.object, question.asker)
    if any(value <= terms(text, question.asker) for text in said_since):
        return None
    own = terms(lead.predicate, question.asker)
    relation = own | {fold(w) for w in vocabulary.asked_with(lead.predicate)}
    # A relation with no word of its own ("is_a") is the copula: "am I a morning person?" asks it. A habit
    # is whatever one does or is on: "am I on a keto diet?" is asked of "I gave up the keto diet".
    copula = not own and question.text.split()[0].casefold() in _BE
    habit = vocabulary.canonical(lead.predicate) == HABIT_RELATION
    if not (relation & question.words or copula or habit):
        return None  # the lead tells of another relation than the one asked
    if _names(question, lead):
        return not lead.negated
    if not lead.negated and any(not old.negated and _names(question, old) for old in replaced):
        return False
    return None


def _names(question: Question, s: StatementView) -> bool:
    """Whether the question names ``s``'s value (every content word of it)."""
    value = terms(s.object, question.asker)
    return bool(value) and value <= question.words


def with_verdict(lead: str, answer: bool | None) -> str:
    """``lead`` after "Yes." or "No.", unless there is no verdict or the lead already says one."""
    if answer is None or lead.casefold().startswith(("yes", "no ", "no,", "no.")):
        return lead
    return f"{YES if answer else NO} {lead}"
