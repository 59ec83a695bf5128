"""Sentence -> triples, by ordered regular-expression rules (the offline translator's core).

Pipeline: normalise (quotes, contractions) -> split sentences on ``. ! ? ;``
-> drop questions -> split each sentence into clauses on ``,``, ``and``,
``but``, ``so`` where the next part is a clause of its own (else the part
stays with the previous clause, so "I like cats and dogs" keeps both
objects) -> parse each clause. A clause is parsed by the rule whose verb
comes first (the shortest subject wins; ties go to the earlier rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mnemonet.llm.base import Triple
from mnemonet.llm.hedges import NO_HEDGE, hedge_confidence
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.words import ing_form, normalise_text, singular, third_person


def _alternation(phrases: list[str]) -> str:
    return "|".join(re.escape(p) for p in sorted(set(phrases), key=len, reverse=True))


def _verb_table() -> dict[str, tuple[str, bool]]:
    table: dict[str, tuple[str, bool]] = {}
    for verb, predicate in lx.VERBS.items():
        head, _, particle = verb.partition(" ")
        for form in (head, third_person(head)):
            table[f"{form} {particle}".strip()] = (predicate, False)
    table.update(lx.PHRASES)
    return table


_VERB_FORMS = _verb_table()
_COPULA_TABLE = {**lx.COPULA_PHRASES, "called": "has_name", "named": "has_name"}
for _verb, _pred in lx.VERBS.items():  # progressive: "I am working on X"
    _head, _, _particle = _verb.partition(" ")
    _COPULA_TABLE.setdefault(f"{ing_form(_head)} {_particle}".strip(), _pred)

# First person while parsing; ``extract_triples`` replaces it with the speaker's name.
_ME = "\x00me"
_NEG = r"(?P<n>not |never |no longer )?"
_BE = r"(?:am|is|are|was|were)"
# Rules whose match is decided by where their verb sits (shortest subject wins).
_GENERAL: list[tuple[str, re.Pattern[str]]] = [
    ("copula_phrase",
     re.compile(rf"^(?P<s>.+?) {_BE} {_NEG}(?P<v>{_alternation(list(_COPULA_TABLE))}) (?P<o>.+)$", re.I)),
    ("verb", re.compile(
        rf"^(?P<s>.+?) (?:(?:do|does|did|will|can|could|should|may|might) )?{_NEG}"
        rf"(?P<v>{_alternation(list(_VERB_FORMS))})(?: (?P<o>.+))?$", re.I)),
    ("is_a", re.compile(rf"^(?P<s>.+?) {_BE} {_NEG}(?:a|an|the) (?P<o>.+)$", re.I)),
    ("copula", re.compile(rf"^(?P<s>.+?) (?:am|is|are) {_NEG}(?P<o>.+)$", re.I)),
]
# Anchored rules tried first.
_MY_NAME = re.compile(r"^(?:my name (?:is|was) |(?:you can |people |everyone )?calls? me )(?P<n>not )?(?P<o>.+)$", re.I)
_MY_ATTR = re.compile(r"^my (?P<a>[a-z][a-z ]{0,40}?) (?:is|are) (?P<n>not )?(?P<o>.+)$", re.I)
_BETTER = re.compile(
    r"^(?P<o>.+?) (?:is|are|would be|will be|works|work|seems|seem|sounds|sound|feels|feel) (?P<n>not )?"
    r"(?:much |way |a lot |far |even |so much )?"
    r"(?P<w>better|best|the best|preferable|ideal|nicer|easier|worse|the worst)"
    r"(?: for me| for us| for the user)?$",
    re.I,
)
_ATTRIBUTE_NOUNS = frozenset({
    "age", "email", "email address", "birthday", "phone", "phone number", "address", "job", "role", "title",
    "hometown", "language", "native language", "timezone", "time zone", "team", "manager", "boss", "goal", "nickname",
})
_COMMON_NOUNS = lx.TIME_WORDS | lx.ACTIVITY_WORDS | lx.PLACE_WORDS
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+")
_CLAUSE_SPLIT = re.compile(r"(\s*,\s*(?:and|but|so)\s+|\s*,\s*|\s+(?:and|but|so|whereas|although|while)\s+)", re.I)
_OBJECT_LIST = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.I)
_PREFER_CUT = re.compile(r"\s+(?:over|rather than|instead of|more than|to)\s+.+$", re.I)


def extract_triples(text: str, speaker: str = "user") -> list[Triple]:
    """Every triple the rules find in ``text`` (questions assert nothing), without repeats;
    first person ("I", "my X") is ``speaker``."""
    out: list[Triple] = []
    for sentence in _SENTENCE_SPLIT.split(normalise_text(text)):
        if is_question(sentence):
            continue
        for clause in split_clauses(sentence.rstrip(".!;: ")):
            for triple in parse_clause(clause):
                triple = triple.model_copy(update={"subject": _speaking(triple.subject, speaker),
                                                   "object": _speaking(triple.object, speaker)})
                if triple not in out:
                    out.append(triple)
    return out


def _speaking(name: str, speaker: str) -> str:
    return speaker + name[len(_ME):] if name.startswith(_ME) else name


def is_question(sentence: str) -> bool:
    """Ends with ``?`` or starts with a question word or an inverted auxiliary."""
    s = _strip_markers(sentence.strip())[0]
    first = s.split(" ", 1)[0].lower() if s else ""
    return sentence.rstrip().endswith("?") or first in lx.QUESTION_WORDS


def split_clauses(sentence: str) -> list[str]:
    """Split where the following part parses on its own (or with the previous subject)."""
    parts = _CLAUSE_SPLIT.split(sentence)
    clauses = [parts[0]]
    for sep, part in zip(parts[1::2], parts[2::2], strict=False):
        if parse_clause(part):
            clauses.append(part)
            continue
        subject = _subject_of(clauses[-1])
        if subject and _starts_with_verb(part) and parse_clause(f"{subject} {part}"):
            clauses.append(f"{subject} {part}")  # "I like cats and hate dogs": shared subject
            continue
        clauses[-1] = clauses[-1] + sep + part
    return clauses


def parse_clause(clause: str) -> list[Triple]:
    """The triples of one clause, or [] when no rule matches."""
    text, confidence = _strip_markers(clause.strip(" .!;:\"'"))
    text = _drop_fillers(text)
    if not text or text.split(" ", 1)[0].lower() in lx.QUESTION_WORDS:
        return []
    m = _MY_NAME.match(text)
    if m:
        return _build("I", "has_name", m.group("o"), bool(m.group("n")), confidence)
    m = _MY_ATTR.match(text)
    if m and (m.group("a").lower() in _ATTRIBUTE_NOUNS or m.group("a").lower().startswith(("favourite ", "favorite "))):
        predicate = "has_" + "_".join(m.group("a").lower().split())
        return _build("I", predicate, m.group("o"), bool(m.group("n")), confidence)
    m = _BETTER.match(text)
    if m:
        # A stateless rule: "<X> is better" is the speaker preferring X ("worse": not preferring).
        worse = m.group("w").lower() in ("worse", "the worst")
        return _build("I", "prefers", m.group("o"), bool(m.group("n")) != worse, confidence)
    best: tuple[str, re.Match[str]] | None = None
    for kind, pattern in _GENERAL:
        m = pattern.match(text)
        if m and (best is None or m.end("s") < best[1].end("s")):
            best = (kind, m)
    if best is None:
        return []
    kind, m = best
    negated = bool(m.group("n"))
    if kind == "verb":
        predicate, phrase_negated = _VERB_FORMS[m.group("v").lower()]
        obj = m.group("o") or ""
        negated = negated != phrase_negated
    elif kind == "copula_phrase":
        predicate, obj = _COPULA_TABLE[m.group("v").lower()], m.group("o")
    elif kind == "is_a":
        predicate, obj = "is_a", m.group("o")
    else:
        predicate, obj = "has_property", m.group("o")
    return _build(m.group("s"), predicate, obj, negated, confidence)


def _build(subject: str, predicate: str, obj: str, negated: bool, confidence: float) -> list[Triple]:
    # A subject is in its own clause: what a comma sets off before it is another ("I got that wrong, it's X").
    subj = _resolve(subject.rpartition(",")[2], as_subject=True)
    if subj is None or len(subj.split()) > 8:
        return []
    obj = _strip_trailing_fillers(obj.strip(" .!;:\"'"))
    if predicate in ("prefers", "wants", "likes", "loves", "dislikes", "enjoys"):
        obj = re.sub(r"^(?:to|have|having)\s+", "", obj, flags=re.I)
    if predicate == "prefers":
        obj = _PREFER_CUT.sub("", obj)
    out: list[Triple] = []
    for item, item_negated in _object_items(obj):
        if item.lower().startswith("no "):  # "Alice has no car"
            item, item_negated = item[3:], not item_negated
        resolved = _resolve(item, as_subject=False)
        if resolved:
            out.append(Triple(subject=subj, predicate=predicate, object=resolved,
                              negated=negated != item_negated, confidence=confidence))
    return out


def _object_items(obj: str) -> Iterator[tuple[str, bool]]:
    """``cats and dogs`` -> cats, dogs; ``cats but not dogs`` -> cats, (dogs, negated)."""
    main, *rest = re.split(r"\s+but not\s+", obj, maxsplit=1, flags=re.I)
    excluded = rest[0] if rest else ""
    items = _OBJECT_LIST.split(main) if re.search(r"\s+and\s+", main, re.I) else [main]
    for item in items:
        yield item, False
    if excluded:
        yield excluded, True


def _resolve(phrase: str, *, as_subject: bool) -> str | None:
    """Articles dropped, first person -> ``user``, ``my X`` -> ``user's X``; unresolvable pronouns -> None."""
    words = phrase.strip(" ,.!;:\"'").split()
    while words and words[0].lower() in lx.ARTICLES:
        words = words[1:]
    if not words:
        return None
    low = " ".join(words).lower()
    if low in lx.FIRST_PERSON:
        return _ME
    if low in lx.UNRESOLVED_PRONOUNS or (as_subject and words[0].lower() in lx.UNRESOLVED_PRONOUNS):
        return None
    if singular(words[0]) in _COMMON_NOUNS:  # sentence-initial capital of a common noun: "Evenings are worse"
        words[0] = words[0].lower()
    if words[0].lower() in ("my", "our"):
        return " ".join([f"{_ME}'s", *words[1:]]) if len(words) > 1 else None
    return " ".join(words)


def _subject_of(clause: str) -> str | None:
    triples = parse_clause(clause)
    return triples[0].subject if triples else None


def _starts_with_verb(part: str) -> bool:
    first = part.strip().split(" ", 1)[0].lower()
    return first in ("not", "never", "do", "does", "can", "would") or any(
        form.split(" ", 1)[0] == first for form in _VERB_FORMS
    )


def _strip_markers(text: str) -> tuple[str, float]:
    """Drop leading discourse markers ("actually", "well", ...); hedges lower the confidence."""
    confidence = NO_HEDGE
    changed = True
    while changed and text:
        changed = False
        low = text.lower()
        for marker in lx.HEDGES + lx.LEADING_MARKERS:
            if low == marker or low.startswith((marker + " ", marker + ",")):
                text = text[len(marker):].lstrip(" ,:")
                if marker in lx.HEDGES:
                    confidence = min(confidence, hedge_confidence(marker) or NO_HEDGE)
                changed = True
                break
    return text, confidence


def _drop_fillers(text: str) -> str:
    return " ".join(w for w in text.split() if w.lower() not in lx.FILLER_ADVERBS)


def _strip_trailing_fillers(text: str) -> str:
    low = text.lower()
    for filler in lx.TRAILING_FILLERS:
        if low.endswith(" " + filler):
            return text[: -len(filler) - 1].rstrip()
    return text
