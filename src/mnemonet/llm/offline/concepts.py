"""Triples -> ConceptSpecs: a kind per concept, singular aliases, and head-noun/modifier components.

Kinds: ``person`` (``user``, or a capitalised subject), ``place`` (object of
lives_in/comes_from/..., or a place word), ``time`` (time-of-day, weekday,
month, clock time, date), ``activity`` (-ing words, meetings, calls ...),
``value`` (adjectives, names, numbers, e-mail addresses) and ``thing``.
Components use singular forms, so "morning meetings" decomposes into
head_noun "meeting" and modifier "morning" and meets the concept
"mornings" (alias "morning") in the graph.
"""

from __future__ import annotations

import re

from mnemonet.llm.base import Triple
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.words import singular
from mnemonet.model.records import ConceptComponent, ConceptSpec, normalise_name

_CLOCK_RE = re.compile(r"^\d{1,2}(?::\d{2})?\s*(?:am|pm)$|^\d{4}-\d{2}-\d{2}$|^(?:19|20)\d{2}$", re.I)
_VALUE_RE = re.compile(r"^[\d.,%$€£ ]+$|^\S+@\S+\.\S+$")
_STOP = frozenset({"of", "the", "a", "an", "and", "to", "for", "in", "on", "at", "with", "from", "by"})


def _content_words(name: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z0-9']+", name) if w.lower() not in _STOP]


def _is_proper(name: str) -> bool:
    words = _content_words(name)
    return bool(words) and all(w[:1].isupper() or w[:1].isdigit() for w in words)


def head_word(name: str) -> str:
    """The singular head noun: the last content word, or the word before ``of`` ("capital of France")."""
    before_of = re.split(r"\s+of\s+", name, maxsplit=1, flags=re.I)[0]
    words = _content_words(before_of) or _content_words(name)
    return singular(words[-1].removesuffix("'s")) if words else name.lower()


def kind_of(name: str, role: str, predicate: str) -> str:
    """Classify a concept by its words and its place in the triple (``role`` is subject or object)."""
    low = name.lower()
    if low == "user" or low.startswith("user's"):
        return "person"
    head = head_word(name)
    if _CLOCK_RE.match(low) or head in lx.TIME_WORDS:
        return "time"
    if role == "object" and predicate in lx.PLACE_PREDICATES or head in lx.PLACE_WORDS:
        return "place"
    valued = predicate in lx.VALUE_PREDICATES or predicate.startswith("has_")
    if _VALUE_RE.match(name) or (role == "object" and valued):
        return "value"
    if head in lx.ACTIVITY_WORDS or (head.endswith("ing") and len(head) > 4 and head not in lx.NOT_ACTIVITY_ING):
        return "activity"
    person_role = role == "subject" or predicate in lx.PERSON_OBJECT_PREDICATES
    if _is_proper(name) and person_role and len(_content_words(name)) <= 3:
        return "person"
    return "thing"


def concept_for(name: str, role: str, predicate: str) -> ConceptSpec:
    """One concept with its kind, a singular alias for plurals, and components for common multi-word names."""
    words = name.split()
    aliases: list[str] = []
    if words and not _is_proper(name):
        last = singular(words[-1])
        if last != words[-1].lower():
            aliases.append(" ".join([*words[:-1], last]))
    components: list[ConceptComponent] = []
    content = _content_words(name)
    if len(content) >= 2 and not _is_proper(name):
        head = head_word(name)
        components.append(ConceptComponent(name=head, relation="head_noun"))
        for word in content:
            mod = "user" if word.lower() == "user's" else word if word[:1].isupper() else singular(word)
            if mod != head and all(c.name != mod for c in components):
                components.append(ConceptComponent(name=mod, relation="modifier"))
    return ConceptSpec(name=name, kind=kind_of(name, role, predicate), aliases=tuple(aliases[:20]),
                       components=tuple(components[:20]))


def concepts_for(triples: list[Triple]) -> list[ConceptSpec]:
    """The distinct concepts (by normalised name, first occurrence wins) of ``triples``."""
    seen: dict[str, ConceptSpec] = {}
    for t in triples:
        for name, role in ((t.subject, "subject"), (t.object, "object")):
            key = normalise_name(name)
            if key and key not in seen:
                seen[key] = concept_for(name, role, t.predicate)
    return list(seen.values())


def topics_for(triples: list[Triple], limit: int = 5) -> list[str]:
    """Up to ``limit`` lower-case keywords: proper names whole, else the singular content words."""
    out: list[str] = []
    for t in triples:
        for name in (t.subject, t.object):
            if name.lower() == "user":
                continue
            if _is_proper(name):
                words = [name.lower()]
            else:
                words = [singular(w) for w in _content_words(name) if not w.lower().startswith("user")]
            out.extend(w for w in words if w not in out)
    return out[:limit]
