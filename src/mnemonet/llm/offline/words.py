"""Small word utilities of the offline translator: inflection, singular forms, text normalisation."""

from __future__ import annotations

import re

from mnemonet.llm.offline.lexicon import SINGULAR_EXCEPTIONS

_CONTRACTIONS = [
    (re.compile(r"\bcan't\b", re.I), "can not"),
    (re.compile(r"\bcannot\b", re.I), "can not"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"\bI'm\b", re.I), "I am"),
    (re.compile(r"\bI've\b", re.I), "I have"),
    (re.compile(r"\bI'd\b", re.I), "I would"),
    (re.compile(r"\bI'll\b", re.I), "I will"),
    (re.compile(r"\b(it|he|she|that|there|what|who|where|name)'s\b", re.I), r"\1 is"),
    (re.compile(r"'re\b", re.I), " are"),
]


def normalise_text(text: str) -> str:
    """Typographic quotes to ASCII, contractions expanded, whitespace collapsed."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def third_person(verb: str) -> str:
    """``like`` -> ``likes``, ``study`` -> ``studies``, ``watch`` -> ``watches``, ``have`` -> ``has``."""
    if verb == "have":
        return "has"
    if verb == "go":
        return "goes"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("ch", "sh", "ss", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def base_form(verb: str) -> str:
    """The inverse of ``third_person`` for the verbs it produces."""
    irregular = {"has": "have", "goes": "go", "does": "do", "is": "be"}
    if verb in irregular:
        return irregular[verb]
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") else verb


def ing_form(verb: str) -> str:
    """``like`` -> ``liking``, ``smoke`` -> ``smoking``, ``run`` -> ``running`` (a short verb ending in one
    vowel and a consonant doubles it), ``visit`` -> ``visiting``."""
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", verb):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def singular(word: str) -> str:
    """A modest singular form: ``mornings`` -> ``morning``, ``cities`` -> ``city``, ``glass`` stays."""
    low = word.lower()
    if low in SINGULAR_EXCEPTIONS:
        return SINGULAR_EXCEPTIONS[low]
    if len(low) > 4 and low.endswith("ies"):
        return low[:-3] + "y"
    if len(low) > 4 and low.endswith(("ches", "shes", "sses", "xes")):
        return low[:-2]
    if len(low) > 3 and low.endswith("s") and not low.endswith(("ss", "us", "is")):
        return low[:-1]
    return low


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, apostrophes inside words)."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())
