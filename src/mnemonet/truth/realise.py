"""One small sentence realiser: a statement as a grammatical English clause, for every statement form.

Statements store a machine form (``alice not likes mornings``, ``user has_manager Dave``); answers
show people a sentence. The forms, by predicate:

- an attribute ``has_<noun>`` (not plain ``has``): "alice's manager is Dave", "your manager is Dave";
- a copula relation (an adjective or participle with its preposition: ``located_in``, ``allergic_to``,
  ``interested_in``, ``married_to``, ``part_of``, ``is_on`` ...): "you are located in Lyon";
- ``is_a``: "bob is a morning person"; ``has_property`` and ``has_status``: "the room is quiet"; a possessed
  thing's ``has_value``: "your phone is Pixel 7", "rent on flat is £1275" (a person's reads as an attribute:
  "Ana's value is ...");
- ``born_in`` (a past event): "alice was born in Lagos";
- ``has_habit``: "sam has a habit of smoking", ended "sam has quit smoking";
- any other predicate is a verb with its particle: "alice likes opera", "you work at Acme";
- negation: "does not like", "is not a morning person", "your manager is not Dave";
- tense: past "used to work at Google", "was located in"; future "will work at Hooli".

Addressed to an asker, the asker is "you" ("you live in Paris", "your sister lives in Oslo") and
verbs take their plain form.
"""

from __future__ import annotations

import re

from mnemonet.model.views import StatementView
from mnemonet.truth.vocabulary import HABIT_RELATION

# Predicates read as "is <participle/adjective> <preposition>": the first word is no verb.
_COPULA_HEADS = frozenset({
    "located", "allergic", "interested", "afraid", "good", "bad", "married", "responsible", "part", "based",
    "fond", "aware", "proud", "scared", "tired", "close", "related", "engaged", "known", "subscribed",
    "involved", "excited", "worried", "busy", "new", "late", "early", "due", "away", "open", "closed",
})
_BE_PREDICATES = frozenset({"is", "are", "am", "was", "were", "be"})
_IRREGULAR_PLAIN = {"has": "have", "does": "do", "goes": "go"}
_IRREGULAR_PAST = {"born_in": "was born in"}


def realise(s: StatementView, asker: str | None = None) -> str:
    """``s`` as a clause (no final full stop), addressed to ``asker`` when it is about them."""
    if s.summary:
        return s.summary
    subject, second = _subject(s.subject, asker)
    obj = "you" if asker and s.object.casefold() == asker.casefold() else _yours(s.object, asker)
    words = [w for w in s.predicate.split("_") if w]
    if not words:
        return f"{subject} {obj}"
    if s.predicate in _IRREGULAR_PAST:
        phrase = _IRREGULAR_PAST[s.predicate]
        return f"{subject} {phrase.replace('was ', 'was not ', 1) if s.negated else phrase} {obj}"
    if s.predicate in ("has_property", "has_status") or s.predicate == "has_value" and (
            "'s " in s.subject or s.subject[:1].islower() and not second):
        # "your phone is a Pixel 7", "the rent on the flat is £1275", not "'s value is"; a person's has a value
        return f"{subject} {_be(second, s.tense, s.negated)} {obj}"
    if s.predicate == HABIT_RELATION:  # "I smoke" / "I quit smoking"
        if s.negated:
            return f"{subject} {'have' if second else 'has'} {'quit' if s.revision else 'no habit of'} {obj}"
        return f"{subject} {'have' if second else 'has'} a habit of {obj}"
    if words[0] == "has" and len(words) > 1 and words[1] not in ("to", "been"):
        return _attribute(subject, second, words[1:], obj, s)
    if s.predicate == "is_a" and obj[:1].isupper():  # a name is no kind: "your coach is Anneke"
        return f"{subject} {_be(second, s.tense, s.negated)} {obj}"
    if words[0] in _BE_PREDICATES:
        rest = ["an" if w == "a" and obj[:1].casefold() in "aeiou" else w for w in words[1:]]  # "an associate"
        return " ".join([subject, _be(second, s.tense, s.negated), *rest, obj])
    if words[0] in _COPULA_HEADS:
        return " ".join([subject, _be(second, s.tense, s.negated), *words, obj])
    return f"{subject} {_verb(words, second, s.tense, s.negated)} {obj}"


def _yours(obj: str, asker: str | None) -> str:
    """The asker's possessions in an object said to them: "cow's milk in user's coffee" -> "... in your coffee"."""
    return re.sub(rf"(?<![\w'’]){re.escape(asker)}'s\b", "your", obj, flags=re.IGNORECASE) if asker else obj


def _subject(subject: str, asker: str | None) -> tuple[str, bool]:
    """(the subject as said to ``asker``, whether it is "you")."""
    if asker:
        me = asker.casefold()
        if subject.casefold() == me:
            return "you", True
        if subject.casefold().startswith(me + "'s "):
            return "your" + subject[len(asker) + 2:], False
    return subject, False


def _attribute(subject: str, second: bool, noun: list[str], obj: str, s: StatementView) -> str:
    """ "alice has_manager Dave" -> "alice's manager is Dave"."""
    owner = "your" if second else (f"{subject}'" if subject.endswith("s") else f"{subject}'s")
    be = {"past": "was", "future": "will be"}.get(s.tense, "is")
    if s.negated:
        be = {"was": "was not", "will be": "will not be"}.get(be, "is not")
    return f"{owner} {' '.join(noun)} {be} {obj}"


def _be(second: bool, tense: str, negated: bool) -> str:
    if tense == "past":
        be = "were" if second else "was"
    elif tense == "future":
        be = "will be"
    else:
        be = "are" if second else "is"
    if negated:
        be = "will not be" if be == "will be" else f"{be} not"
    return be


def _verb(words: list[str], second: bool, tense: str, negated: bool) -> str:
    """ "likes" -> "likes" / "like" / "does not like" / "used to like" / "will like"."""
    verb, rest = words[0], " ".join(words[1:])
    plain = plain_verb(verb)
    if tense == "past":
        phrase = f"did not {plain}" if negated else f"used to {plain}"
    elif tense == "future":
        phrase = f"will not {plain}" if negated else f"will {plain}"
    elif negated:
        phrase = f"{'do' if second else 'does'} not {plain}"
    else:
        phrase = plain if second else verb
    return f"{phrase} {rest}".strip()


def plain_verb(word: str) -> str:
    """The plain form of a third-person verb: lives -> live, has -> have, watches -> watch, studies -> study."""
    if word in _IRREGULAR_PLAIN:
        return _IRREGULAR_PLAIN[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
