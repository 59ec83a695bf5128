"""Whom "he" or "she" stands for in a turn about no one else: the one person its speaker's turn before spoke of.

Chat continues a subject across turns ("Keisha is a junior designer at Figtree", then "she got bumped up to
senior designer last week"); an extraction reads one turn at a time and cannot place the second. Read beside
the recalled turns, such a turn (nothing drawn from it about another person) is *about* that person: ``bind``
marks it so (``ABOUT`` in its metadata), and the rules asking whom words are about match them by
``text.matching_text`` (its words and the person's). The person is the one subject, other than the speaker,
of the speaker's own statements drawn from their turn just before (a name, or someone's someone: "user's
sister"), or, when nothing of the speaker's was drawn from it, the one name that turn says. The text shown
is never changed.
"""

from __future__ import annotations

import re

from mnemonet.model.views import ObservationView, StatementView
from mnemonet.truth.record import name_runs
from mnemonet.truth.text import ABOUT, MONTHS, RECURRING_TIMES, object_words, plain

_THIRD_PERSON = re.compile(r"\b(?:he|she|him|her|his|hers)\b", re.IGNORECASE)
_CALENDAR = RECURRING_TIMES | MONTHS


def bind(observations: list[ObservationView], drawn: dict[str, list[StatementView]]) -> list[ObservationView]:
    """``observations`` with each turn that says he or she and is about no one else marked ``ABOUT`` the one
    person of its speaker's turn before (see the module docstring); ``drawn`` maps a turn's id to its
    statements."""
    by_time = sorted(observations, key=lambda o: o.created_at)
    out = []
    for o in observations:
        person = None
        if _THIRD_PERSON.search(o.text) and not _people(o, drawn.get(o.id, [])):
            before = [p for p in by_time if p.source == o.source and p.created_at < o.created_at]
            person = _person(before[-1], drawn.get(before[-1].id, [])) if before else None
        out.append(o.model_copy(update={"metadata": {**o.metadata, ABOUT: person}}) if person else o)
    return out


def _people(turn: ObservationView, drawn: list[StatementView]) -> dict[str, str]:
    """The people (a name, someone's someone) other than the speaker that the speaker's own statements drawn
    from ``turn`` are about (not what a worker inferred from them: "Figtree Studio employs Keisha")."""
    speaker = plain(turn.source or "user")
    return {plain(s.subject): s.subject for s in drawn
            if s.source == turn.source and plain(s.subject) not in (speaker, "user")
            and (s.subject[:1].isupper() or "'s " in s.subject)}


def _person(turn: ObservationView, drawn: list[StatementView]) -> str | None:
    subjects = _people(turn, drawn)
    if subjects or any(s.source == turn.source for s in drawn):  # understood, about one person, several or none
        return next(iter(subjects.values())) if len(subjects) == 1 else None
    named = [n for n in dict.fromkeys(name_runs(turn.text, first_is_name=True)) if not object_words(n) & _CALENDAR]
    return named[0] if len(named) == 1 else None
