"""Text -> triples: the dependency mapper first, the rule layer for what it leaves out.

The parser reads most sentences better than the rules (subjects without
adverbs or time phrases, objects without clauses, tense, coordination). The
rules still catch a few short chat turns the parser has no subject for
("call me Sam"): a sentence the mapper gets nothing from goes to the rules,
whose first person is then the speaker too. Measured on the gold table
(bench/offline_gold.py); see the README's quality section.
"""

from __future__ import annotations

import re
from datetime import date

from mnemonet.llm.base import Triple
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline import nlp
from mnemonet.llm.offline.mapping import Mapper, is_question
from mnemonet.llm.offline.parser import extract_triples as rule_triples

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
_LEAD_IN = re.compile(r"^(?:based on|according to|judging by|given|from what)\b[^,]{0,300},\s*", re.IGNORECASE)


def clean_subject(subject: str) -> bool:
    """No time phrase, adverb, reporting verb or conjunction in it: the rule layer's subjects are
    whatever precedes the verb ("In 2019 Jenna"), so the ones that hold more than a name are dropped."""
    words = {w.lower().removesuffix("'s") for w in re.findall(r"[A-Za-z0-9']+", subject)}
    return not words & _NOT_IN_SUBJECTS


def strip_lead_in(text: str) -> str:
    """ "based on their statement, user prefers X" -> "user prefers X"."""
    return _LEAD_IN.sub("", text.strip())


def extract_triples(text: str, speaker: str = "user", today: date | None = None) -> list[Triple]:
    """Every triple ``text`` states, first person being ``speaker``, dates resolved from ``today``."""
    day = today or date.today()
    doc = nlp.parse(strip_lead_in(text))
    mapper = Mapper(doc, speaker, day)
    out: list[Triple] = []
    for sent in doc.sents:
        if is_question(sent):
            continue
        found = mapper.sentence(sent)
        if not found:
            found = [t for t in rule_triples(sent.text, speaker) if clean_subject(t.subject)]
        out.extend(t for t in found if t not in out)
    return out
