"""Which statement is current: the one policy, applied at write (the validation worker) and at read.

Two statements conflict (``classify``) by the vocabulary: the same relation
with another value where it has one value at a time (not said together in one
observation with no revision cue: "my kids are Amara and Tobi"; and the same qualified
slot: "a bar on weekends" and "a bookshop on weekdays" both hold, and a
narrower value never conflicts with a broader one it does not repeat), a
negation of the same claim, sides of an exclusivity group, opposite feelings
about one thing (left to the model). Which side stands (``resolve``):

A statement may carry a revision cue from its text (``revision``):
``correction`` ("sorry", "actually", "correction:", "I meant", "X is wrong")
or ``change`` ("now", "no longer", "anymore"). A cue is the speaker saying the
new value replaces an earlier one, so it decides where the attribute alone
would not (a birthday is not temporal; two agents seconds apart are too close
for recency).

A newer past-tense statement of a value ("I used to work at IBM") ends the
older present one of the same source (or of the subject speaking for itself),
whatever its confidence (the past tense lowers it; that is no doubt).

Same source (a source updating itself): the newer statement supersedes the
older one if the predicate is temporal or the newer carries a revision cue,
unless it is less confident. Otherwise (an uncued restatement of a
non-temporal fact, an exclusivity pair such as likes/dislikes) the conflict
stays open.

Different sources: first, the subject speaks for themselves (``subject_authority``,
on by default): a person's own statement about themselves stands over another
source's statement about them, earlier or later, unless the other's is the
later one and reports a change or corrects (a revision cue). Otherwise each side weighs
``trust(source) x confidence`` (``source_trust``, default 1.0 for every source).

1. If one side outweighs the other by more than ``resolution_margin``, it
   supersedes the other (a trusted or confident source over a doubtful one).
2. Otherwise, if the newer side carries a revision cue, it supersedes the
   older (another agent correcting or updating what was said).
3. Otherwise, for a temporal predicate, if the two were said more than
   ``resolution_close_seconds`` apart, the newer supersedes the older (a change).
4. Otherwise the conflict stays open (``CONTRADICTS`` only): equal weight,
   close in time, nothing in the text says which replaces which; ``remember``
   shows both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from mnemonet.model.ids import is_observation_id
from mnemonet.model.records import normalise_name
from mnemonet.model.views import ContradictionView, StatementView
from mnemonet.truth.text import object_words, time_qualifiers
from mnemonet.truth.vocabulary import Vocabulary


class Policy(Protocol):
    """The settings the policy reads (``mnemonet.settings.Settings`` has them)."""

    source_trust: dict[str, float]
    resolution_margin: float
    resolution_close_seconds: float
    subject_authority: bool


@dataclass(frozen=True)
class Verdict:
    """What the rules say about a pair: contradicts, none, or ambiguous (ask the model)."""

    kind: Literal["contradicts", "none", "ambiguous"]
    reason: str


def classify(
    new: StatementView, old: StatementView, vocabulary: Vocabulary, learned: Mapping[str, str] | None = None
) -> Verdict:
    """The rule verdict on two statements (``new`` the later one); ``learned`` gives the
    cardinality of predicates outside the vocabulary (multi when absent)."""
    if normalise_name(new.subject) != normalise_name(old.subject):
        return Verdict("none", "different subjects")
    if vocabulary.spec(new.predicate).skip or vocabulary.spec(old.predicate).skip:
        return Verdict("none", "not validated")
    pn, po = vocabulary.canonical(new.predicate), vocabulary.canonical(old.predicate)
    wn, wo = object_words(new.object), object_words(old.object)
    same_object = normalise_name(new.object) == normalise_name(old.object) or (wn and wn == wo)
    if pn == po and (new.tense == "past") != (old.tense == "past"):
        # A past statement tells of an earlier state: of the same value it says it holds no longer, of
        # another it says nothing about the present ("used to work at Google, now at Microsoft").
        if same_object and new.negated == old.negated:
            return Verdict("contradicts", f"{pn} {old.object} is said to hold no longer")
        return Verdict("none", "one is said of the past")
    if pn == po:
        if same_object:
            if new.negated != old.negated:
                return Verdict("contradicts", f"one negates the other ({pn} {old.object})")
            return Verdict("none", "the same statement")
        if new.negated or old.negated:
            return Verdict("none", "a negation of another value")
        if _observations(new) & _observations(old) and not (new.revision or old.revision):
            # "my kids are Amara and Tobi": values said together, with nothing saying one replaces the other
            return Verdict("none", "said together in one observation")
        qualified = time_qualifiers(new.object)
        if qualified and qualified != time_qualifiers(old.object):
            # Another qualified slot ("a bar on weekends" beside "a bookshop on weekdays"), or a narrower one
            # beside a broader value: both hold, whatever the relation's cardinality.
            return Verdict("none", f"{new.object} holds {', '.join(sorted(qualified))}: another slot")
        cardinality = vocabulary.spec(pn).cardinality if vocabulary.known(pn) else (learned or {}).get(pn, "multi")
        if cardinality == "single":
            return Verdict("contradicts", f"{pn} has one value at a time: {old.object} vs {new.object}")
        if cardinality == "single_per_topic":
            return Verdict("ambiguous", f"two values of {pn}; the same topic?")
        return Verdict("none", f"{pn} has many values")
    group = vocabulary.exclusive(pn, po)
    if group is not None:
        if new.negated or old.negated:
            return Verdict("none", f"a negated side of {group.name}")
        if group.scope == "subject":
            return Verdict("contradicts", f"{group.name}: {pn} excludes {po}")
        if same_object:
            return Verdict("contradicts", f"{group.name}: {pn} vs {po} {old.object}")
    polarity_new, polarity_old = vocabulary.polarity(pn, new.negated), vocabulary.polarity(po, old.negated)
    if polarity_new and polarity_old and polarity_new != polarity_old and wn & wo:
        return Verdict("ambiguous", f"opposite feelings about {', '.join(sorted(wn & wo))}")
    return Verdict("none", "no rule finds a conflict")


@dataclass(frozen=True)
class Resolution:
    """``winner`` supersedes ``loser`` for ``reason``; no winner: the conflict stays open."""

    winner: StatementView | None
    loser: StatementView | None
    reason: str


def _weight(s: StatementView, settings: Policy) -> float:
    return settings.source_trust.get(s.source or "", 1.0) * s.confidence


def _cued(new: StatementView, old: StatementView) -> str:
    verb = "corrects" if new.revision == "correction" else "reports a change of"
    whose = "its own" if new.source == old.source else f"{old.source}'s"
    return f"{new.source} {verb} {whose} {old.predicate}"


def resolve(new: StatementView, old: StatementView, temporal: bool, settings: Policy) -> Resolution:
    """The policy above for a contradicting pair, ``new`` the later statement."""
    if (new.tense == "past") != (old.tense == "past") and new.tense == "past":
        # "I used to work at IBM" after "I work at IBM": the value is said to hold no longer. The tense
        # lowers a past statement's confidence; it is no doubt about the ending.
        if new.source == old.source or (settings.subject_authority and speaks_for_self(new)):
            return Resolution(new, old, f"{new.source} says {new.predicate} {old.object} holds no longer")
    if new.source and new.source == old.source:
        if new.confidence < old.confidence:
            return Resolution(None, None, f"{new.source} said both; the newer is less confident")
        if temporal:
            return Resolution(new, old, f"newer {new.predicate} from {new.source}")
        if new.revision is not None:
            return Resolution(new, old, _cued(new, old))
        return Resolution(None, None, f"{new.source} said both; {new.predicate} does not change and nothing says which")
    if settings.subject_authority and speaks_for_self(new) != speaks_for_self(old):
        own, other = (new, old) if speaks_for_self(new) else (old, new)
        # Another's later word about them stands only if it reports a change or corrects ("she moved").
        if own is new or new.revision is None:
            when = "earlier" if own is new else "later, unmarked"
            return Resolution(own, other, f"{own.source} speaks for themselves over {other.source}'s {when} statement")
    w_new, w_old = _weight(new, settings), _weight(old, settings)
    margin = 1.0 + settings.resolution_margin
    if w_new > w_old * margin:
        return Resolution(new, old, _outweighs(new, old, w_new, w_old))
    if w_old > w_new * margin:
        return Resolution(old, new, _outweighs(old, new, w_old, w_new))
    if new.revision is not None:
        return Resolution(new, old, _cued(new, old))
    apart = (new.created_at - old.created_at) / 1000
    if temporal and apart > settings.resolution_close_seconds:
        return Resolution(new, old, f"newer {new.predicate} from {new.source}, {apart:.0f}s after {old.source}'s")
    return Resolution(None, None, f"{old.source} and {new.source} disagree with equal weight, {apart:.0f}s apart")


def speaks_for_self(s: StatementView) -> bool:
    """Whether ``s`` is its source's statement about itself (first person: "I live in York" from alice)."""
    return bool(s.source) and normalise_name(s.subject) == normalise_name(s.source or "")


def _outweighs(winner: StatementView, loser: StatementView, w_winner: float, w_loser: float) -> str:
    return f"{winner.source} outweighs {loser.source} (trust x confidence {w_winner:.2f} vs {w_loser:.2f})"


def _observations(s: StatementView) -> set[str]:
    """The observations a statement was drawn from (a claim's basis statements aside)."""
    return {i for i in s.derived_from if is_observation_id(i)}


def standing(a: StatementView, b: StatementView, vocabulary: Vocabulary, settings: Policy) -> Resolution:
    """``resolve`` for a contradicting pair in either order: the later one is the new one (of two said at
    once, the one with a revision cue), and the relation is temporal when both sides give the same relation
    and the vocabulary says it changes.

    The one policy: the validation worker writes its outcome, and answers and summaries read an open
    contradiction by it, so a pair the worker left open is never read as settled, nor the reverse."""
    old, new = sorted((a, b), key=lambda s: (s.created_at, s.revision is not None, s.id))
    same = vocabulary.canonical(new.predicate) == vocabulary.canonical(old.predicate)
    return resolve(new, old, same and vocabulary.spec(new.predicate).temporal, settings)


def newest_first_per_attribute(statements: list[StatementView]) -> list[StatementView]:
    """The statements in their order, except that those sharing subject and predicate are listed
    together, newest first, where the first of them stood."""
    groups: dict[tuple[str, str], list[StatementView]] = {}
    for s in statements:
        groups.setdefault((s.subject.casefold(), s.predicate), []).append(s)
    return [s for group in groups.values() for s in sorted(group, key=lambda s: -s.created_at)]


def settle(
    statements: list[StatementView], vocabulary: Vocabulary, settings: Policy
) -> tuple[list[StatementView], list[ContradictionView]]:
    """The facts and open conflicts among ``statements`` (current ones): of a contradiction the policy
    settles (``standing``) the losing side is left out; one it leaves open is a conflict, and its sides
    are stated only as that conflict."""
    by_id = {s.id: s for s in statements}
    pairs: dict[frozenset[str], ContradictionView] = {}
    for s in statements:
        for other_id in s.contradicted_by:
            if other_id in by_id:
                pairs.setdefault(frozenset((s.id, other_id)), ContradictionView(a=s, b=by_id[other_id]))
    losers: set[str] = set()
    open_pairs = []
    for c in pairs.values():
        outcome = standing(c.a, c.b, vocabulary, settings)
        if outcome.loser is not None:
            losers.add(outcome.loser.id)
        else:
            open_pairs.append(c)
    conflicts = [c for c in open_pairs if not {c.a.id, c.b.id} & losers]
    sides = {s.id for c in conflicts for s in (c.a, c.b)}
    return [s for s in statements if s.id not in losers and s.id not in sides], conflicts
