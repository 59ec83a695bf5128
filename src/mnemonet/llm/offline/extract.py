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
from mnemonet.llm.offline import nlp
from mnemonet.llm.offline.mapping import Mapper, is_question
from mnemonet.llm.offline.parser import extract_triples as rule_triples

# A leading "based on ..., " / "according to ..., " says where a claim comes from, not what it says.
_LEAD_IN = re.compile(r"^(?:based on|according to|judging by|given|from what)\b[^,]{0,300},\s*", re.IGNORECASE)


def extract_triples(text: str, speaker: str = "user", today: date | None = None) -> list[Triple]:
    """Every triple ``text`` states, first person being ``speaker``, dates resolved from ``today``."""
    day = today or date.today()
    doc = nlp.parse(_LEAD_IN.sub("", text.strip()))
    mapper = Mapper(doc, speaker, day)
    out: list[Triple] = []
    for sent in doc.sents:
        if is_question(sent):
            continue
        found = mapper.sentence(sent)
        if not found:
            found = rule_triples(sent.text, speaker)
        out.extend(t for t in found if t not in out)
    return out

