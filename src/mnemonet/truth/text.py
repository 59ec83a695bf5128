"""The word normalisation the truth rules match on: content words, crude singular forms."""

from __future__ import annotations

import re
import unicodedata

from mnemonet.model.views import ObservationView

_WORD_RE = re.compile(r"[a-z0-9]+")
_OBJECT_STOP = frozenset({"the", "a", "an", "of", "and", "to", "for", "in", "on", "at", "with"})
_QUALIFYING = re.compile(r"\s(?:on|in|during|at|every|over|through)\s")
# Words of a recurring time that qualify a value: "works at a bar on weekends", "lives in Menorca in summer".
RECURRING_TIMES = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekday", "weekend", "morning",
    "afternoon", "evening", "night", "summer", "winter", "spring", "autumn", "fall", "holiday", "term", "semester",
    "vacation", "daytime", "nighttime",
})

MONTHS = frozenset({"january", "february", "march", "april", "may", "june", "july", "august", "september",
                    "october", "november", "december"})


def time_qualifiers(name: str) -> frozenset[str]:
    """The recurring times a value is qualified by, in a phrase of its own ("bar on weekends" -> {"weekend"};
    "morning meetings" has none: the time is part of the value)."""
    _, found, phrase = _qualifying_phrase(name)
    if not found:
        return frozenset()
    if name.casefold().partition(" during ")[1]:  # "during" names a span whatever its words: "the school year"
        return object_words(phrase)
    return object_words(phrase) & RECURRING_TIMES


def _qualifying_phrase(name: str) -> tuple[str, bool, str]:
    """(value, whether a qualifying phrase follows it, the phrase): "bar on weekends" -> ("bar", True, "weekends")."""
    m = _QUALIFYING.search(name.casefold())
    return (name[: m.start()], True, name[m.end():]) if m else (name, False, "")


def plain(text: str) -> str:
    """``text`` casefolded and without accents, so "Lucía" meets the speaker "lucia"."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


def object_words(name: str) -> frozenset[str]:
    """The content words of a name, crudely singular, so "mornings" meets "morning meetings"."""
    out = set()
    for w in _WORD_RE.findall(plain(name)):
        if w in _OBJECT_STOP:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


_STOP = frozenset({
    "what", "who", "whom", "whose", "where", "when", "which", "why", "how", "do", "does", "did", "is", "are",
    "am", "was", "were", "can", "could", "would", "should", "will", "the", "a", "an", "of", "about", "tell",
    "know", "you", "any", "there", "in", "on", "at", "to", "for", "and", "or", "with", "remember", "now",
    "currently", "current", "still", "not", "it", "that", "this", "be", "each", "every",
    # "how many" and "how much" ask for an amount (``relevance.Question.amount``), which names no thing
    "many", "much",
    # whoever or whatever is asked after names nothing ("is Ifeoma seeing anyone?")
    "anyone", "anybody", "anything", "someone", "somebody", "something",
})
# Set phrases a question asks with, read as the one word they mean: "what does Chiara do for a living?" asks
# for her work (not where she lives), "these days" and "right now" are "now".
_IDIOMS = re.compile(r"\bfor a living\b|\bthese days\b|\bnowadays\b|\bright now\b|\bat the moment\b|\bat present\b")
_IDIOM_WORD = {"for a living": "for work", "these days": "now", "nowadays": "now", "right now": "now",
               "at the moment": "now", "at present": "now"}
# Different words for one idea, so "job" meets "works at" (first person is the asker: ``terms``).
_SAME = {
    "preference": "prefer", "preferred": "prefer", "favourite": "prefer", "favorite": "prefer",
    "love": "like", "enjoy": "like", "hate": "dislike",
    "job": "work", "employer": "work", "company": "work", "employ": "work", "working": "work",
    "home": "live", "living": "live", "located": "live", "based": "live", "moved": "live", "move": "live",
    "called": "name", "named": "name", "has": "have", "had": "have", "having": "have",
}
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
# The first person plural: a question in it alone is of a group ("what do we use for chat?"), and any member's
# words in it ("let's meet at the clock tower") speak for the group.
FIRST_PERSON_PLURAL = frozenset({"we", "us", "our", "ours", "ourselves"})
_POINTING_BACK = re.compile(r"\b(?:it|its|that|this)\b", re.IGNORECASE)  # "it's", "that's" too
_PLURAL_VOICE = re.compile(rf"\b(?:{'|'.join(sorted(FIRST_PERSON_PLURAL))}|let['’]s)\b", re.IGNORECASE)


def points_back(text: str) -> bool:
    """Whether ``text`` has a pronoun standing for a thing said before ("it", "that", "this")."""
    return _POINTING_BACK.search(text) is not None


def speaks_for_us(text: str) -> bool:
    """Whether ``text`` says "we", "us", "our" or "let's": its speaker speaks for a group they belong to."""
    return _PLURAL_VOICE.search(text) is not None


def terms(text: str, me: str = "user") -> set[str]:
    """Content words of ``text``, crudely singular, with synonyms folded together; first person is ``me``
    (the asker's name, casefolded words of it)."""
    out = set()
    mine = {fold(w) for w in _WORD_RE.findall(plain(me))} or {"user"}
    text = _IDIOMS.sub(lambda m: _IDIOM_WORD[m.group(0)], plain(text).replace("_", " "))
    for word in _WORD_RE.findall(text):
        if word in _STOP:
            continue
        if word in FIRST_PERSON:
            out |= mine
            continue
        if len(word) > 1 or word.isdigit():  # not the "s" of "alice's"; the "3" of "v2.3"
            out.add(fold(word))
    return out


def fold(word: str) -> str:
    """One casefolded word, synonyms folded together ("jobs" -> "work"), then stemmed ("smoking", "smokes"
    and "smoke" meet): what two words must share to match."""
    if len(word) > 3 and word.endswith("oes"):
        word = word[:-2]  # "goes" -> "go", "heroes" -> "hero" ("shoes" -> "sho", as "shoe" stems)
    elif (len(word) > 3 or word[:-1].isdigit()) and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]  # "under-12s" meets "under-12"
    return stem(_SAME.get(word, word))


def stem(word: str) -> str:
    """A crude stem: -ing, -ed and a final -e dropped where at least three letters stay ("living" -> "liv",
    "lived" -> "liv", "live" -> "liv"; "thing" stays)."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # "planned" -> "plan", "shopping" -> "shop"
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


# An observation's metadata key naming whom its "he" or "she" stands for (``anaphora.bind``).
ABOUT = "about"


def matching_text(o: ObservationView) -> str:
    """The words an observation is matched by: its text, and whom its "he" or "she" stands for."""
    about = o.metadata.get(ABOUT)
    return f"{o.text} ({about})" if about else o.text
