"""The deterministic answer composer: from a ``Recall`` to an answer a person can read, with any model or none.

The text always has the same shape:

1. the lead: the current answer in one sentence (a language model may
   rephrase it, see ``accept_phrasing``; without one the rule-made lead stands),
   or, when nothing in memory answers the question, ``NOTHING``;
2. ``Evidence:`` the current statements it rests on, each with its short id
   (``Related:`` instead, when nothing answers: the closest items, at low confidence);
3. ``Changed:`` what was replaced, ``earlier -> current``;
4. ``In conflict:`` open conflicts between sources, stated as unresolved;
5. ``Retracted:`` what was taken back that the question touches, by whom and why.

Choosing the lead: only statements that answer the question can lead
(``relevance``: about the subject asked, covering what it asks; a correction
answers what the statement it replaced in the same slot answered), less a
vaguer one a more precise one agrees with ("likes meetings" beside "prefers
morning meetings"). They are grouped by (subject, relation), a subject said shorter grouped with the one
fuller subject holding it ("Folake" with "Aunt Folake"); the group answering best wins (then the most
confident group, then retrieval order), and within it a present statement
before a past one, then the newest (a positive one before a negation written
with it), so a correction leads as soon as it is written. Values of a many-valued slot said in the same words
lead together. Consolidation summaries are context: they never lead and never count as evidence.

The observation is the record: when a newer observation by or about the
subject touches what is asked and nothing extracted from it answers (the
extraction missed it), the lead says what was said (the clause that answers, ``relevance.answering_part``),
by whom and when, and the older statement follows as evidence. So do words a statement was drawn from, when
nothing answers but that statement with the phrase qualifying its object the extraction dropped ("we use Zoom
for the book club calls": ``_told_more``). A turn's "he" or "she" is read as about the
person its speaker's turn before spoke of (``anaphora``). A turn of the speaker's adding to the words that
lead, among their next few ("I'm allergic to penicillin", then "oh and shellfish as well"), nothing drawn
from it about anyone else, is shown beside the lead: an addition the extraction could not complete. A turn among
the next few after what answers that says it replaces it, in words no rule placed, leads in its place (its clauses
naming what it replaced left out): a statement drawn from it marked a change or a correction, a cue of one in its
words (``cues``), an end said of the thing ("4821 closed" after "ticket 4821 is open"), or, in a conversation, a
value two speakers agree on ("how about the Red Lion?", "Red Lion works"); by the same speaker, unless the
question is no one's own (``_replaced_next``). An end is of the thing when it names it, or when its speaker's
"that" or "it" stands for it ("booked us a lane at Hollywood Bowl", then "cancelled that, rebooked at Tenpin").

Contradictions: an open one is read by the same policy the validation worker
applies (``currency.standing``; a worker's inference speaks for the speaker of
the observation it was drawn from): the side it lets stand is current and the
other a change; a contradiction it leaves open is a conflict the answer names,
whichever side leads.

A question asking yes or no ("do I still live in Berlin?") gets "Yes." or "No." before the lead when the
lead statement settles it (``polar``): it gives the value named, denies it, or replaced it. A lead that is
the record's words, or a conflict, gets none.

Confidence: how well the lead answers (its relevance score) times its
support: the lead's confidence, raised by statements that agree with it
(``1 - prod(1 - c)``), and weighed down by the ones in open conflict with it
(``support * support / (support + opposition)``). Nothing answering: at most
``RELATED_CONFIDENCE``.

The asker: ``remember``'s ``source``. Its first person in the question is
itself ("where do I live?" asked by alice is about alice, never about bob),
and the lead addresses it: "you live in Paris", "your manager is Tom" rather
than "alice lives in Paris". Evidence and conflicts keep the names: they are
provenance. Every statement reads as a sentence (``realise``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mnemonet.model.api import Recall
from mnemonet.model.ids import short_id
from mnemonet.model.views import ContradictionView, ObservationView, RetractionView, StatementView, when
from mnemonet.truth.anaphora import bind
from mnemonet.truth.cues import revision_cue, says_ended
from mnemonet.truth.currency import Policy, standing
from mnemonet.truth.polar import verdict, with_verdict
from mnemonet.truth.realise import realise
from mnemonet.truth.record import gives_kind, said_since, value_since, values_named
from mnemonet.truth.relevance import (
    ANSWERS,
    Question,
    about_subject,
    answering_part,
    gives_reason,
    holds_role,
    holds_thing,
    leaving_out,
    rest_of_clause,
    score,
    text_gives_attribute,
)
from mnemonet.truth.text import (
    FIRST_PERSON,
    fold,
    matching_text,
    object_words,
    plain,
    points_back,
    speaks_for_us,
    terms,
)
from mnemonet.truth.vocabulary import Vocabulary

NOTHING = "Nothing in memory answers that."
# The relation of a thing's state (open, closed, cancelled ...): said later, it leads whatever is asked of it.
STATUS_RELATION = "has_status"
# The confidence of an answer that found nothing answering, only related items.
RELATED_CONFIDENCE = 0.2
# The most an answer led by words nothing was extracted from can have (scaled by how well they match).
MISSED_CONFIDENCE = 0.5
# The most an answer led by a value read from newer words (``record``) can have (scaled by relevance).
RESTATED_CONFIDENCE = 0.7
CONTESTED = "Unresolved: "
_WORDS = re.compile(r"[a-z]+")
_SELF = frozenset({"i", "me", "myself", "we", "us", "ourselves"})  # the first person as who is spoken of
# A turn adding to what its speaker said before: "also", "as well", "too" closing a clause ("oh and shellfish
# as well"; not "too expensive"), or a turn opening with "and" or "plus" ("plus I coach on Sundays").
_ADDITIVE = re.compile(r"\b(?:also|as well)\b|\btoo\b(?=\s*(?:[.,;:!?)]|$))|^\W*(?:oh\s+)?(?:and|plus)\b",
                       re.IGNORECASE)
# "Bruno's flight", "this year's offsite": a possessor (with the word fixing which one it is) and its noun.
_POSSESSION = re.compile(r"(?:\b(?P<det>this|last|next|that)\s+)?\b(?P<owner>[a-z][\w-]*)'s\s+(?:[a-z-]+\s+)?"
                         r"(?P<noun>[a-z][\w-]*)")
# "but after lunch I'll only have a flat white": a contrast opening a turn adds a case to what was said
# (unless it says a change or a correction, which replaces it).
_CONTRAST = re.compile(r"^\W*(?:oh\s+)?but\b", re.IGNORECASE)
_NUMBERED = re.compile(r"[a-z]*\d[\w-]*")  # a word with digits: a number naming a thing ("88213", "bk4471")
_ADDING_TURNS = 3  # how far after a speaker's words an addition to them, or a change of them, is looked for
_SHORT_WORD = 3  # words this short ("he", "all") say nothing of what a turn is about
DEGRADED = "(Degraded: no language model answered; this answer was composed by rule from memory.)"


@dataclass
class Composition:
    """What the rules made of a recall; ``text`` joins it with the lead that was finally used."""

    lead: str
    lead_id: str | None
    evidence: list[StatementView] = field(default_factory=list)
    changed: list[tuple[StatementView, StatementView | None, str]] = field(default_factory=list)
    conflicts: list[ContradictionView] = field(default_factory=list)
    observations: list[ObservationView] = field(default_factory=list)
    confidence: float = 0.0
    asker: str | None = None
    retractions: list[RetractionView] = field(default_factory=list)
    related: list[StatementView] = field(default_factory=list)
    # The lead's statement as newer words restate it (``record``), when they do.
    restated: StatementView | None = None
    # Yes (True) or no (False) to a question asking for one, when the lead statement settles it (``polar``).
    verdict: bool | None = None
    # The clause of the words that lead which answers, when they lead and say more than it (``answering_part``).
    lead_words: str | None = None
    # The lead statement with the other values of its slot said with it (``_together``): what a model phrases.
    joined: StatementView | None = None

    @property
    def cited(self) -> list[str]:
        ids = [s.id for s in self.evidence]
        ids += [x.id for old, new, _ in self.changed for x in (old, new) if x is not None]
        ids += [s.id for c in self.conflicts for s in (c.a, c.b)]
        ids += [o.id for o in self.observations]
        ids += [r.id for r in self.retractions]
        ids += [s.id for s in self.related]
        return list(dict.fromkeys(ids))

    def memory(self) -> list[tuple[str, str]]:
        """The lines a language model may phrase the lead from: the lead's statement and its conflicts, or the
        newer observation that leads instead of an older statement (what the extraction missed) alone."""
        said = [(o.id, f"{_one_line(o.text)} | observed | from {o.source or 'unknown'}") for o in self.observations]
        if self.restated is not None and self.restated.id == self.lead_id:
            return [(self.lead_id, f"{realise(self.restated, self.asker)} | current, said later | "
                                   f"from {self.restated.source or 'unknown'} | {when(self.restated.created_at)}")]
        if any(o.id == self.lead_id for o in self.observations):
            o = self.observations[0]
            return [(o.id, f"{_one_line(self.lead_words or o.text)} | observed | from {o.source or 'unknown'}")]
        lines = [(s.id, f"{realise(self.joined if self.joined and s.id == self.joined.id else s, self.asker)} | "
                        f"current | {_provenance(s)}") for s in self.evidence[:1]]
        for c in self.conflicts:
            if self.lead_id not in (c.a.id, c.b.id):
                continue
            for s in (c.a, c.b):
                if s.id != self.lead_id:
                    lines.append((s.id, f"{realise(s)} | current, contested | {_provenance(s)}"))
        return lines + said

    def text(self, lead: str | None = None, *, degraded: bool = False) -> str:
        parts = [with_verdict(lead or self.lead, self.verdict)]
        if degraded:
            parts.append(DEGRADED)
        if self.evidence or self.observations:
            parts.append("Evidence:")
            parts += [f"  - {_evidence(s)}" for s in self.evidence]
            parts += [f'  - {o.source or "someone"} said "{_one_line(o.text)}" ({when(o.created_at)}, '
                      f"{short_id(o.id)})" for o in self.observations]
        if self.related:
            parts.append("Related:")
            parts += [f"  - {_evidence(s)}" for s in self.related]
        if self.changed:
            parts.append("Changed:")
            for old, new, how in self.changed:
                now = (f"{realise(new)} ({short_id(new.id)})" if new is not None
                       else ", ".join(short_id(i) for i in old.superseded_by))
                parts.append(f"  - {realise(old)} ({short_id(old.id)}) -> {now}, {how}")
        if self.conflicts:
            parts.append("In conflict:")
            parts += [f"  - {conflict_sentence(c)}" for c in self.conflicts]
        if self.retractions:
            parts.append("Retracted:")
            parts += [f"  - {_one_line(r.target_text) or r.kind} ({short_id(r.target_id)}), retracted by {r.source} "
                      f"({when(r.created_at)}, {short_id(r.id)}): {_one_line(r.reason)}" for r in self.retractions]
        return "\n".join(parts)


def compose(
    recall: Recall, max_evidence: int, vocabulary: Vocabulary, policy: Policy, speakers: dict[str, str] | None = None,
    asker: str | None = None,
) -> Composition:
    """The rule-made answer to ``recall.query`` (see the module docstring), addressed to ``asker``.

    ``speakers`` maps a statement id to whoever spoke the observation it was drawn from (see
    ``speakers_of``): a worker's inference from alice's words speaks for alice, so it does not
    conflict with alice's later correction, it is replaced by it. An open contradiction is read by
    the one currency policy (``currency.standing``), with ``vocabulary`` and ``policy``.
    """
    speakers = speakers or {}

    def as_spoken(s: StatementView) -> StatementView:
        spoken = speakers.get(s.id)
        return s.model_copy(update={"source": spoken}) if spoken and spoken != s.source else s

    question = Question.read(recall.query, asker).in_conversation(recall.observations)
    # A turn's "he" or "she" is whom its speaker's turn before spoke of (``anaphora``): read as about them.
    drawn = _drawn(recall)
    recall = recall.model_copy(update={"observations": bind(recall.observations, drawn)})
    wanted = question.words
    retractions = [r for r in recall.retractions if terms(r.target_text, question.asker) & wanted - {"user"}]
    facts = [s for s in recall.statements if not s.summary]
    current_ids = {s.id for s in facts}
    by_id = {s.id: s for s in [*facts, *recall.superseded]}

    # Open contradictions between current statements, read by the currency policy: a winner makes the other
    # side a change, no winner leaves a conflict the answer names.
    earlier: dict[str, StatementView] = {}
    conflicts: list[ContradictionView] = []
    for c in recall.contradictions:
        if c.a.summary or c.b.summary or c.a.id not in current_ids or c.b.id not in current_ids:
            continue
        outcome = standing(as_spoken(c.a), as_spoken(c.b), vocabulary, policy)
        if outcome.winner is not None and outcome.loser is not None:
            earlier[outcome.loser.id] = by_id[outcome.winner.id]
        else:
            conflicts.append(c)
    live = [s for s in facts if s.id not in earlier]

    fuller = _fuller_names([s.subject for s in [*live, *recall.superseded]])

    def key(s: StatementView) -> tuple[str, str]:
        if holds_role(s, question):  # asked for the one holder of a role, the role is the slot
            return f"the {_role(s.object)}", vocabulary.canonical(s.predicate)
        if holds_thing(s, question, vocabulary):  # asked who holds a thing, holding it is the slot
            return "the holder", vocabulary.canonical(s.predicate)
        return fuller.get(plain(s.subject), plain(s.subject)), vocabulary.canonical(s.predicate)

    scores = {s.id: score(s, question, vocabulary) for s in [*live, *recall.superseded]}
    # A new holder said as a change ("Kwame is captain now", "the under-12s are now managed by Tomasz") answers
    # what the holder before answered ("Ines is captain of our five-a-side team"), though it says less of it.
    for s in live:
        if s.revision and (holds_role(s, question) or holds_thing(s, question, vocabulary)):
            slot = [t.id for t in live if key(t) == key(s) and t.created_at < s.created_at]
            scores[s.id] = max([scores[s.id], *(scores[t] for t in slot)])
    # A correction answers what the statement it replaced in the same slot answered: "afternoon is better"
    # replacing "I prefer morning meetings" answers a question about meetings though it does not name them.
    live_by_key = {s.id: key(s) for s in live}
    for old in recall.superseded:
        for new_id in old.superseded_by:
            if live_by_key.get(new_id) == key(old):
                scores[new_id] = max(scores[new_id], scores[old.id])
    if question.first_person:
        for s in _of_others(live, recall, question):
            scores[s.id] = 0.0
    answering = _precise([s for s in live if scores[s.id] >= ANSWERS], vocabulary)

    chosen = _choose(answering, scores, key, now=not question.past,
                     named=lambda s: question.polar and not vocabulary.single_valued(s.predicate))
    if chosen is not None and (instead := _said_instead(chosen, live, question, vocabulary)) is not None:
        scores[instead.id], chosen = scores[chosen.id], instead
    lead_st = _with_status(chosen, recall, live, question, vocabulary, drawn) if chosen is not None else None
    missed = _missed_observations(recall, question, lead_st, scores, vocabulary, drawn)
    if lead_st is None and not missed:
        missed = _told_more(live, recall, question, vocabulary)
    # What answers may be replaced by a turn right after it that says so in words no rule placed.
    origin = missed[0] if missed else _origin(lead_st, recall) if lead_st is not None else None
    slot_asked = vocabulary.canonical(lead_st.predicate) if lead_st is not None and not missed else None
    replacing = _replaced_next(origin, slot_asked, recall, question, drawn, vocabulary,
                               lead_st.object if slot_asked is not None and lead_st is not None else None) \
        if origin else None
    words_score = observation_score(missed[0], question) if missed else 0.0  # how well the words that lead answer
    old_values: list[frozenset[str]] = []  # the names and numbers of what the replacing words replace
    denied = False  # asked yes or no of a value the words replace ("is Ines the project lead?"): no
    if origin is not None and replacing is not None:
        # the replacing words answer as well as what they replace (they need not repeat the question's words)
        answered = observation_score(origin, question) if missed or lead_st is None else scores[lead_st.id]
        words_score = max(observation_score(replacing, question), answered)
        named = values_named(origin.text if slot_asked is None or lead_st is None else lead_st.object)
        old_values = [v for v in named if not v <= object_words(question.text)]
        denied = question.polar and len(old_values) < len(named)
        missed = [replacing, *missed]
    if lead_st is None:
        composition = _nothing_answers(recall, question, live, scores, missed, words_score, old_values,
                                       retractions[:max_evidence], max_evidence, drawn)
        if denied and replacing is not None and composition.lead_id == replacing.id:
            composition.verdict = False
        return composition

    group = key(lead_st)
    related = [s for s in answering if s.id != lead_st.id]
    evidence = _distinct([lead_st, *related])[:max_evidence]
    shown = {s.id for s in evidence}
    lead_conflicts = [c for c in conflicts if lead_st.id in (c.a.id, c.b.id)]
    conflicts = lead_conflicts + [c for c in conflicts if c not in lead_conflicts and {c.a.id, c.b.id} & shown]

    changed: list[tuple[StatementView, StatementView | None, str]] = []
    for s in recall.superseded:
        if s.summary or not (key(s) == group or scores[s.id] >= ANSWERS):
            continue
        replacement = next((by_id[i] for i in s.superseded_by if i in by_id), None)
        changed.append((s, replacement, "superseded"))
    for old_id, newer in earlier.items():
        old = by_id[old_id]
        if key(old) == group or score(old, question, vocabulary) >= ANSWERS:
            changed.append((old, newer, "replaced by the standing side of a contradiction"))

    assert chosen is not None
    confidence = round(scores[chosen.id] * _confidence(lead_st, live, lead_conflicts), 2)
    joined = _together(lead_st, answering, key, vocabulary, recall)
    composition = Composition(
        lead=_sentence(joined, lead_conflicts, asker), lead_id=lead_st.id, evidence=evidence, joined=joined,
        changed=changed[:max_evidence], conflicts=conflicts[:max_evidence], confidence=confidence, asker=asker,
        retractions=retractions[:max_evidence], observations=missed[:max_evidence],
    )
    update = None if lead_conflicts else said_since(lead_st, recall.observations, drawn, question, vocabulary)
    if update is not None:
        # The record restates the slot: its new value leads, the words that say so are its evidence.
        composition.lead, composition.lead_id = _sentence(update.statement, [], asker), update.observation.id
        composition.restated = update.statement
        composition.evidence = [s for s in evidence if s.id != lead_st.id]
        composition.changed = [(lead_st, update.statement, "restated later"), *composition.changed][:max_evidence]
        composition.observations = [update.observation, *(o for o in missed if o.id != update.observation.id)]
        composition.confidence = round(RESTATED_CONFIDENCE * scores[chosen.id], 2)
        missed = [o for o in missed if o.created_at > update.observation.created_at]
    if missed:
        # The record said more since: the newer words lead (who, when); the older statement is evidence.
        leave_out = old_values if missed[0] is replacing else []
        composition.lead, composition.lead_id, composition.observations = _record_lead(
            missed, recall.observations, f"{_capital(_said(missed[0], question, leave_out))}.", question)
        composition.lead_words = _part(missed[0], question, leave_out) if composition.lead_id == missed[0].id \
            else None
        composition.observations = _with_addition(composition.observations, recall, question, drawn)[:max_evidence]
        composition.confidence = round(MISSED_CONFIDENCE * (
            words_score if missed[0] is replacing else observation_score(missed[0], question)), 2)
        if denied and missed[0] is replacing:
            composition.verdict = False
    elif update is None and (more := _continued(lead_st, recall, drawn)) is not None:
        composition.observations = [*composition.observations, more][:max_evidence]
    if not missed and not lead_conflicts:
        said = composition.restated or lead_st
        replaced = [old for old, new, _ in composition.changed
                    if key(old) == key(said) or (new is not None and new.id == said.id)]
        # One value at a time: what the same speaker said earlier in the slot is replaced, superseded yet or not.
        replaced += [s for s in evidence if key(s) == key(said) and s.created_at < said.created_at
                     and s.source == said.source and vocabulary.single_valued(s.predicate)]
        said_at = min([o.created_at for o in recall.observations if o.id in said.derived_from] or [said.created_at])
        since = [o.text for o in recall.observations if o.created_at > said_at and o.id not in said.derived_from]
        composition.verdict = verdict(question, said, replaced, vocabulary, since)
    return composition


def _together(lead: StatementView, answering: list[StatementView], key: Callable[[StatementView], tuple[str, str]],
              vocabulary: Vocabulary, recall: Recall) -> StatementView:
    """The lead with the other values of its slot said with it in the same words, when the slot holds many
    ("Gareth takes two sugars and oat milk": both, in the order said)."""
    if vocabulary.single_valued(lead.predicate) or not lead.derived_from:
        return lead
    said = [s for s in answering if key(s) == key(lead) and s.derived_from == lead.derived_from
            and (s.negated, s.tense, s.source) == (lead.negated, lead.tense, lead.source)]
    text = " ".join(o.text for o in recall.observations if o.id in lead.derived_from).casefold()

    def said_at(value: str) -> int:
        found = text.find(value.casefold())
        return found if found >= 0 else len(text)

    objects = sorted(dict.fromkeys(s.object for s in said), key=said_at)
    if len(objects) < 2:
        return lead
    return lead.model_copy(update={"object": f"{', '.join(objects[:-1])} and {objects[-1]}"})


def _fuller_names(subjects: list[str]) -> dict[str, str]:
    """A subject -> the one longer subject holding all its words, a proper name any of them ("Folake" -> "aunt
    folake", "Priya" -> "priya raman"), a thing its head ("yoga" -> "tuesday yoga"), as ``plain`` writes them:
    one person or thing, called shorter. A name two longer ones hold ("Priya" of "Priya Raman" and "Priya
    Shah") is left as it is."""
    names = {plain(n): (frozenset(plain(n).split()), n[:1].isupper()) for n in subjects}
    out = {}
    for name, (words, proper) in names.items():
        # a proper name by any of its words; a thing by its head ("yoga" of "tuesday yoga", not of "yoga mat")
        longer = [other for other, (more, _) in names.items() if words < more and (
            proper or name.split()[-1] == other.split()[-1])]
        if len(longer) == 1:
            out[name] = longer[0]
    return out


def _continued(lead: StatementView, recall: Recall, drawn: dict[str, list[StatementView]]) -> ObservationView | None:
    """The next turn recalled of the lead's speaker after the words the lead was drawn from, when it adds to them ("I'm
    allergic to penicillin", then "oh and shellfish as well") and what was drawn from it, if anything, is about
    the lead's subject: an addition the extraction could not complete or place, shown beside the lead."""
    origins = [o for o in recall.observations if o.id in lead.derived_from]
    if not origins:
        return None
    return _added_to(max(origins, key=lambda o: o.created_at), recall, drawn,
                     lambda s: s.subject.casefold() == lead.subject.casefold())


def _added_to(origin: ObservationView, recall: Recall, drawn: dict[str, list[StatementView]],
              about: Callable[[StatementView], bool]) -> ObservationView | None:
    """The first of the next ``_ADDING_TURNS`` turns recalled of the speaker of ``origin`` that adds to it
    (``_ADDITIVE``, or a contrast saying no change: ``_CONTRAST``), every statement drawn from it, if any,
    ``about`` what was asked: an addition shown beside what it adds to, remarks on something else in between
    ("weather's been grim", then "I also help out at the animal shelter")."""
    later = sorted((o for o in recall.observations if o.source == origin.source and o.created_at > origin.created_at),
                   key=lambda o: o.created_at)[:_ADDING_TURNS]
    return next((turn for turn in later
                 if (_ADDITIVE.search(turn.text) or _CONTRAST.search(turn.text) and revision_cue(turn.text) is None)
                 and all(about(s) for s in drawn.get(turn.id, []))), None)


def _told_more(live: list[StatementView], recall: Recall, question: Question,
               vocabulary: Vocabulary) -> list[ObservationView]:
    """The words that answer where the extraction dropped the phrase qualifying a statement's object, newest
    first: "we use Zoom for the book club calls" answers what we use for book club calls, though "user uses
    Zoom" does not; the words lead, as words nothing answering was drawn from do."""
    told = {}
    for s in live:
        origin = _origin(s, recall)
        said = rest_of_clause(origin.text, s.object) if origin is not None else None
        if origin is not None and said is not None \
                and score(s.model_copy(update={"object": said}), question, vocabulary) >= ANSWERS:
            told[origin.id] = origin
    return sorted(told.values(), key=lambda o: -o.created_at)


def _origin(statement: StatementView, recall: Recall) -> ObservationView | None:
    """The latest recalled turn ``statement`` was drawn from."""
    origins = [o for o in recall.observations if o.id in statement.derived_from]
    return max(origins, key=lambda o: o.created_at) if origins else None


def _replaced_next(origin: ObservationView, slot: str | None, recall: Recall, question: Question,
                   drawn: dict[str, list[StatementView]], vocabulary: Vocabulary,
                   old: str | None = None) -> ObservationView | None:
    """The turn that replaces what ``origin`` said, in words no rule placed: of the next ``_ADDING_TURNS`` turns
    recalled after it (its speaker's; anyone's in a conversation asked of no one's own), the last that says it
    replaces something (a statement drawn from it marked a change or a correction, or a cue of one in its words,
    or of an end of something ``origin`` names: ``cues``), gives a value of the kind asked and names something
    ``origin`` and the question do not ("my brother Haruto works as a sous chef", then "Haruto quit the kitchen and
    he's driving deliveries for a bakery now"; "let's meet at the clock tower", then "new plan, outside the
    library instead"; "the 42 bus runs to the university", then "the council scrapped the 42").

    Not a turn adding to it (``_ADDITIVE``: that is coexistence), nor one taken back, nor one whose statements
    the rules placed in a slot of their own: a replaced statement, or one about whom the question asks in a
    relation the vocabulary declares (not one found for it by meaning) other than the ``slot`` answering ("I work
    at Google now" does not replace "I live in Paris"; a place does where a place is asked of a slot the
    vocabulary does not declare: ``a_place``), unless it says the ``old`` value that answered is over (a
    statement of it in the past or denied: "resigned from Soylent, I've been at Hooli for two weeks now", however
    the rules placed Hooli). A turn naming no new value that says again a word of
    what stands confirms it ("yep, sorry all, see you at the library" after "book club is at the Riverside
    library instead"): it stands."""
    anyone = not question.first_person or question.ours
    after = sorted((o for o in recall.observations if o.created_at > origin.created_at), key=lambda o: o.created_at)
    later = [o for o in after if anyone or o.source == origin.source][:_ADDING_TURNS]
    placed = {i for s in recall.superseded for i in s.superseded_by}
    known = set(object_words(origin.text)) | object_words(question.text)

    def agreed(turn: ObservationView) -> bool:
        """Whether ``turn`` names a new value another speaker proposed since ``origin`` ("how about the Red Lion?",
        then "Red Lion works"): in a conversation, what two agree on replaces what was said before."""
        proposed = {v for o in after if o.created_at < turn.created_at and o.source != turn.source
                    for v in values_named(o.text)}
        return anyone and any(v in proposed and not v <= known for v in values_named(turn.text))

    def replaces(turn: ObservationView) -> bool:
        said = drawn.get(turn.id, [])
        # an end said of the thing spoken of ("4821 closed" after "ticket 4821 is open"; its speaker's "cancelled
        # that" after "booked us a lane"), not of another
        ended = says_ended(turn.text) and (bool(object_words(turn.text) & object_words(origin.text))
                                           or turn.source == origin.source and points_back(turn.text))
        marked = any(s.revision is not None for s in said) or revision_cue(turn.text) is not None or ended \
            or agreed(turn)
        over = old is not None and any(object_words(old) <= object_words(s.object) and (s.tense == "past" or s.negated)
                                       for s in said)
        elsewhere = not over and any(s.id in placed or about_subject(s, question) and vocabulary.declared(s.predicate)
                                     and vocabulary.canonical(s.predicate) != slot and not a_place(s) for s in said)
        return marked and not elsewhere and not any(s.id in taken_back for s in said) \
            and not _ADDITIVE.search(turn.text) and gives_kind(turn.text, question, speaker=turn.source) \
            and bool(object_words(turn.text) - known)

    def confirms(turn: ObservationView, standing: ObservationView) -> bool:
        """Whether ``turn`` names no new value and says again a word of what stands beside the question's."""
        if any(not v <= known | object_words(standing.text) for v in values_named(turn.text)):
            return False
        said = {w for w in terms(turn.text, turn.source or "user") - question.words if len(w) > _SHORT_WORD}
        return bool(said & terms(standing.text, standing.source or "user"))

    def a_place(s: StatementView) -> bool:
        """Whether ``s`` gives a place where a place is asked of a slot the vocabulary does not know ("our office
        is on the 4th floor of Kingsway", then "we've relocated to the old warehouse on Dock Road")."""
        return question.wh == "where" and slot is not None and not vocabulary.declared(slot) \
            and "where" in vocabulary.asked_with(s.predicate)

    taken_back = {s.id for s in recall.withdrawn}
    current = origin
    for turn in later:
        # a turn that says again what stands ("yep, see you at the library") confirms it
        if replaces(turn) and not confirms(turn, current):
            current = turn
    return current if current is not origin else None


def _record_lead(missed: list[ObservationView], observations: list[ObservationView], lead: str,
                 question: Question) -> tuple[str, str, list[ObservationView]]:
    """(the lead, its id, the observations cited) when what was said leads: the value restated since, if it
    was ("Now 8pm" after "lands at 6pm", "scratch that, it lands at 8pm"), else ``lead``. Restated by its
    speaker; or by anyone in the conversation, asked of no one's own ("omar: fine, 6:30pm Wednesday" after
    "gita: flat viewing is Wednesday at 5pm")."""
    restated = value_since(missed[0], observations, anyone=not question.first_person or question.ours)
    if restated is None:
        return lead, missed[0].id, missed
    value, said = restated
    return (f"Now {value} ({said.source or 'someone'}, {when(said.created_at)}).", said.id,
            [said, *(o for o in missed if o.id != said.id)])


def _with_addition(cited: list[ObservationView], recall: Recall, question: Question,
                   drawn: dict[str, list[StatementView]]) -> list[ObservationView]:
    """The observations cited for words that lead, with the next turn of their speaker when it adds to them
    ("Zainab's allergic to penicillin", then "oh and she reacts badly to shellfish too")."""
    more = _added_to(cited[0], recall, drawn, lambda s: about_subject(s, question)) if cited else None
    return cited if more is None or more in cited else [*cited, more]


def _drawn(recall: Recall) -> dict[str, list[StatementView]]:
    """Observation id -> the statements extracted from it (current, replaced or taken back)."""
    out: dict[str, list[StatementView]] = {}
    for s in [*recall.statements, *recall.superseded, *recall.withdrawn]:
        for origin in s.derived_from:
            out.setdefault(origin, []).append(s)
    return out


def _nothing_answers(
    recall: Recall, question: Question, live: list[StatementView], scores: dict[str, float],
    missed: list[ObservationView], words_score: float, replaced: list[frozenset[str]],
    retractions: list[RetractionView], max_evidence: int, drawn: dict[str, list[StatementView]],
) -> Composition:
    """No statement answers: what was said (an observation nothing was extracted from; its clauses naming
    ``replaced`` left out), else ``NOTHING`` with the closest statements as related, at low confidence."""
    if missed:
        said = _said(missed[0], question, replaced)
        lead, lead_id, cited = _record_lead(missed, recall.observations, f"No statement answers that yet; {said}.",
                                            question)
        cited = _with_addition(cited, recall, question, drawn)
        return Composition(lead=lead, lead_id=lead_id, observations=cited[:max_evidence], retractions=retractions,
                           lead_words=_part(missed[0], question, replaced) if lead_id == missed[0].id else None,
                           confidence=round(MISSED_CONFIDENCE * words_score, 2))
    near = sorted((s for s in live if scores[s.id] > 0 or about_subject(s, question)),
                  key=lambda s: -scores[s.id])
    related = _distinct(near)[:max_evidence]
    confidence = round(RELATED_CONFIDENCE * max((scores[s.id] for s in related), default=0.0), 2)
    return Composition(lead=NOTHING, lead_id=None, related=related, retractions=retractions, confidence=confidence)


def _missed_observations(
    recall: Recall, question: Question, lead: StatementView | None, scores: dict[str, float], vocabulary: Vocabulary,
    extracted: dict[str, list[StatementView]],
) -> list[ObservationView]:
    """Observations newer than the lead that touch what is asked, by or about its subject, from which no
    statement answers it: what the extraction missed, newest first."""
    since = lead.created_at if lead is not None else -1
    out = []
    for o in recall.observations:
        if o.created_at <= since or observation_score(o, question) < ANSWERS or not gives_kind(o.text, question):
            continue  # older than the lead, about something else, or without a value of the kind asked
        drawn = extracted.get(o.id, [])
        if any((scores[s.id] if s.id in scores else score(s, question, vocabulary)) >= ANSWERS for s in drawn):
            continue  # understood: its statements answer (they lead, were replaced or were taken back)
        if any(terms(s.predicate, question.asker) & question.words for s in drawn):
            continue  # understood: about someone or something else ("my sister lives in Madrid")
        if question.attribute and drawn and not any(question.attribute in terms(s.sentence(), question.asker)
                                                    for s in drawn) or not text_gives_attribute(o.text, question):
            continue  # understood: not the attribute asked ("Ola started at the company" for her job title)
        if question.wh == "why" and not gives_reason(o.text):
            continue  # no reason in them ("quit my job at the warehouse" for why I quit)
        if terms(o.text, o.source or "user") <= question.words:
            continue  # says nothing the question does not ("my sister is Chiara" for what Chiara does)
        if question.first_person and drawn and not _SELF & set(_WORDS.findall(o.text.casefold())) \
                and not any(about_subject(s, question) for s in drawn):
            continue  # understood: the asker's words about someone else ("Helen's boss is Tariq", "my husband
            # still has oat milk"); words with an "I" in them may be about the asker, whatever was drawn
        out.append(o)
    return sorted(out, key=lambda o: -o.created_at)


def observation_score(o: ObservationView, question: Question) -> float:
    """The share of the question's words an observation's text covers, its speaker standing for "I";
    0 unless it is by the asker (a question in the first person) and covers a word besides the asker,
    or names at least two of the question's words (its subject and what is asked), or all of them when
    the question has only one ("where is the printer?"). Asked of "us" (no "I"), words in no one's voice
    by anyone may answer ("how many reams of A4 do we have?" of a stock bot's "A4 paper: 65 reams"), and so may a
    member's words in the first person plural in a conversation of several ("let's meet at the clock tower")."""
    source = o.source or "user"
    said = matching_text(o)
    if _anothers(said, question):
        return 0.0
    if question.names and not question.names & set(terms(f"{said} {source}", source)):
        return 0.0  # the one named is not named in them, nor says them ("Yusuf's shoe size" for Elena's)
    mine = question.first_person and source.casefold() == question.asker.casefold()
    # asked of "us" beside a conversation, a member's words in the first person plural speak for the group
    # ("let's meet at noon"); one speaker's "we" alone may be another group (their household, their team)
    voice = question.group_talk and not mine and speaks_for_us(o.text)
    # words naming the asker's thing by the number the asker named it with are of it ("Order 88213 was dispatched")
    of_mine = not mine and bool(question.owned & set(_NUMBERED.findall(o.text.casefold())))
    if question.first_person and not mine and not (question.ours and _impersonal(o.text)) and not voice \
            and not of_mine:
        return 0.0  # another's words about themselves; asked of "us", a record in no one's voice may answer
    if not question.words:
        return 0.0
    covered = question.words & set(terms(said, source))
    if voice or of_mine:
        covered |= question.words & set(terms(question.asker, question.asker))
    beyond = covered - set(terms(source, source)) - set(terms(question.asker, question.asker))
    if not beyond or (not mine and len(covered) < min(2, len(question.words))):
        return 0.0
    if question.first_person and not mine:  # a record of ours stands for "we" as its speaker's words do for "I"
        covered |= question.words & set(terms(question.asker, question.asker))
    return len(covered) / len(question.words)


def _anothers(text: str, question: Question) -> bool:
    """Whether ``text`` speaks of another's thing than the one asked of, and not of the one asked of ("Aiyana's
    flight lands at 6:40pm" for "when does Bruno's flight land?"; "last year's offsite" for this year's)."""
    asked = _possessions(question.text)
    said = _possessions(text)
    return any(noun in said and owner not in said[noun] and owner not in text.casefold()
               for noun, owners in asked.items() for owner in owners)


def _possessions(text: str) -> dict[str, set[str]]:
    """Possessed noun (folded) -> its possessors as said ("this year", "bruno") in ``text``."""
    out: dict[str, set[str]] = {}
    for m in _POSSESSION.finditer(text.casefold()):
        out.setdefault(fold(m.group("noun")), set()).add(" ".join(filter(None, (m.group("det"), m.group("owner")))))
    return out


def _impersonal(text: str) -> bool:
    """Whether words speak in no one's voice (no first person): a record, a notice ("A4 paper: 65 reams")."""
    return not FIRST_PERSON & set(_WORDS.findall(text.casefold()))


def _said(o: ObservationView, question: Question, leave_out: list[frozenset[str]] | None = None) -> str:
    """Who said what (the clause that answers ``question``, marked as a part when it is one), and when."""
    part = _part(o, question, leave_out)
    quoted = _one_line(part) if part == o.text else f"...{_one_line(part)}..."
    return f'{o.source or "someone"} said "{quoted}" ({when(o.created_at)})'


def _part(o: ObservationView, question: Question, leave_out: list[frozenset[str]] | None = None) -> str:
    """The part of ``o`` that answers ``question``, without the clauses naming what it replaced (``leave_out``)."""
    asked = not gives_kind("", question)  # a kind of value is asked (nothing gives it)
    text = leaving_out(o.text, leave_out) if leave_out else o.text
    return answering_part(text, question, o.source or "user",
                          (lambda part: gives_kind(part, question, clause=True)) if asked else None)


def _distinct(statements: list[StatementView]) -> list[StatementView]:
    """The statements without repeats of one claim (the same sentence from several observations)."""
    seen: set[tuple[str, str, str, bool]] = set()
    out = []
    for s in statements:
        if _claim(s) not in seen:
            seen.add(_claim(s))
            out.append(s)
    return out


def accept_phrasing(composition: Composition, written: str, max_chars: int) -> str | None:
    """The model's lead (ids shortened) if it is one short line citing every line it was given and, when
    the lead is contested, calling it unresolved; else None, and the rule-made lead stands."""
    text = " ".join(written.split())
    lines = composition.memory()
    if not lines or len(text) > max_chars or any(f"[{line_id}]" not in text for line_id, _ in lines):
        return None
    if composition.lead.startswith(CONTESTED) and "unresolved" not in text.casefold():
        return None
    for line_id, _ in lines:
        text = text.replace(f"[{line_id}]", f"[{short_id(line_id)}]")
    return text


def _choose(statements: list[StatementView], scores: dict[str, float],
            key: Callable[[StatementView], tuple[str, str]], now: bool = True,
            named: Callable[[StatementView], bool] = lambda s: False) -> StatementView | None:
    """The newest statement of the (subject, relation) group answering the question best; asked ``now``
    (not about the past), a group that holds now before one of past events only. Where the question names
    the value it asks of (``named``: a yes-or-no question, a relation with many values at once), the
    statement answering it best before the newest."""
    if not statements:
        return None
    groups: dict[tuple[str, str], list[StatementView]] = {}
    for s in statements:
        groups.setdefault(key(s), []).append(s)
    # Best answer; then, asked what holds now, a group that says what holds before one of past events ("I
    # switched gyms" tells no gym); then the group said last (of equally good answers the latest word: "I quit
    # smoking" over "I smoke ten a day"); then the most confident (a literal statement before the claims a
    # worker inferred from it with it, "user lives in X" before "user located in X"); max() keeps the first
    # of equals, so retrieval order breaks the remaining ties.
    # Answers equally good to two places (a tie-break of a thousandth, as ``relevance.score`` gives) count
    # as equal before what holds now: "user's weight is 90 kg" before "user lost weight".
    best = max(groups.values(), key=lambda g: (round(max(scores[s.id] for s in g), 2),
                                               now and any(s.tense != "past" for s in g),
                                               max(scores[s.id] for s in g),
                                               max(s.created_at for s in g), max(s.confidence for s in g)))
    # What holds now before what held once ("I used to work at Google" never answers where one works
    # if a present statement does); then the newest; of one observation's statements (same time), what
    # is before what is not: "I no longer live in Madrid, I live in Seville" answers Seville.
    # Of values that hold together ("likes tennis", "likes chess"), the one asked about answers: "do I like
    # tennis?" is not answered by the newer chess.
    return max(best, key=lambda s: (s.tense != "past", round(scores[s.id], 2) if named(s) else 0.0,
                                    s.created_at, not s.negated, s.confidence))


def _said_instead(lead: StatementView, live: list[StatementView], question: Question,
                  vocabulary: Vocabulary) -> StatementView | None:
    """What the words that ended the lead's value said its subject does instead, when the extraction could
    not place it in the slot asked ("Diego quit Nando's, he drives for DHL now" for "where does Diego
    work?"): a statement of the same subject from the same observation, present, naming a name, in a
    relation the vocabulary does not declare. None for a lead that is no ended value, or a yes-or-no question."""
    if not lead.negated or question.polar or question.wh is None or not lead.derived_from:
        return None
    return next((s for s in live if s.subject.casefold() == lead.subject.casefold() and not s.negated
                 and s.tense != "past" and set(s.derived_from) & set(lead.derived_from)
                 and not vocabulary.known(s.predicate) and any(w[:1].isupper() for w in s.object.split())), None)


def _of_others(statements: list[StatementView], recall: Recall, question: Question) -> list[StatementView]:
    """The statements that tell of another speaker and not of the asker: asked about oneself, the thing asked
    about may be their subject ("do I work at Shopify?"), yet "Shopify employs dev" is dev's fact."""
    me = terms(question.asker, question.asker)
    names = {o.source for o in recall.observations if o.source} | {s.source for s in statements if s.source}
    others = set().union(*(terms(n, question.asker) for n in names if n.casefold() != question.asker.casefold()))
    others -= me

    def tells_of_another(s: StatementView) -> bool:
        named = terms(s.object, question.asker)
        return bool(named & others) and not (named | terms(s.subject, question.asker)) & me

    return [s for s in statements if tells_of_another(s)]


def _precise(statements: list[StatementView], vocabulary: Vocabulary) -> list[StatementView]:
    """The statements without those a more precise one agrees with: "user likes meetings" (inferred later)
    says less than "user prefers morning meetings", it generalises and does not change the value."""
    def narrows(t: StatementView, s: StatementView) -> bool:
        agree = (vocabulary.canonical(t.predicate) == vocabulary.canonical(s.predicate) and t.negated == s.negated
                 or vocabulary.polarity(t.predicate, t.negated) * vocabulary.polarity(s.predicate, s.negated) > 0)
        return (agree and t.subject.casefold() == s.subject.casefold() and t.tense == s.tense
                and bool(object_words(s.object)) and object_words(t.object) > object_words(s.object))

    return [s for s in statements if not any(narrows(t, s) for t in statements)]


def _with_status(lead: StatementView, recall: Recall, live: list[StatementView], question: Question,
                 vocabulary: Vocabulary, drawn: dict[str, list[StatementView]]) -> StatementView:
    """The state of the lead's thing said after ``lead``, when there is one ("the offsite got cancelled" after
    "the offsite is on the 14th"; "my Halifax account" closed after "I have an account at Halifax"): whatever
    is asked about a thing, that it is cancelled, closed or over comes first. Unless the thing is the lead's
    value and the record names the value that took its place ("cancelled PureGym and joined David Lloyd"
    for "which gym do I go to?"): the new value answers."""
    # the thing, or the same thing said shorter ("the keyboard" of "my old Yamaha keyboard on Gumtree")
    about = [object_words(lead.subject), object_words(lead.object)]
    later = [s for s in live if vocabulary.canonical(s.predicate) == STATUS_RELATION and not s.negated
             and _thing(s.subject) and any(_thing(s.subject) <= words for words in about)
             and s.created_at > lead.created_at]
    if not later:
        return lead
    status = max(later, key=lambda s: s.created_at)
    if _thing(status.subject) <= object_words(lead.object) \
            and said_since(lead, recall.observations, drawn, question, vocabulary) is not None:
        return lead
    return status


def _role(name: str) -> str:
    """A role's head noun, without what it is of: "captain of user's team" -> "captain"."""
    words = name.casefold().partition(" of ")[0].split()
    return fold(words[-1]) if words else ""


def _thing(name: str) -> frozenset[str]:
    """A thing's words without its owner: "user's Halifax account" -> {halifax, account}."""
    _, sep, owned = name.partition("'s ")
    return object_words(owned if sep else name)


def _sentence(s: StatementView, conflicts: list[ContradictionView], asker: str | None) -> str:
    if not conflicts:
        return f"{_capital(realise(s, asker))}."
    return f"{CONTESTED}{'; '.join(conflict_sentence(c).removesuffix(' -- unresolved') for c in conflicts)}."


def conflict_sentence(c: ContradictionView) -> str:
    """``alice says X (Mon 23 Nov 09:00); bob says Y (Thu 26 Nov 10:00) -- unresolved``, older side first."""
    sides = sorted((c.a, c.b), key=lambda s: (s.created_at, s.id))
    said = "; ".join(f"{s.source or 'someone'} says {realise(s)} ({when(s.created_at)})" for s in sides)
    return f"{said} -- unresolved"


def _confidence(lead: StatementView, current: list[StatementView], conflicts: list[ContradictionView]) -> float:
    agreeing = [s for s in current if _claim(s) == _claim(lead)]
    support = 1.0 - math.prod(1.0 - _clamp(s.confidence) for s in agreeing)
    others = [side for c in conflicts for side in (c.a, c.b) if side.id != lead.id]
    opposition = 1.0 - math.prod(1.0 - _clamp(s.confidence) for s in others)
    if support + opposition == 0:
        return 0.0
    return round(support * support / (support + opposition), 2)


def _claim(s: StatementView) -> tuple[str, str, str, bool]:
    return s.subject.casefold(), s.predicate, s.object.casefold(), s.negated


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _provenance(s: StatementView) -> str:
    shared = f" | shared from space {s.space}" if s.space else ""
    return f"confidence {s.confidence:.2f} | from {s.source or 'unknown'} | {when(s.created_at)}{shared}"


def _evidence(s: StatementView) -> str:
    where = f" in space {s.space}" if s.space else ""  # a share: say which space the fact came from
    return (f"{realise(s)} ({s.confidence:.2f}, {s.source or 'unknown'}, {when(s.created_at)}, "
            f"{short_id(s.id)}{where})")


def speakers_of(recall: Recall, observations: list[ObservationView]) -> dict[str, str]:
    """Statement id -> source of the observation it derives from, for the statements in contradictions.

    ``observations`` are those observations (``contradicted_origins`` lists the ids to read).
    """
    spoken = {o.id: o.source or "" for o in observations}
    out = {}
    for c in recall.contradictions:
        for s in (c.a, c.b):
            origin = next((spoken[i] for i in s.derived_from if spoken.get(i)), None)
            if origin:
                out[s.id] = origin
    return out


def contradicted_origins(recall: Recall) -> list[str]:
    """Ids the sides of ``recall``'s contradictions derive from (observations among them)."""
    return sorted({i for c in recall.contradictions for s in (c.a, c.b) for i in s.derived_from})
