"""The offline provider's inference, contradiction judging, answering and summarising rules."""

from __future__ import annotations

from mnemonet.llm.base import PairJudgement, Triple
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.words import singular, tokens
from mnemonet.model.records import normalise_name
from mnemonet.truth.vocabulary import default_vocabulary

# -- inference ----------------------------------------------------------------


def infer_from(triples: list[Triple]) -> list[Triple]:
    """Claims the literal triples support; never a literal triple again.

    works_at X -> X employs S (0.8); lives_in X -> S located_in X (0.8);
    born_in X -> S comes_from X (0.7); likes/loves/enjoys X -> S interested_in X (0.7);
    loves X -> S likes X (0.85); dislikes X -> S does not like X (0.8).

    A claim holds when its basis holds: it carries the basis's tense, ``valid_at`` and revision ("I used
    to work at Google" -> Google employed erin, in the past), and its confidence is the rule's, lowered
    as the basis's is below an unhedged statement's (a past fact, a hedge: "I think I live in X").
    """
    out: list[Triple] = []
    for t in triples:
        if t.negated:
            continue
        rules: list[tuple[str, str, str, bool, float]] = []  # subject, predicate, object, negated, confidence
        if t.predicate == "works_at":
            rules.append((t.object, "employs", t.subject, False, 0.8))
        elif t.predicate == "lives_in":
            rules.append((t.subject, "located_in", t.object, False, 0.8))
        elif t.predicate == "born_in":
            rules.append((t.subject, "comes_from", t.object, False, 0.7))
        elif t.predicate == "dislikes":
            rules.append((t.subject, "likes", t.object, True, 0.8))
        if t.predicate in ("likes", "loves", "enjoys"):
            rules.append((t.subject, "interested_in", t.object, False, 0.7))
        if t.predicate == "loves":
            rules.append((t.subject, "likes", t.object, False, 0.85))
        scale = min(1.0, t.confidence / lx.DEFAULT_CONFIDENCE)
        derived = [
            Triple(subject=s, predicate=p, object=o, negated=n, confidence=round(c * scale, 3), tense=t.tense,
                   valid_at=t.valid_at, revision=t.revision)
            for s, p, o, n, c in rules
        ]
        out.extend(d for d in derived if d not in out and not _same_claim(d, triples))
    return out


def _same_claim(t: Triple, others: list[Triple]) -> bool:
    key = (t.subject, t.predicate, t.object, t.negated)
    return any((o.subject, o.predicate, o.object, o.negated) == key for o in others)


# -- contradiction ------------------------------------------------------------


def _words(name: str) -> set[str]:
    return {singular(w) for w in tokens(name)} - {"the", "a", "an", "of"}


def _polarity(t: Triple) -> int:
    return default_vocabulary().polarity(t.predicate, t.negated)


def judge(a: Triple, b: Triple, index: int) -> PairJudgement:
    """Do ``a`` and ``b`` contradict? Rules, in order:

    1. same subject, predicate and object, one negated;
    2. opposite feelings (likes/loves/prefers/enjoys/wants vs dislikes, or negations) about the same
       object, qualifiers and all ("mornings" / "morning": yes; "short meetings" / "meetings on
       Fridays": no, both can hold);
    3. both ``prefers`` with different objects that share a head word, or that name different
       times of day ("morning meetings" / "afternoon");
    4. two values of an amount (``has_value``) in the same unit;
    5. two different values of a single-valued attribute (has_name, lives_in, works_at ...).
    """
    if normalise_name(a.subject) != normalise_name(b.subject):
        return PairJudgement(index=index, contradicts=False, reason="different subjects")
    obj_a, obj_b = normalise_name(a.object), normalise_name(b.object)
    words_a, words_b = _words(a.object), _words(b.object)
    same_object = obj_a == obj_b or words_a == words_b
    if a.predicate == b.predicate and same_object and a.negated != b.negated:
        return PairJudgement(index=index, contradicts=True, reason=f"one negates the other ({a.predicate} {a.object})")
    pa, pb = _polarity(a), _polarity(b)
    # Only about the same thing, qualifiers and all: "likes short meetings" and "hates meetings on Fridays"
    # both hold (a narrower feeling never retires a broader, different one).
    if pa and pb and pa != pb and same_object:
        return PairJudgement(index=index, contradicts=True,
                             reason=f"opposite feelings about {', '.join(sorted(words_a))}")
    if a.predicate == b.predicate == "prefers" and not a.negated and not b.negated and not same_object:
        times_a, times_b = words_a & lx.TIME_WORDS, words_b & lx.TIME_WORDS
        if times_a and times_b and times_a != times_b:
            return PairJudgement(index=index, contradicts=True,
                                 reason=f"different preferred times: {', '.join(sorted(times_a))} vs "
                                     f"{', '.join(sorted(times_b))}")
        if _head(a.object) == _head(b.object):
            return PairJudgement(index=index, contradicts=True, reason=f"different preferred {_head(a.object)}")
    if a.predicate == b.predicate == lx.VALUE_PREDICATE and not a.negated and not b.negated and not same_object:
        if _unit(a.object) == _unit(b.object):  # "50k" / "20k", "10 people" / "12 people"; not "16 cores" / "64 GB"
            return PairJudgement(index=index, contradicts=True, reason=f"two values of {a.subject} in one unit")
    single_valued = a.predicate == b.predicate and default_vocabulary().single_valued(a.predicate)
    if single_valued and not a.negated and not b.negated and not same_object:
        return PairJudgement(index=index, contradicts=True, reason=f"{a.predicate} has one value at a time")
    return PairJudgement(index=index, contradicts=False, reason="no rule finds a conflict")


def _unit(amount: str) -> set[str]:
    """The words of an amount other than its numbers: "1500 euros" -> {"euro"}, "20k" -> {}."""
    return {w for w in _words(amount) if not any(ch.isdigit() for ch in w)}


def _head(name: str) -> str:
    words = tokens(name)
    return singular(words[-1]) if words else ""


# -- answering ----------------------------------------------------------------

_QUERY_STOP = frozenset({
    "what", "who", "whom", "whose", "where", "when", "which", "why", "how", "do", "does", "did", "is", "are",
    "am", "was", "were", "can", "could", "would", "should", "will", "the", "a", "an", "of", "about", "tell",
    "me", "know", "you", "any", "there", "in", "on", "at", "to", "for", "and", "or", "with", "remember",
})
# Different words for one idea, so "preferences" meets "prefers" and "job" meets "works at".
_SYNONYMS = {
    "preference": "prefer", "prefers": "prefer", "preferred": "prefer", "favourite": "prefer", "favorite": "prefer",
    "like": "like", "likes": "like", "love": "like", "loves": "like", "enjoy": "like", "enjoys": "like",
    "dislike": "dislike", "dislikes": "dislike", "hate": "dislike", "hates": "dislike",
    "job": "work", "works": "work", "employer": "work", "live": "live", "lives": "live", "home": "live",
    "called": "name", "i": "user", "my": "user", "me": "user", "mine": "user", "we": "user", "our": "user",
}


def _terms(text: str) -> set[str]:
    out = set()
    for word in tokens(text):
        word = word.removesuffix("'s")
        if word in _QUERY_STOP:
            continue
        word = _SYNONYMS.get(word, singular(word))
        out.add(_SYNONYMS.get(word, word))
    return out


def select_memory(query: str, memory: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """The memory lines whose fact shares a term with the query (``user`` alone does not count),
    then lines whose fact shares a content word with those; each group in the caller's order,
    at most ``limit`` in all.

    Only the fact (before the first `` | ``) is matched: the status and provenance columns
    (dates, sources, "confidence") are shared by every line and would select them all.
    """
    wanted = _terms(query)
    lines = [(mid, " ".join(text.split()), _terms(text.partition(" | ")[0])) for mid, text in memory]
    direct = [line for line in lines if (line[2] & wanted) - {"user"}]
    content = set().union(*(line[2] for line in direct)) - {"user", "prefer", "like", "dislike"} if direct else set()
    related = [line for line in lines if line not in direct and line[2] & content]
    return [(mid, text) for mid, text, _ in (direct + related)[:limit]]


def write_answer(lines: list[tuple[str, str]]) -> str:
    """The first current fact as the answer, then other current facts, then earlier ones, every one cited.

    Lines read ``<fact> | <status> | ...`` (MemoryService's format); a line
    without a status counts as current.
    """
    if not lines:
        return "Nothing in memory answers that."
    current: list[str] = []
    earlier: list[str] = []
    for mid, line in lines:
        fact, _, rest = line.partition(" | ")
        status = rest.split(" | ", 1)[0].strip()
        (earlier if status == "earlier" else current).append(f"{fact.strip().rstrip('.')} [{mid}]")
    parts = []
    if current:
        parts.append(f"From memory: {current[0]}.")
        if len(current) > 1:
            parts.append(f"Also: {'; '.join(current[1:])}.")
    if earlier:
        parts.append(f"Earlier (changed since): {'; '.join(earlier)}.")
    return " ".join(parts)


# -- summarising --------------------------------------------------------------


def summarise_facts(concept: str, statements: list[str], previous: str | None, max_chars: int) -> str:
    """``<concept>: fact; fact; fact.`` - the previous summary's facts first, new ones appended,
    repeats dropped, the oldest facts dropped when it grows past ``max_chars``."""
    prefix = f"{concept}: "
    facts: list[str] = []
    if previous:
        body = previous[len(prefix):] if previous.startswith(prefix) else previous
        facts = [f.strip() for f in body.rstrip(".").split("; ") if f.strip()]
    for statement in statements:
        fact = " ".join(statement.split()).rstrip(".;")
        if fact and fact.casefold() not in {f.casefold() for f in facts}:
            facts.append(fact)
    if not facts:
        return f"{prefix}nothing is known yet."
    summary = prefix + "; ".join(facts) + "."
    while len(facts) > 1 and len(summary) > max_chars:
        facts.pop(0)
        summary = prefix + "; ".join(facts) + "."
    return summary[:max_chars]
