"""The one canonical claim sentence the worker agents write, and its parser.

Form: ``<subject> <verb phrase> <object> (confidence <c>)``, e.g.

- ``user prefers afternoon meetings (confidence 0.8)``
- ``user does not like mornings (confidence 0.9)``
- ``Acme employs user (confidence 0.8)``, ``Bob is a doctor (confidence 0.9)``

Each known predicate has an affirmative and a negated phrase (``likes`` /
``does not like``; ``is_a``: ``is a`` / ``is not a``). A predicate without a
phrase is written literally after the subject with a colon:
``user has_email: sam@example.com (confidence 0.9)``, negated
``user not has_email: ...``. ``parse_canonical_claim(render_claim(t)) == t``
for every triple whose subject and object do not themselves contain a verb
phrase of the table. The parser also reads ``StatementSpec.sentence()``
output (``user not likes mornings``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mnemonet.llm.base import Triple
from mnemonet.llm.hedges import HEDGES, hedge_confidence
from mnemonet.llm.offline.lexicon import (
    DEFAULT_CONFIDENCE,
    HABIT_PREDICATE,
    STATUS_PREDICATE,
    VALUE_PREDICATE,
    VERBS,
    WHEN_PREDICATE,
)
from mnemonet.llm.offline.words import base_form

# Predicates read as "is <phrase>" rather than as a verb.
_COPULA = {
    "is_a": "a", "has_property": "", "has_name": "called", "located_in": "located in",
    "interested_in": "interested in", "allergic_to": "allergic to", "afraid_of": "afraid of",
    "good_at": "good at", "bad_at": "bad at", "married_to": "married to",
    "responsible_for": "responsible for", "part_of": "part of",
}
_PAST = {"born_in": ("was born in", "was not born in")}


def _phrases() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    # The verbs the offline model writes, so a statement's sentence ("budget has value 20k") reads back.
    verbs = set(VERBS.values()) | {"interested_in", "employs", VALUE_PREDICATE, STATUS_PREDICATE, HABIT_PREDICATE,
                                   WHEN_PREDICATE}
    for predicate in sorted(verbs | set(_COPULA) | set(_PAST)):
        if predicate in _PAST:
            table[predicate] = _PAST[predicate]
        elif predicate in _COPULA:
            rest = _COPULA[predicate]
            table[predicate] = (f"is {rest}".strip(), f"is not {rest}".strip())
        else:
            verb, *particle = predicate.split("_")
            tail = " ".join(particle)
            table[predicate] = (f"{verb} {tail}".strip(), f"does not {base_form(verb)} {tail}".strip())
    return table


PHRASES: dict[str, tuple[str, str]] = _phrases()

_CONFIDENCE_RE = re.compile(r"\s*\((?:with )?confidence[:= ]\s*(?P<c>\d*\.?\d+)\)\s*\.?\s*$|\s+with confidence "
    r"(?P<c2>\d*\.?\d+)\s*\.?\s*$", re.I)
_LITERAL_RE = re.compile(r"^(?P<s>.+?) (?P<n>not )?(?P<p>[a-z][a-z0-9_]*): (?P<o>.+)$")


def _lookup() -> tuple[re.Pattern[str], dict[str, tuple[str, bool]]]:
    forms: dict[str, tuple[str, bool]] = {}
    for predicate, (yes, no) in PHRASES.items():
        words = predicate.replace("_", " ")
        for form, negated in ((yes, False), (words, False), (no, True), (f"not {yes}", True), (f"not {words}", True)):
            forms.setdefault(form, (predicate, negated))
    alternation = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"^(?P<s>.+?) (?P<v>{alternation}) (?P<o>.+)$", re.I), forms


_PHRASE_RE, _FORMS = _lookup()


def render_claim(triple: Triple) -> str:
    """The canonical sentence of ``triple``, confidence included.

    E.g. ``user does not like mornings (confidence 0.9)``.
    """
    if triple.predicate in PHRASES:
        yes, no = PHRASES[triple.predicate]
        body = f"{triple.subject} {no if triple.negated else yes} {triple.object}"
    else:
        body = f"{triple.subject} {'not ' if triple.negated else ''}{triple.predicate}: {triple.object}"
    return f"{body} (confidence {float(triple.confidence)!r})"


_CONTRADICTION_RE = re.compile(r"^(?P<a>.+?)\s+contradicts\s+(?P<b>.+)$", re.IGNORECASE)
# How a sentence names a statement rather than asserting it: "the claim that ned likes tea".
_REFERENCE_RE = re.compile(r"^(?:the\s+)?(?:claim|statement|fact|idea|belief|assertion|report)\s+(?:that\s+)?"
                           r"|^that\s+", re.IGNORECASE)
_HEDGE_EDGE_RE = re.compile(r"^(?:(?:" + "|".join(re.escape(h) for h in sorted(HEDGES, key=len, reverse=True))
                            + r")\s+)+|(?:\s+(?:" + "|".join(re.escape(h) for h in sorted(HEDGES, key=len,
                            reverse=True)) + r"))+$", re.IGNORECASE)


def statement_reference(text: str) -> str:
    """The statement a phrase names: "the claim that ned likes tea" -> "ned likes tea"."""
    return _REFERENCE_RE.sub("", " ".join(text.split()).strip().rstrip("."), count=1)


def parse_canonical_claim(text: str, speaker: str = "user") -> Triple | None:
    """The triple of a canonical claim sentence, or None when ``text`` is not in that form.

    A first-person subject ("I", "me") is the ``speaker`` (the claim's source); ``user``
    is only the default source's name.
    """
    text = " ".join(text.split()).rstrip(".")
    confidence = DEFAULT_CONFIDENCE
    m = _CONFIDENCE_RE.search(text)
    if m:
        value = float(m.group("c") or m.group("c2"))
        if not 0.0 <= value <= 1.0:
            return None
        confidence, text = value, text[: m.start()]
    m = _CONTRADICTION_RE.match(text)
    if m:
        a, b = statement_reference(m.group("a")), statement_reference(m.group("b"))
        if parse_canonical_claim(a, speaker) and parse_canonical_claim(b, speaker):
            # "<statement> contradicts <statement>": the validation phrasing, linking two statements.
            return Triple(subject=a, predicate="contradicts", object=b, confidence=confidence)
    m = _LITERAL_RE.match(text)
    if m:
        return _triple(m.group("s"), m.group("p"), m.group("o"), bool(m.group("n")), confidence, speaker)
    m = _PHRASE_RE.match(text)
    if m:
        predicate, negated = _FORMS[m.group("v").lower()]
        return _triple(m.group("s"), predicate, m.group("o"), negated, confidence, speaker)
    return None


def _triple(subject: str, predicate: str, obj: str, negated: bool, confidence: float, speaker: str) -> Triple | None:
    # A hedge next to the verb ("user probably prefers tea") says how sure, never whose or what.
    hedges = " ".join(m.group(0) for part in (subject, obj) for m in _HEDGE_EDGE_RE.finditer(part.strip()))
    subject, obj = _HEDGE_EDGE_RE.sub("", subject.strip()), _HEDGE_EDGE_RE.sub("", obj.strip())
    hedged = hedge_confidence(hedges) if hedges else None
    if hedged is not None:
        confidence = min(confidence, hedged)
    if not subject or not obj:
        return None
    if subject.lower() in ("i", "me"):
        subject = speaker
    return Triple(subject=subject, predicate=predicate, object=obj, negated=negated, confidence=confidence)


@dataclass(frozen=True)
class Supersession:
    """A claim that says what it replaces: ``claim`` is what it asserts now, ``target`` the words
    naming the replaced statement (None: the current value of the same attribute)."""

    claim: str
    target: str | None
    kind: Literal["superseding", "instead_of", "no_longer"]


_SUPERSEDING_RE = re.compile(
    r"^(?P<claim>.+?),?\s+(?:superseding|which supersedes|replacing)\s+(?P<target>.+)$", re.I
)
_INSTEAD_RE = re.compile(r"^(?P<claim>.+?)\s+instead of\s+(?P<target>.+)$", re.I)
_NO_LONGER_RE = re.compile(r"\bno longer\b", re.I)


def split_supersession(text: str) -> Supersession | None:
    """The supersession a claim states in words, if any:

    - ``"user prefers afternoon meetings, superseding the morning claim"`` -> claim
      ``user prefers afternoon meetings``, target ``the morning claim``;
    - ``"user prefers afternoon meetings instead of morning meetings"`` -> target ``morning meetings``;
    - ``"Bob no longer lives in Paris"`` -> claim ``Bob not lives in Paris`` (canonical
      negation), target None: the current ``Bob lives in Paris``.

    A stated confidence (``(confidence 0.8)``) stays with the claim.
    """
    text = " ".join(text.split()).rstrip(".")
    suffix = ""
    m = _CONFIDENCE_RE.search(text)
    if m:
        text, suffix = text[: m.start()], " " + text[m.start():].strip()
    for pattern, kind in ((_SUPERSEDING_RE, "superseding"), (_INSTEAD_RE, "instead_of")):
        m = pattern.match(text)
        if m and m.group("claim").strip() and m.group("target").strip():
            return Supersession(m.group("claim").strip() + suffix, m.group("target").strip(), kind)  # type: ignore[arg-type]
    if _NO_LONGER_RE.search(text):
        return Supersession(_NO_LONGER_RE.sub("not", text) + suffix, None, "no_longer")
    return None
