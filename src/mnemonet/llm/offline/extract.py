"""Text -> triples: the dependency mapper first, the rule layer for what it leaves out.

The parser reads most sentences better than the rules (subjects without
adverbs or time phrases, objects without clauses, tense, coordination). The
rules still catch a few short chat turns the parser has no subject for
("call me Sam"): a sentence the mapper gets nothing from goes to the rules,
whose first person is then the speaker too. Measured on the gold table
(bench/offline_gold.py); see docs/answers.md, "Quality of the offline model".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from mnemonet.llm.base import Triple
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.mapping import Mapper, is_question
from mnemonet.llm.offline.parser import extract_triples as rule_triples
from mnemonet.model.records import Revision
from mnemonet.truth.cues import says_change, says_correction

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

_NOT_IN_SUBJECTS = (
    lx.TIME_WORDS
    | lx.TIME_ADVERBS
    | lx.FILLER_ADVERBS
    | lx.REPORTING_FORMS
    | lx.CONJUNCTIONS
    | {"next", "last", "ago", "used", "both", "probably", "maybe", "perhaps"}
    | {str(y) for y in range(1900, 2100)}
)
# A leading "based on ..., " / "according to ..., " says where a claim comes from, not what it says.
# "as well" ending a clause is "too": the parser reads "as well" as part of the object before it.
_AS_WELL = re.compile(r"\bas well\b(?=\s*(?:[.,!?;]|$))", re.IGNORECASE)
_LEAD_IN = re.compile(r"^(?:based on|according to|per|judging by|given|from what)\b[^,]{0,300},\s*", re.IGNORECASE)


def clean_subject(subject: str) -> bool:
    """No time phrase, adverb, reporting verb or conjunction in it: the rule layer's subjects are
    whatever precedes the verb ("In 2019 Jenna"), so the ones that hold more than a name are dropped."""
    words = {w.lower().removesuffix("'s") for w in re.findall(r"[A-Za-z0-9']+", subject)}
    return not words & _NOT_IN_SUBJECTS


def strip_lead_in(text: str) -> str:
    """ "based on their statement, user prefers X" -> "user prefers X"."""
    return _LEAD_IN.sub("", text.strip())


def revision_of(sentence: Span) -> Revision | None:
    """ "correction" when the sentence corrects an earlier value ("sorry", "actually", "X is wrong", any
    form of the verb "correct", "I misspoke", "typo"), "change" when it says the value changed ("now",
    "no longer", "since the reorg"), else None."""
    if says_correction(sentence.text) or any(_corrects(t) for t in sentence):
        return "correction"
    if says_change(sentence.text) or any(t.lower_ == "since" and t.dep_ == "prep" for t in sentence):
        return "change"
    return None


def _corrects(tok: Token) -> bool:
    # "let me correct that", "correcting myself"; "that's correct" confirms.
    return tok.lemma_.lower() in lx.CORRECTION_LEMMAS and (tok.lemma_.lower() != "correct" or tok.pos_ == "VERB")


@dataclass(frozen=True)
class Reading:
    """The part of a text the parser reads, and whether the text opened with a correction cue."""

    body: str
    corrects: bool


def reading_of(text: str) -> Reading:
    """ "Correction: based on X, I like tea" -> body "I like tea", corrects: the lead-in and the opening
    cues are dropped before the parse (their words would only confuse it)."""
    body = _AS_WELL.sub("too", strip_lead_in(text))
    opening = _LEADING_CUE.match(body)
    return Reading(body[opening.end():], True) if opening else Reading(body, False)


# Chat leaves out its first-person subject ("promoted to senior engineer today", "ditched the iPhone for a
# Pixel", "loving the new flat", "got engaged"): the subject a root verb of that form stands for, said again for
# the parse.
_ELIDED_SUBJECT = {"VBD": "I", "VBN": "I got", "VBG": "I am"}
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
_AUXILIARIES = frozenset({"auxpass", "aux"})
_BEFORE_ELIDED = frozenset({"ADV", "INTJ", "CCONJ", "PUNCT"})


def _elided_subject(root: Token) -> str:
    """What a subjectless root verb stands after: a participle taking a particle or an object is an active past
    tense the tagger misread ("signed up for Audible", "booked the flights"), not a passive ("promoted to ...")."""
    if root.tag_ == "VBN" and any(c.dep_ in ("prt", "dobj") for c in root.children):
        return "I"
    return _ELIDED_SUBJECT[root.tag_]


def with_elided_subjects(doc: Doc) -> str | None:
    """The text of ``doc`` with the first-person subject said where a sentence opens with a verb that has
    none (past, participle or -ing: never an imperative, which has the plain form), or with its auxiliary
    ("got engaged in Lisbon"), or whose opening clause is a past verb without one ("gave up coffee, it's
    tea now"); None if none does."""
    parts, changed = [], False
    for sent in doc.sents:
        root, first = sent.root, sent[0]
        subjectless = root.tag_ in _ELIDED_SUBJECT and not is_question(sent) \
            and not any(c.dep_ in _SUBJECTS for c in root.children)
        # "just signed up for Audible": only adverbs, interjections or a conjunction come before the verb
        opens = all(t.pos_ in _BEFORE_ELIDED for t in sent[: root.i - sent.start])
        bare = subjectless and opens and not any(c.dep_ in _AUXILIARIES for c in root.children)
        helped = subjectless and first.head == root and first.dep_ == "auxpass"  # "got promoted", "was moved"
        # "gave up coffee, it's green tea now": the opening clause's past verb has no subject, the sentence's has
        opening = first.tag_ == "VBD" and first.dep_ in ("advcl", "ccomp") and first.head == root \
            and not is_question(sent) \
            and not any(c.dep_ in _SUBJECTS | _AUXILIARIES for c in first.children)
        parts.append(f"{_elided_subject(root)} {sent.text}" if bare else f"I {sent.text}" if helped or opening
                     else sent.text)
        changed |= bare or helped or opening
    return " ".join(parts) if changed else None


def extract_triples(doc: Doc, reading: Reading, speaker: str = "user", today: date | None = None) -> list[Triple]:
    """Every triple the parsed ``reading`` states, first person being ``speaker``, dates resolved from
    ``today``; each carries the revision cue of its sentence (a leading "Correction:" counts for the first)."""
    day = today or date.today()
    mapper = Mapper(doc, speaker, day)
    out: list[Triple] = []
    for n, sent in enumerate(doc.sents):
        if is_question(sent):
            continue
        found = mapper.sentence(sent)
        if not found:
            found = [t for t in rule_triples(sent.text, speaker) if clean_subject(t.subject)]
        # An opening "No," / "Wait," / "Sorry," answers what was said before: a correction. A cue marks
        # every triple of its sentence; a correction outranks the change a verb of change marks.
        revision = "correction" if reading.corrects and n == 0 else revision_of(sent)
        if revision is not None:
            found = [t if revision == "change" and t.revision else t.model_copy(update={"revision": revision})
                     for t in found]
        out.extend(t for t in found if t not in out)
    return out


def _words(phrases: tuple[str, ...]) -> str:
    return "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases, key=len, reverse=True))


# One or more cues ending in punctuation: "No, wait, ...", "no wait, ...", "Hold on: ...".
_CUE = _words(lx.LEADING_CUES)
_LEADING_CUE = re.compile(rf"^(?:(?:(?:{_CUE})\s+)*(?:{_CUE})\s*[,:;.!-]+\s*)+", re.IGNORECASE)
