"""The session brief: what a new agent session should know, composed by rule within a token budget.

A brief has up to four sections after its header line, each line citing the ids it rests on:

1. ``Current facts:`` what memory holds now about the subject (or, for the team, about the subjects
   written about most recently and most): only current statements, read by the rules of the answers.
   A superseded, retracted or withdrawn statement is never a fact; of a contradiction the one currency
   policy settles (``currency.settle``, a worker's inference speaking for the speaker it was drawn from)
   only the standing side is one, and one it leaves open is stated only as a conflict. A pair the rules
   find in contradiction (``currency.classify``) counts as one even before the validation worker has linked
   it, so a brief written between a change and its validation does not state both values, and so does a
   claim said again beside a contradiction of the same claim said before; a worker's claim
   restating a statement (``derivation.rests_on``) is not repeated beside it; the same claim from several
   observations is one line citing them all. Each reads as a sentence (``realise``).
2. ``Open conflicts:`` contradictions the policy leaves open, both sides, stated as unresolved.
3. ``Changed since ...:`` with ``since``: what was replaced (by a later statement, or by the standing side
   of a contradiction) or taken back since then; facts said since are marked ``[new]``.
4. ``Most used concepts:`` by statements about them, with how many searches returned them.

The budget: the text is at most ``budget`` tokens by ``estimate_tokens``, a character count divided by
``CHARS_PER_TOKEN`` (4, the usual rule of thumb for English text with the tokenizers of current models;
an estimate, not a tokenizer). Lines are taken one section at a time in turn (a first open conflict, since
one warns against relying on what it touches, a first fact, a first change, a first concept, then the
second of each ...), so a tight budget still shows a little of everything; a line that does not fit is
left out and counted in the last line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemonet.model.brief import BriefChange, BriefConcept, BriefConflict, BriefFact, SessionBrief
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import short_id
from mnemonet.model.records import normalise_name
from mnemonet.model.views import ContradictionView, RetractionView, StatementView, when
from mnemonet.truth.answer import conflict_sentence
from mnemonet.truth.currency import Policy, classify, settle, standing
from mnemonet.truth.derivation import inferred, rests_on
from mnemonet.truth.realise import realise
from mnemonet.truth.vocabulary import Vocabulary

CHARS_PER_TOKEN = 4
# The smallest budget a brief is made for: room for its header, a line or two and the "left out" line.
MIN_BUDGET = 100
# The most of a subject's name the header repeats (the facts name it in full).
HEADER_NAME_CHARS = 60
FACTS = "Current facts:"
CONFLICTS = "Open conflicts:"
CONCEPTS = "Most used concepts:"
SETTLED = "the standing side of a contradiction"
# The order the sections (facts, conflicts, changes, concepts) are given room in, a line of each in turn.
TAKEN_IN_TURN = (1, 0, 2, 3)


def estimate_tokens(text: str) -> int:
    """The tokens ``text`` takes, estimated as its characters / ``CHARS_PER_TOKEN``, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class ConceptUse:
    """A concept and how much it is used: statements about it, searches that returned it, the newest statement."""

    id: str
    name: str
    statements: int
    searches: int = 0
    last_at: int = 0


@dataclass
class BriefMaterial:
    """What the store read for a brief (``service/briefing.py``).

    ``statements``: the candidate facts about ``subjects``, as the store reads them (superseded and withdrawn
    ones are dropped here all the same); ``partners``: the other sides of their contradictions, and for the
    team the sides of the open contradictions listed; ``superseded`` and ``replacements``: statements replaced
    and what replaced them, ``retractions``: retractions (both read for ``since``); ``speakers``: statement id ->
    who spoke the observation it was drawn from (for a worker's inference).
    """

    subject: str | None
    subjects: list[str]
    as_of: int
    since: int | None = None
    statements: list[StatementView] = field(default_factory=list)
    partners: list[StatementView] = field(default_factory=list)
    superseded: list[StatementView] = field(default_factory=list)
    replacements: list[StatementView] = field(default_factory=list)
    retractions: list[RetractionView] = field(default_factory=list)
    concepts: list[ConceptUse] = field(default_factory=list)
    speakers: dict[str, str] = field(default_factory=dict)


def compose_brief(material: BriefMaterial, vocabulary: Vocabulary, policy: Policy, budget: int) -> SessionBrief:
    """The brief of ``material`` within ``budget`` tokens (see the module docstring)."""
    if budget < MIN_BUDGET:
        raise InvalidInput(f"budget: at least {MIN_BUDGET} tokens")
    pool = _current(material.statements)
    partners = [s for s in _current(material.partners) if s.id not in {p.id for p in pool}]
    pool = _linked(pool, vocabulary)
    facts, conflicts, settled = _standing([*pool, *partners], material.speakers, vocabulary, policy)
    in_pool = {s.id for s in pool}
    if material.subject is not None:  # about the subject: its own conflicts, not its partners' with others
        conflicts = [c for c in conflicts if {c.a.id, c.b.id} & in_pool]
        settled = {loser: winner for loser, winner in settled.items() if {loser, winner.id} & in_pool}
    stated = [s for s in facts if s.id in in_pool and not any(rests_on(s, base) for base in [*pool, *partners])]
    since = material.since
    fact_items = [_fact(group, since) for group in _claims(_in_subject_order(stated, material.subjects))]
    conflict_items = [_conflict(c) for c in conflicts]
    change_items = _changes(material, settled) if since is not None else []
    concept_items = [_concept(c) for c in material.concepts]

    header = _header(material, len(fact_items), len(conflict_items))
    titles = [FACTS, CONFLICTS, f"Changed since {when(since)}:" if since is not None else "", CONCEPTS]
    lines = [[item.line for item in items] for items in (fact_items, conflict_items, change_items, concept_items)]
    chosen, omitted = _within(header, list(zip(titles, lines, strict=True)), budget)
    text = _render(header, [(title, [lines[n][i] for i in chosen[n]]) for n, title in enumerate(titles)],
                   omitted, budget)
    return SessionBrief(
        subject=material.subject, subjects=material.subjects, since=since, as_of=material.as_of, text=text,
        facts=[fact_items[i] for i in chosen[0]], conflicts=[conflict_items[i] for i in chosen[1]],
        changes=[change_items[i] for i in chosen[2]], concepts=[concept_items[i] for i in chosen[3]],
        budget=budget, tokens=estimate_tokens(text), omitted=omitted,
    )


def _current(statements: Sequence[StatementView]) -> list[StatementView]:
    """The statements that can be facts: not a summary, not superseded, retracted or withdrawn; once each."""
    seen: set[str] = set()
    out = []
    for s in statements:
        if s.summary is None and not s.superseded_by and not s.withdrawn and s.id not in seen:
            seen.add(s.id)
            out.append(s)
    return out


def _linked(statements: list[StatementView], vocabulary: Vocabulary) -> list[StatementView]:
    """``statements`` with the contradictions the validation worker would link, linked: those the rules find
    between two of one subject (a pair it has not validated yet, or a worker behind), and those of a claim
    said again (the same claim from another observation contradicts what the first one does; the policy then
    weighs each pair by its own times and sources)."""
    by_subject: dict[str, list[StatementView]] = {}
    for s in statements:
        by_subject.setdefault(normalise_name(s.subject), []).append(s)
    links: dict[str, set[str]] = {s.id: set(s.contradicted_by) for s in statements}
    for group in by_subject.values():
        ordered = sorted(group, key=lambda s: (s.created_at, s.id))
        for i, old in enumerate(ordered):
            for new in ordered[i + 1:]:
                if new.id not in links[old.id] and classify(new, old, vocabulary).kind == "contradicts":
                    links[old.id].add(new.id)
                    links[new.id].add(old.id)
    for claim in _claims(statements):
        shared = set().union(*(links[s.id] for s in claim)) - {s.id for s in claim}
        for s in claim:
            links[s.id] |= shared
    return [s.model_copy(update={"contradicted_by": sorted(links[s.id])}) if links[s.id] != set(s.contradicted_by)
            else s for s in statements]


def _standing(
    statements: list[StatementView], speakers: dict[str, str], vocabulary: Vocabulary, policy: Policy,
) -> tuple[list[StatementView], list[ContradictionView], dict[str, StatementView]]:
    """(facts, open conflicts, loser id -> the standing side) by ``currency.settle``, each statement weighed as
    spoken: a worker's inference speaks for whoever said what it was drawn from, as in the answers."""
    by_id = {s.id: s for s in statements}
    spoken = [_as_spoken(s, speakers) for s in statements]
    facts, conflicts = settle(spoken, vocabulary, policy)
    open_sides = {s.id for c in conflicts for s in (c.a, c.b)}
    fact_ids = {s.id for s in facts}
    settled: dict[str, StatementView] = {}
    for s in spoken:
        if s.id in fact_ids or s.id in open_sides:
            continue
        for other_id in s.contradicted_by:
            if other_id in by_id:
                outcome = standing(s, _as_spoken(by_id[other_id], speakers), vocabulary, policy)
                if outcome.loser is not None and outcome.loser.id == s.id and outcome.winner is not None:
                    settled[s.id] = by_id[outcome.winner.id]
                    break
    original = [c.model_copy(update={"a": by_id[c.a.id], "b": by_id[c.b.id]}) for c in conflicts]
    return [by_id[s.id] for s in facts], original, settled


def _as_spoken(s: StatementView, speakers: dict[str, str]) -> StatementView:
    spoken = speakers.get(s.id)
    return s.model_copy(update={"source": spoken}) if spoken and spoken != s.source else s


def _in_subject_order(statements: list[StatementView], subjects: list[str]) -> list[StatementView]:
    """Statements about the first subject first (as its subject, then as its object), then the next; newest
    first within each."""
    rank = {normalise_name(name): i for i, name in reversed(list(enumerate(subjects)))}
    last = len(subjects)

    def key(s: StatementView) -> tuple[int, int, int]:
        own = rank.get(normalise_name(s.subject))
        if own is not None:
            return own, 0, -s.created_at
        return rank.get(normalise_name(s.object), last), 1, -s.created_at

    return sorted(statements, key=key)


def _claims(statements: list[StatementView]) -> list[list[StatementView]]:
    """The statements grouped by claim (the same sentence from several observations), in order of first sight."""
    groups: dict[tuple[str, str, str, bool, str], list[StatementView]] = {}
    for s in statements:
        key = (normalise_name(s.subject), s.predicate, normalise_name(s.object), s.negated, s.tense)
        groups.setdefault(key, []).append(s)
    return list(groups.values())


def _ids(statements: Sequence[StatementView]) -> str:
    return ", ".join(short_id(s.id) for s in statements)


def _fact(group: list[StatementView], since: int | None) -> BriefFact:
    first = group[0]
    sources = ", ".join(dict.fromkeys(s.source or "unknown" for s in group))
    new = since is not None and any(s.created_at >= since for s in group)
    sentence = realise(first)
    return BriefFact(line=f"  - {sentence} ({sources}; {_ids(group)}){' [new]' if new else ''}", sentence=sentence,
                     subject=first.subject, source=first.source, ids=[s.id for s in group], new=new)


def _conflict(c: ContradictionView) -> BriefConflict:
    sides = sorted((c.a, c.b), key=lambda s: (s.created_at, s.id))
    return BriefConflict(line=f"  - {conflict_sentence(c)} ({_ids(sides)})", ids=[s.id for s in sides],
                         reason=c.reason)


def _changes(material: BriefMaterial, settled: dict[str, StatementView]) -> list[BriefChange]:
    """What changed at or after ``since``, newest first: replacements, the contradictions settled by a side said
    since, and retractions."""
    since = material.since or 0
    by_id = {s.id: s for s in [*material.replacements, *material.statements, *material.partners]}
    out: list[BriefChange] = []
    seen: set[str] = set()
    for old in material.superseded:
        new = next((by_id[i] for i in old.superseded_by if i in by_id), None)
        # A worker's claim is replaced with the statement it was drawn from, which says the change itself.
        if new is None or new.created_at < since or old.summary is not None or inferred(old) or old.id in seen:
            continue
        seen.add(old.id)
        out.append(BriefChange(line=f"  - {realise(old)} ({short_id(old.id)}) -> {realise(new)} ({short_id(new.id)})",
                               kind="superseded", ids=[old.id, new.id], at=new.created_at))
    for loser_id, winner in settled.items():
        loser = by_id[loser_id]
        if winner.created_at >= since and not inferred(loser) and loser_id not in seen:
            out.append(BriefChange(
                line=f"  - {realise(loser)} ({short_id(loser.id)}) -> {realise(winner)} ({short_id(winner.id)}), "
                     f"{SETTLED}", kind="superseded", ids=[loser.id, winner.id], at=winner.created_at))
    for r in material.retractions:
        if r.created_at >= since:
            what = _one_line(r.target_text) or r.kind
            out.append(BriefChange(
                line=f"  - taken back: {what} ({short_id(r.target_id)}), by {r.source}: {_one_line(r.reason)} "
                     f"({short_id(r.id)})", kind="retracted", ids=[r.target_id, r.id], at=r.created_at))
    return sorted(out, key=lambda c: -c.at)


def _concept(c: ConceptUse) -> BriefConcept:
    counts = f"{c.statements} statement{'s' if c.statements != 1 else ''}, {c.searches} search" \
             f"{'es' if c.searches != 1 else ''}"
    return BriefConcept(line=f"  - {c.name}: {counts} ({short_id(c.id)})", id=c.id, name=c.name,
                        statements=c.statements, searches=c.searches, last_at=c.last_at)


def _header(material: BriefMaterial, facts: int, conflicts: int) -> str:
    counts = (f"{facts} current fact{'s' if facts != 1 else ''}, "
              f"{conflicts} open conflict{'s' if conflicts != 1 else ''}")
    at = when(material.as_of)
    if material.subject is None:
        return f"What the team's memory holds (as of {at}): {counts}."
    name = material.subject
    name = name if len(name) <= HEADER_NAME_CHARS else name[: HEADER_NAME_CHARS - 3] + "..."
    if not facts and not conflicts:
        return f"Nothing in memory is about {name} (as of {at})."
    return f"What memory holds about {name} (as of {at}): {counts}."


def _left_out(omitted: int, budget: int) -> str:
    return f"({omitted} more line{'s' if omitted != 1 else ''} left out to stay within {budget} tokens)"


def _within(header: str, sections: list[tuple[str, list[str]]], budget: int) -> tuple[list[list[int]], int]:
    """The lines of each section that fit, taken one section at a time in turn; and how many were left out.

    Room is kept for the closing "left out" line, so the text with it stays within the budget."""
    room = budget * CHARS_PER_TOKEN - len(header) - len(_left_out(10**6, budget)) - 1
    chosen: list[list[int]] = [[] for _ in sections]
    omitted = 0
    for i in range(max((len(lines) for _, lines in sections), default=0)):
        for n in TAKEN_IN_TURN:
            title, lines = sections[n]
            if i >= len(lines):
                continue
            cost = len(lines[i]) + 1 + (len(title) + 1 if not chosen[n] else 0)
            if cost <= room:
                room -= cost
                chosen[n].append(i)
            else:
                omitted += 1
    return chosen, omitted


def _render(header: str, sections: list[tuple[str, list[str]]], omitted: int, budget: int) -> str:
    out = [header]
    for title, lines in sections:
        if lines:
            out += [title, *lines]
    if omitted:
        out.append(_left_out(omitted, budget))
    return "\n".join(out)


def _one_line(text: str) -> str:
    return " ".join(text.split())
