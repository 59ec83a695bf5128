"""A dependency parse -> triples: the offline model's main reader.

Each clause (a verb with its subject) becomes triples:

- subject: the nominal subject with its compounds, adjectives, possessor and
  own phrases of place ("my sister" -> "<speaker>'s sister", "the cafe on Main
  Street"); first person is the speaker; he/she is the one person named in
  the observation, and he/she/they in a reported clause the one reporting it
  ("user said they hate X" -> user dislikes X), or the clause is left out;
  "X and Y" gives one triple per subject; "my brother Sam" is Sam (and
  <speaker> has_brother Sam).
- predicate: the verb lemma with its particle or preposition, through the
  verb table (``lexicon.VERBS``: "work at" -> works_at, "report to" ->
  reports_to ...) and the relation vocabulary's aliases (``truth.vocabulary``:
  reports_to is has_manager); copulas give is_a (a noun), has_property (an
  adjective), has_status (an adjective of status of a thing: open, closed,
  cancelled ...), has_value (an amount: "the budget is 50k"; a person's bare
  number is has_age), happens_on (a thing's day), "<adjective> <preposition>"
  (interested_in) or an attribute: a possessed noun valued by a name or in
  the attribute table ("my manager is Tom", "Tom is my manager", "our
  landlord is Ken" -> <speaker> has_manager Tom / has_landlord Ken).
- object: the head of the complement with its compounds, adjectives,
  numbers, "of" phrases and phrases of time and place, its own or its
  clause's ("I hate meetings on Fridays" -> meetings on Fridays; a date is
  ``valid_at`` instead); an activity keeps its particle, manner and purpose
  ("waking up early for meetings"); hyphens stay ("peer-to-peer"); never a
  relative or subordinate clause; "X and Y" gives one triple per object,
  "not Y" and "X, not Y" a negated one.
- negation: ``neg`` dependents, "no longer", "never", "no X".
- confidence: the hedge table (``mnemonet.llm.hedges``) over the clause and
  the verbs that govern it; lowered for past facts and plans.
- tense: past (past-tense verbs, "used to"), future ("will", "going to",
  "plan to"), else present; time phrases resolve to ``valid_at``.
- changes said as events (``changes``) give the state they leave, on the
  slot the plain statement of that state uses, present and marked
  ``revision="change"``: "Frank took over from Carol as my manager" and "my
  new manager is Frank" -> (<speaker>, has_manager, Frank); "Tom left Initech
  and joined Hooli", "I started a new job at Hooli" -> works_at; "we relocated
  to Porto" -> lives_in; "I switched from Vim to Emacs" -> uses Emacs, not
  Vim; "the budget was cut to 20k", "my rent went up to 1500 euros" ->
  has_value; "Sam was promoted to senior engineer" -> is_a; "the retro moved
  to Thursday" -> happens_on; "the cafe closed down" -> has_status closed; "I
  stopped going to the gym" -> goes_to gym, negated; "I quit smoking" ->
  has_habit smoking, negated (an activity said with no object is a habit:
  "I smoke"); "we renamed the Monday meeting to Kickoff" -> has_name. A plan
  ("I will move to Lisbon") stays future, unmarked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING

from mnemonet.llm.base import Tense, Triple
from mnemonet.llm.hedges import NO_HEDGE, hedge_confidence
from mnemonet.llm.offline import changes
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.changes import pobj as _pobj
from mnemonet.llm.offline.when import resolve
from mnemonet.llm.offline.words import ing_form, third_person
from mnemonet.model.records import Revision
from mnemonet.truth.vocabulary import default_vocabulary

if TYPE_CHECKING:  # spaCy itself is imported only when the first parse loads the pipeline (``nlp``)
    from spacy.tokens import Doc, Span, Token

_SUBJECT_DEPS = ("nsubj", "nsubjpass", "csubj")
_CLAUSE_DEPS = ("conj", "ccomp", "advcl", "parataxis", "xcomp", "relcl", "acl")
_KEEP_IN_NAME = ("compound", "amod", "nummod", "poss", "nmod", "quantmod", "case", "npadvmod")
_OBJECT_DEPS = ("dobj", "attr", "oprd", "acomp", "dative")
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})
_THEY = frozenset({"they", "them", "their", "theirs", "themselves", "themself"})
_FIRST_PERSON = frozenset({"i", "me", "we", "us", "my", "our", "mine", "ours", "myself", "ourselves"})
_TIME_LABELS = ("DATE", "TIME")
_SUBJECT_PHRASES = lx.QUALIFIER_PREPOSITIONS | {"of"}


@dataclass
class _Clause:
    """What a verb's clause inherits from the verbs above it."""

    subjects: list[Token] = field(default_factory=list)
    tense: Tense | None = None
    hedge: float | None = None
    # Set by a verb of change or ending above: "stopped going to the gym" (negated, a change).
    revision: Revision | None = None
    negated: bool = False


class Mapper:
    """Maps one parsed observation to triples, for one speaker, seen from one day."""

    def __init__(self, doc: Doc, speaker: str, today: date) -> None:
        self.doc = doc
        self.speaker = speaker
        self.today = today
        self.named = _one_named_person(doc)
        # Who he/she is when the parser found no person's name: the one person spoken of ("my sister moved to
        # Leeds, she works at the BBC"; "Beatriz has left, she's at Monzo now", the name parsed as a common noun).
        self.antecedent = _one_person_spoken_of(doc) if self.named is None else None
        # Pronouns of a reported clause bound to the one who reports it (token index -> reporter).
        self._bound: dict[int, Token] = {}
        # A name the parser made a second subject beside the noun it names (noun index -> name).
        self._naming: dict[int, Token] = {}
        self.out: list[Triple] = []
        self._found: list[tuple[int, Triple]] = []
        self._at = 0

    def sentence(self, sent: Span) -> list[Triple]:
        """The triples of one sentence of the document (a question asserts nothing)."""
        self.out = []
        self._found = []
        if not is_question(sent):
            self._clause(sent.root, _Clause())
            self._it_is(sent)
        # In the order the text says them, whatever the tree's shape ("I hate X, Y is better").
        return [t for _, t in sorted(self._found, key=lambda pair: pair[0])]

    def _it_is(self, sent: Span) -> None:
        """"<X's colour> isn't blue, it's green", "I used to work at IBM, now it's Red Hat": an "it is B"
        after a value denied or past stands for that value, so B of the same kind is the slot's value now
        (a correction after a denial, else a change). After a present statement "it" is the thing itself
        ("I love this song, it's great"), and a quality after a thing is a reason ("I left Acme, it's
        chaos"): nothing is replaced."""
        for verb in sent:
            subject = next((c for c in verb.children if c.dep_ == "nsubj"), None)
            if (verb.lemma_ != "be" or subject is None or subject.lower_ != "it" or _negated(verb)
                    or _tense(verb) == "past"):
                continue
            said = [t for at, t in self._found if at < subject.i and t.subject.lower() != "it"]
            if not said or not (said[-1].negated or said[-1].revision is not None or said[-1].tense == "past"):
                continue
            last = said[-1]
            before = [t for t in sent if t.i < subject.i and t.text == last.object.split()[-1]]
            revision: Revision = "correction" if last.negated and last.revision is None else "change"
            clause = _Clause(tense="present", revision=revision)
            self._at = verb.i
            # Only a value of the same kind (part of speech) replaces it: "it's too noisy" after "I don't
            # like the office" is a reason, not another office.
            # What took the place of a thing given up is not given up: it fills the slot the thing held,
            # which these words do not name ("gave up coffee, it's green tea now").
            predicate = "has_value" if last.predicate in _ENDING_PREDICATES else last.predicate
            for value in (v for v in _copula_values(verb) if before and _kind(v) == _kind(before[-1])):
                for name, negated in self._objects(value, keep_dates=True):
                    self._add(last.subject, predicate, name, negated, clause, None)

    # -- clauses ---------------------------------------------------------------

    def _clause(self, verb: Token, inherited: _Clause) -> None:
        # The small parser sometimes hangs the subject on the auxiliary ("Alice and Bob are married").
        own = [c for c in verb.children if c.dep_ in _SUBJECT_DEPS] or [
            g for c in verb.children if c.dep_ in ("aux", "auxpass") for g in c.children if g.dep_ in _SUBJECT_DEPS
        ]
        if not own and (
            verb.tag_ in ("VBZ", "VBP", "VBD") or verb.tag_ == "NNS" and any(c.dep_ == "dobj" for c in verb.children)
        ):
            # ... or tags a sentence-initial name as a compound of the verb ("In 2019 Jenna works at Acme"), or
            # a noun before it ("the 42 bus runs through our village": "bus runs" read as one noun).
            own = [
                c
                for c in verb.children
                if c.i < verb.i
                and (c.dep_ in ("compound", "npadvmod", "dep") and c.pos_ in ("PROPN", "PRON")
                     or c.dep_ == "compound" and c.pos_ == "NOUN" and c.i == verb.i - 1)
                and c.ent_type_ not in _TIME_LABELS
            ][-1:]
        if len(own) == 2 and own[0].pos_ == "NOUN" and own[1].pos_ == "PROPN" and own[1].left_edge.i == own[0].i + 1:
            # "Hassan's cousin Omar lives in Doha", parsed as two subjects: the name names the noun.
            self._naming[own[0].i] = own[1]
            own = own[:1]
        if len(own) == 2 and any(t.text == "," for t in verb.doc[own[0].i + 1:own[1].left_edge.i]):
            own = own[1:]  # "sad news, Café Lindqvist closed ...": a phrase set off by a comma is no subject
        subjects = _with_conjuncts(own[0]) if own else inherited.subjects
        tense = _tense(verb) or inherited.tense
        hedge = _min(inherited.hedge, hedge_confidence(_local_text(verb)))
        here = replace(inherited, subjects=subjects, tense=tense, hedge=hedge)
        lemma = verb.lemma_.lower()
        children = list(verb.children)
        xcomp = next((c for c in children if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
        activity = changes.ended_activity(verb) if subjects and not _negated(verb) else None
        if activity is not None:
            self._ended(activity, here)
        elif xcomp is not None and self._through(verb, lemma, xcomp, here):
            pass
        elif lemma in lx.REPORTING_VERBS and any(c.dep_ == "ccomp" for c in children):
            # The report itself ("Jenna said ...") is not a fact about Jenna; a he/she/they in what she
            # said is her ("user said they hate waking up early").
            for ccomp in (c for c in children if c.dep_ == "ccomp"):
                self._bind(ccomp, subjects)
        elif subjects and verb.dep_ not in ("relcl", "acl", "amod"):
            self._emit(verb, here)
        for child in children:
            for verb_conj in (
                g for g in child.children if g.dep_ == "conj" and g.pos_ == "VERB" and child.dep_ in _OBJECT_DEPS
            ):
                self._clause(verb_conj, _Clause(subjects, None, inherited.hedge))  # "I like cats and hate dogs"
            if child.dep_ == "advcl" and _mark(child) in lx.CONDITIONAL_MARKS:
                continue  # "if it rains I stay home": a condition asserts neither part
            if child == activity:
                continue
            if child.dep_ in ("conj", "parataxis") and child.pos_ in ("VERB", "AUX"):
                self._clause(child, _Clause(subjects, None, inherited.hedge))
            elif child.dep_ in ("ccomp", "advcl") and child.pos_ in ("VERB", "AUX"):
                # "Jenna said she prefers email", "I think my manager is Sarah": the inner clause is the fact.
                reported = lx.REPORTING_HEDGES.get(lemma)
                shared = subjects if child.dep_ == "advcl" and child.tag_ == "VBG" and child.i < verb.i else []
                self._clause(child, _Clause(shared, None, _min(hedge, reported)))

    def _through(self, verb: Token, lemma: str, xcomp: Token, here: _Clause) -> bool:
        """Verbs that pass their subject to an infinitive: "used to work", "going to move", "want to learn"."""
        if lemma == "use" and verb.tag_ == "VBD":
            self._clause(xcomp, replace(here, tense="past"))
            return True
        if lemma == "go" and verb.tag_ == "VBG" or lemma in lx.PLAN_VERBS:
            self._clause(xcomp, replace(here, tense="future"))
            return True
        if lemma in lx.ASPECT_VERBS and any(c.dep_ in ("dobj", "prep", "attr") for c in xcomp.children):
            # "I just started volunteering at a shelter": the activity, going on now, is the fact.
            self._clause(xcomp, replace(here, tense="present"))
            return True
        return False

    def _ended(self, activity: Token, clause: _Clause) -> None:
        """ "I stopped going to the gym": the activity, negated, as a change (present: it holds now);
        "I quit smoking": an activity with no object is a habit (``has_habit``)."""
        ended = replace(self._changed(clause), negated=not clause.negated)
        if activity.pos_ == "VERB" and any(c.dep_ in ("dobj", "prep", "attr", "dative") for c in activity.children):
            self._clause(activity, ended)
            return
        name = activity.lower_ if activity.pos_ == "VERB" else self._name(activity)
        for subj_tok in clause.subjects:
            if name is not None and (subject := self._subject(subj_tok)) is not None:
                self._at = activity.i
                self._add(subject, lx.HABIT_PREDICATE, name, ended.negated, ended, None)

    def _bind(self, clause_verb: Token, reporters: list[Token]) -> None:
        """A third-person pronoun in a reported clause is the one who reports it ("user said they ...",
        "Jenna said her manager is Tom"), unless another person is named."""
        if len(reporters) != 1 or reporters[0].lower_ in _FIRST_PERSON:
            return
        reporter = reporters[0]
        for tok in clause_verb.subtree:
            low = tok.lower_
            if low in _THEY or low in _PERSON_PRONOUNS and self.named in (None, reporter.text):
                self._bound[tok.i] = reporter

    # -- one clause's triples --------------------------------------------------

    def _emit(self, verb: Token, clause: _Clause) -> None:
        self._at = verb.i
        negated = _negated(verb) != clause.negated
        when = self._when(verb, clause.tense)
        lemma = verb.lemma_.lower()
        if lemma in lx.RENAME_VERBS:
            self._rename(verb, negated, clause)
            return
        for subj_tok in clause.subjects:
            if not negated and not _modal(verb) and self._change(verb, subj_tok, clause, when):
                continue  # "can become part of our lives" says no change
            if (doer := _passive_agent(verb)) is not None and (agent := self._subject(doer)) is not None:
                # "the under-12s are now managed by Tomasz": what the agent does (Tomasz manages the under-12s)
                for item, item_negated in self._objects(subj_tok):
                    self._add(agent, _verb_predicate(lemma, ""), item, negated != item_negated, clause, when)
                continue
            values = _copula_values(verb) if lemma == "be" else []
            if values and _is_attribute(subj_tok, values):
                self._attribute(subj_tok, values, negated, clause, when)
                continue
            if values and (role := _inverted_role(subj_tok, values)) is not None:
                self._role(subj_tok, role, negated, clause, when)  # "Marta is my manager"
                continue
            subject = self._subject(subj_tok)
            if subject is None:
                continue
            for predicate, obj_tok, obj_negated in self._predicates(verb, lemma, subj_tok):
                if predicate == lx.HABIT_PREDICATE:
                    self._add(subject, predicate, ing_form(obj_tok.lemma_.lower()), negated, clause, when)
                    continue
                here = clause
                if predicate == "works_at" and lemma in lx.JOIN_VERBS | lx.LEAVE_VERBS and clause.tense == "past":
                    # "Tom joined Hooli": the change is done, its result holds now.
                    here = self._changed(clause)
                dated = predicate == lx.WHEN_PREDICATE  # the day is the value, not when the statement holds
                # A direct object keeps the clause's qualifiers, unless its slot holds one value (an employer
                # is the same employer "in Berlin").
                # A recurring time qualifies any value: "works at a bakery on weekends" is another slot
                # than "works at the library on weekdays".
                qualified = obj_tok.dep_ in ("dobj", "pobj") and not default_vocabulary().single_valued(predicate)
                complement = obj_tok.head if obj_tok.dep_ == "pobj" else None  # the phrase the object is in
                # A tool keeps what it is used for: "we use Zoom for the book club calls".
                purpose = lx.QUALIFIER_PREPOSITIONS | {"for"} if lemma == "use" else lx.QUALIFIER_PREPOSITIONS
                qualifiers = (self._qualifiers(verb, complement, purpose) if qualified
                              else self._recurring_times(verb, obj_tok.head))
                for item, item_negated in self._objects(obj_tok, keep_dates=dated, qualifiers=qualifiers):
                    self._add(subject, predicate, item, negated != (obj_negated or item_negated), here,
                              None if dated else when)
                for other in _not_alternatives(verb, obj_tok):  # "I like blue, not green"
                    for item, _ in self._objects(other, keep_dates=dated):
                        self._add(subject, predicate, item, not negated, here, None if dated else when)

    def _changed(self, clause: _Clause) -> _Clause:
        """The clause of a change's result: it holds now (a plan stays a plan) and replaces a value."""
        if clause.tense == "future":
            return clause
        return replace(clause, tense="present", revision=clause.revision or "change")

    def _change(self, verb: Token, subj_tok: Token, clause: _Clause, when: str | None) -> bool:
        """A change said as an event, written on the slot of the state it leaves (``changes``); False
        when the clause is none."""
        changed = self._changed(clause)
        if (to := changes.change_to(verb)) is not None and not changes.moved_to(verb):
            # A title the parser took for a verb ("promoted to sergeant") is what the holder is (is_a).
            self._state(changes.changed_thing(verb, subj_tok), to[0], changed, when, rank=to[0].pos_ == "VERB")
            return True
        if (status := changes.status_of_clause(verb, subj_tok)) is not None and (
            (event := _is_event(verb, clause)) or _is_state(verb)
        ):
            thing, state = status
            if (name := self._subject(thing)) is not None:  # "the cafe closed down"; "the bridge is closed"
                self._add(name, lx.STATUS_PREDICATE, state, False, changed if event else clause, when)
            return True
        if (role := changes.role_as(verb, subj_tok)) is not None:
            holder, noun = role
            self._role(holder, noun, False, changed, when)
            return True
        if (role := changes.took_role(verb, subj_tok)) is not None:  # "Ingrid took over as treasurer"
            self._state(*role, changed, when, rank=True)
            return True
        if (title := changes.appointed(verb, subj_tok)) is not None:  # "they made Omar head of sales"
            self._state(*title, changed, when, rank=True)
            return True
        subject = self._subject(subj_tok)
        if subject is None:
            return False
        if (job := changes.job_at(verb)) is not None:
            # "I lost my job at X": the event as said, and the state it leaves (no longer works at X).
            employer, ended = job
            for item, _ in self._objects(employer):
                self._add(subject, "works_at", item, ended, changed, when)
            return False
        if (owned := changes.acquired(verb)) is not None:
            # "we adopted a dog": the event as said, and what it leaves (has dog, now, beside what was had).
            for item, _ in self._objects(owned):
                self._add(subject, "has", item, False, replace(clause, tense="present"), when)
            return False
        if (switch := changes.switched_to(verb)) is not None:
            new, old = switch
            for tok, gone in ((new, False), (old, True)):
                for item, _ in self._objects(tok) if tok is not None else []:
                    self._add(subject, "uses", item, gone, changed, when)
            return True
        if (move := changes.moved_to(verb)) is not None:
            place, origin = move
            mover = changes.changed_thing(verb, subj_tok)  # "we moved our hosting to Hetzner": the hosting
            if mover is not subj_tok and self._subject(mover) is None:
                # "moved everything over to Revolut": what moved names nothing, so no one and nothing lives
                # there; the speaker switched to it (the slot is the one their words were about)
                for item, _ in self._objects(place):
                    self._add(subject, "uses", item, False, changed, when)
                return True
            subject = self._subject(mover) or subject
            predicate = _home_predicate(mover, place)
            if origin is not None and clause.tense != "future":  # "moved from Boston to Seattle": Boston was
                for item, _ in self._objects(origin):
                    self._add(subject, predicate, item, False, replace(clause, tense="past"), when)
            for item, _ in self._objects(place):
                self._add(subject, predicate, item, False, changed, when)
            return True
        if (value := changes.became(verb)) is not None:  # "I became a lecturer", "I turned 34"
            self._state(subj_tok, value, changed, when)
            return True
        return False

    def _state(self, thing: Token, value: Token, clause: _Clause, when: str | None, *, rank: bool = False) -> None:
        """What "<thing> is <value>" says, for a value the clause reached by a change (``rank``: a title
        given, "named VP of marketing", is what the holder is)."""
        if _is_attribute(thing, [value]) and not changes.is_time_value(value):
            self._attribute(thing, [value], False, clause, when)
            return
        if (role := _inverted_role(thing, [value])) is not None:  # "Mark became my supervisor"
            self._role(thing, role, False, clause, when)
            return
        subject = self._subject(thing)
        if subject is None:
            return
        for predicate, obj_tok, _ in [("is_a", value, False)] if rank else self._copula_value(thing, value):
            dated = predicate == lx.WHEN_PREDICATE
            for item, item_negated in self._objects(obj_tok, keep_dates=dated):
                self._add(subject, predicate, item, item_negated, clause, None if dated else when)

    def _predicates(self, verb: Token, lemma: str, subj_tok: Token) -> list[tuple[str, Token, bool]]:
        """(predicate, object head, negated by the phrase) for each complement of ``verb``."""
        children = [c for c in verb.children if not _is_time(c)]
        out: list[tuple[str, Token, bool]] = []
        if lemma == "be":
            for c in children:
                # "blue, not green": a second complement with its own "not" is negated.
                own_neg = bool(out) and any(g.dep_ == "neg" for g in c.children)
                if c.dep_ in ("attr", "acomp"):
                    out.extend((p, o, own_neg) for p, o, _ in self._copula_value(subj_tok, c))
                elif c.dep_ == "prep" and (pobj := _pobj(c)) is not None and not out:
                    if changes.is_thing(subj_tok) and c.lower_ in lx.TIME_PREPOSITIONS and changes.is_time_value(pobj):
                        out.append((lx.WHEN_PREDICATE, pobj, False))  # "the board meeting is on the 3rd"
                    else:
                        out.append((_copula_preposition(subj_tok, c.lower_, pobj), pobj, False))
            if not out and subj_tok.pos_ == "NOUN" and (day := _time_value(verb, lx.TIME_PREPOSITIONS)) is not None:
                out.append((lx.WHEN_PREDICATE, day, False))  # "the launch is on Monday": when a thing happens
            return out
        if lemma in lx.JOIN_VERBS | lx.LEAVE_VERBS:
            employer = next((c for c in children if c.dep_ == "dobj"), None)
            organisation = employer is not None and employer.pos_ == "PROPN" \
                and employer.ent_type_ not in lx.NOT_EMPLOYER_LABELS
            # "joined a startup called Fernwood as their finance lead": joined as a job's role, not as a member
            if employer is not None and (organisation or lemma in lx.JOIN_VERBS and _as_job_role(verb) is not None):
                return [("works_at", employer, lemma in lx.LEAVE_VERBS)]
        if any(c.dep_ == "auxpass" for c in children):
            return self._passive(verb, lemma, children, subj_tok)
        phrase = _phrase_verb(verb)
        if phrase in lx.VERB_PHRASES:
            predicate, flips = lx.VERB_PHRASES[phrase]
            obj = next((c for c in children if c.dep_ in ("dobj", "xcomp", "ccomp")), None)
            return [(predicate, obj, flips)] if obj is not None else []
        particle_tok = next(
            (c for c in children if c.dep_ == "prt" or c.dep_ == "advmod" and c.lower_ in lx.PARTICLES), None
        )
        particle = particle_tok.lower_ if particle_tok is not None else ""
        base = f"{lemma} {particle}".strip()
        if lemma == "get" and any(c.lower_ in ("have", "'ve", "has", "'s") and c.dep_ == "aux" for c in children):
            base = "have"  # "I've got a funny story": has
        for c in children:
            if c.dep_ in _OBJECT_DEPS and base == "have" and changes.is_thing(subj_tok) and changes.is_quantity(c):
                out.append((lx.VALUE_PREDICATE, c, False))  # "our team has 10 people": what "is 12 people" says
            elif c.dep_ in _OBJECT_DEPS:
                out.append((_verb_predicate(base, ""), _quantity_head(c), False))
        if out:
            return out[:1] if out[0][1].dep_ != "dative" else out[1:2] or out[:1]
        preps = [c for c in children if c.dep_ in ("prep", "agent")]
        if particle_tok is not None:
            preps += [c for c in particle_tok.children if c.dep_ == "prep"]
        for c in sorted(preps, key=lambda t: t.i):
            if (pobj := _pobj(c)) is not None:
                out.append(
                    (_verb_predicate(base, "by" if c.dep_ == "agent" else c.lower_), _quantity_head(pobj), False)
                )
        if out:
            # "moved from Boston to Seattle" says two things; "went on a trip with workmates" one.
            return out if lemma in lx.MOVE_VERBS else out[:1]
        xcomp = next((c for c in children if c.dep_ == "xcomp" and c.pos_ == "VERB"), None)
        if xcomp is not None:  # "I love to paint", "I've always wanted to learn Spanish", "I went hiking"
            return [(_verb_predicate(base, ""), xcomp, False)]
        if not out:
            # A name the small parser hangs off the verb as npadvmod: "Yesterday I met Bob".
            named = next(
                (c for c in children if c.dep_ in ("npadvmod", "advmod") and c.pos_ in ("PROPN", "NOUN")), None
            )
            if named is not None:
                return [(_verb_predicate(base, ""), named, False)]
            extra = next((c for c in verb.children if c.dep_ == "npadvmod" and not _is_time(c)), None)
            extra = extra or next((c for c in verb.children if c.dep_ == "npadvmod"), None)
            if extra is not None and lemma in lx.EVENT_VERBS:  # "the rotation happens every 90 days"
                out.append((third_person(lemma), extra, False))
            elif lemma in lx.VERBS_WITHOUT_OBJECT and (
                adv := next((c for c in verb.children if c.dep_ == "advmod" and c.lower_ in lx.MANNER_OBJECTS), None)
            ):
                out.append((_verb_predicate(base, ""), adv, False))  # "Kevin works remotely"
            elif _is_habit(verb, subj_tok):
                out.append((lx.HABIT_PREDICATE, verb, False))  # "I smoke", "I don't drink"
        return out

    def _passive(self, verb: Token, lemma: str, children: list[Token],
                 subj_tok: Token) -> list[tuple[str, Token, bool]]:
        """ "I am called Sam" (has_name), "I was born in Lagos" (born_in), "the MOT is booked for 10 March"
        (happens_on), "I'm subscribed to Spotify" (subscribe_to), "they are married" (has_property)."""
        oprd = next((c for c in children if c.dep_ in ("oprd", "attr", "dobj")), None)
        if lemma in ("call", "name") and oprd is not None:
            return [("has_name", oprd, False)]
        for c in children:
            if c.dep_ == "prep" and (pobj := _pobj(c)) is not None and f"{lemma} {c.lower_}" in lx.VERBS:
                return [(lx.VERBS[f"{lemma} {c.lower_}"], pobj, False)]
        if oprd is None and _stative(verb):
            # A state said in the present ("is booked", "am subscribed"; "was reassigned to" tells of an
            # event): a thing set for a day happens then; a participle's own preposition names what it binds
            # to (one of place or time, "in", "at", "by", qualifies it instead).
            if changes.is_thing(subj_tok) and (day := _time_value(verb, lx.PASSIVE_OBJECT_PREPOSITIONS)) is not None:
                return [(lx.WHEN_PREDICATE, day, False)]
            for c in children:
                if c.dep_ == "prep" and c.lower_ in lx.PASSIVE_OBJECT_PREPOSITIONS and (pobj := _pobj(c)) is not None:
                    return [(f"{lemma}_{c.lower_}", pobj, False)]
            if (to := _misread_to(verb)) is not None:
                return [(f"{lemma}_to", to, False)]  # "subscribed to Spotify", the name read as a verb
        if oprd is None and not any(c.dep_ == "agent" for c in children):
            return [("has_property", verb, False)]
        return []

    def _copula_value(self, subj_tok: Token, value: Token) -> list[tuple[str, Token, bool]]:
        """(predicate, object) of "<subject> is <value>", whether the value is the copula's complement or
        reached by a change ("was cut to 20k"): an amount is the subject's value (a person's bare number
        their age), a day or time when a thing happens, else a description."""
        if changes.is_quantity(value) and value.dep_ != "acomp":
            # A name or a person with a bare number under 130: an age ("Ben is 41"; the small model's labels on
            # names are too unreliable to ask for PERSON); a thing's number is its value ("MRR is 80k").
            person = subj_tok.lower_ in _FIRST_PERSON or changes.is_person(subj_tok) or subj_tok.pos_ == "PROPN"
            return [("has_age" if person and changes.is_age(value) else lx.VALUE_PREDICATE, value, False)]
        if changes.is_thing(subj_tok) and changes.is_time_value(value):
            return [(lx.WHEN_PREDICATE, value, False)]  # "the deadline is Friday"
        if value.dep_ in ("pobj", "xcomp") and value.pos_ in ("ADJ", "NOUN") and changes.status_word(value) is None:
            return [("is_a", value, False)]  # "promoted to major", "to senior engineer": a rank
        if value.dep_ == "acomp" or value.pos_ == "ADJ":
            return self._copula_adjective(value, subj_tok)
        if value.pos_ == "VERB" and value.tag_ == "VBN":
            return [("has_property", value, False)]
        return self._copula_noun(value)

    def _copula_noun(self, attr: Token) -> list[tuple[str, Token, bool]]:
        if attr.lemma_.lower() in lx.FAN_NOUNS:  # "I'm a big fan of football"
            pobj = next((_pobj(p) for p in attr.children if p.dep_ == "prep" and p.lower_ == "of"), None)
            return [("likes", pobj, False)] if pobj is not None else []
        if attr.pos_ == "PROPN" or attr.pos_ == "PRON":
            return [("is", attr, False)]
        has_article = any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in attr.children)
        out = [("is_a" if has_article or attr.pos_ == "NOUN" else "has_property", attr, False)]
        # "I'm an analyst at Wayne Enterprises": a role at a named organisation is a job there too.
        employer = _pobj(next((c for c in attr.children if c.dep_ == "prep" and c.lower_ == "at"), None))
        if attr.pos_ == "NOUN" and attr.lemma_.lower() not in lx.NOT_JOB_ROLES and employer is not None and (
                employer.pos_ == "PROPN"):
            out.append(("works_at", employer, False))
        return out

    def _copula_adjective(self, acomp: Token, subj_tok: Token) -> list[tuple[str, Token, bool]]:
        word = acomp.lower_
        if word in lx.MISTAKEN_WORDS and subj_tok.pos_ in ("PROPN", "PRON"):
            return []  # "Bob is wrong, ...": a correction cue (``revision``), not a fact about Bob
        prep = next((c for c in acomp.children if c.dep_ == "prep" and _pobj(c) is not None), None)
        if prep is not None:
            key = f"{word} {prep.lower_}"
            pobj = _pobj(prep)
            assert pobj is not None
            return [(lx.COPULA_PHRASES.get(key, f"{acomp.lemma_.lower()}_{prep.lower_}"), pobj, False)]
        if (to := _misread_to(acomp)) is not None and f"{word} to" in lx.COPULA_PHRASES:
            return [(lx.COPULA_PHRASES[f"{word} to"], to, False)]  # "allergic to shellfish" parsed as a verb
        if word in lx.BETTER_WORDS and subj_tok.lower_ not in _FIRST_PERSON and subj_tok.pos_ != "PROPN":
            # "afternoon is better": the speaker prefers it; "evenings are worse": does not.
            return [("prefers!" + ("neg" if word in lx.WORSE_WORDS else ""), subj_tok, False)]
        if changes.status_word(acomp) is not None and changes.is_thing(subj_tok):
            return [(lx.STATUS_PREDICATE, acomp, False)]  # "the cafe is open": its status
        return [("has_property", acomp, False)]

    def _attribute(
        self, subj_tok: Token, values: list[Token], negated: bool, clause: _Clause, when: str | None
    ) -> None:
        """ "my manager is Tom" -> (speaker, has_manager, Tom);
        "Tom's birthday is on July 4th" -> (Tom, has_birthday, July 4th)."""
        owner = self._name(_possessor(subj_tok))  # type: ignore[arg-type]
        if owner is None:
            return
        predicate, clause = _attribute_slot(subj_tok, clause)
        for i, value in enumerate(values):
            if value.ent_type_ in _TIME_LABELS:
                when = None  # "Tom's birthday is on July 4th": the date is the value, not when it holds
            own_neg = i > 0 and any(g.dep_ == "neg" for g in value.children)
            for item, item_negated in self._objects(value, keep_dates=True):
                self._add(owner, predicate, item, negated != (item_negated or own_neg), clause, when)

    def _role(self, holder: Token, role: Token, negated: bool, clause: _Clause, when: str | None) -> None:
        """ "Marta is my manager", "Frank took over as my manager" -> (speaker, has_manager, Marta / Frank)."""
        owner = self._name(_possessor(role))  # type: ignore[arg-type]
        if owner is None:
            return
        predicate, clause = _attribute_slot(role, clause)
        for item, item_negated in self._objects(holder):
            self._add(owner, predicate, item, negated != item_negated, clause, when)

    def _rename(self, verb: Token, negated: bool, clause: _Clause) -> None:
        """ "we renamed the Monday meeting to Kickoff", "the standup was renamed Huddle":
        (the thing renamed, has_name, the new name), present: the name it has now."""
        passive = any(c.dep_ == "auxpass" for c in verb.children)
        target = clause.subjects[0] if passive and clause.subjects else next(
            (c for c in verb.children if c.dep_ == "dobj"), None)
        if target is None:
            return
        preps = [c for c in [*verb.children, *target.children] if c.dep_ == "prep" and c.lower_ in ("to", "as")]
        values = [p for c in preps if (p := _pobj(c)) is not None]
        values += [c for c in [*verb.children, *target.children] if c.dep_ in ("oprd", "appos", "attr")]
        name = self._name(target)
        if name is None or not values:
            return
        now = _Clause(clause.subjects, "present", clause.hedge)
        for item, item_negated in self._objects(values[0]):
            self._add(name, "has_name", item, negated != item_negated, now, None)

    # -- names -----------------------------------------------------------------

    def _subject(self, tok: Token) -> str | None:
        appos = next((c for c in tok.children if c.dep_ == "appos" and c.pos_ == "PROPN"), self._naming.get(tok.i))
        if appos is not None and tok.pos_ == "NOUN" and (owner := _possessor(tok)) is not None:
            # "my brother Sam lives in Denver": the subject is Sam, and Sam is the speaker's brother.
            owner_name = self._name(owner)
            named = _span_text([t for t in appos.subtree if t.dep_ in ("compound", "flat") or t == appos])
            if owner_name is not None:
                self._add(owner_name, f"has_{tok.lemma_.lower()}", named, False, _Clause(), None)
            return named
        name = self._name(tok)
        if name is None or tok.pos_ != "NOUN":
            return name
        # "the cafe on Main Street closed": the subject keeps its own phrases (not a date).
        phrases = [t for c in tok.children if c.dep_ == "prep" and c.i > tok.i and c.lower_ in _SUBJECT_PHRASES
                   and (v := _pobj(c)) is not None and v.pos_ != "PRON" and not self._dated(c) for t in _phrase(c)]
        rendered = self._render(phrases) if phrases else None
        return f"{name} {rendered}" if rendered else name

    def _name(self, tok: Token) -> str | None:
        """A noun phrase as a concept name, or None for a pronoun that names no one."""
        low = tok.lower_
        if tok.i in self._bound:
            return self._name(self._bound[tok.i])
        if tok.pos_ == "PRON" or low in _FIRST_PERSON:
            if low in _FIRST_PERSON:
                return self.speaker
            if low in _PERSON_PRONOUNS and self.named is not None:
                return self.named
            if low in _PERSON_PRONOUNS and self.antecedent is not None and self.antecedent.i < tok.i:
                return self._name(self.antecedent)
            return None
        kept: list[Token] = []
        words: list[str] = []
        owned = {t.i for p in _name_tokens(tok) if p.dep_ == "poss" and p != tok for t in p.subtree if t != p}
        for t in _name_tokens(tok):
            if t.i in owned and t.dep_ != "case":
                continue  # named with its possessor: "my car's MOT" is "user's car's MOT", not "user's user's car's"
            if t.dep_ == "poss" and t != tok:
                owner = self._name(t)
                if owner is None:
                    return None
                words.append(f"{owner}'s")
            elif t.dep_ == "case" or t.pos_ == "PUNCT" and t.tag_ != "HYPH":
                continue
            else:
                words.append(t.text)
            kept.append(t)
        if words and tok.i == tok.sent.start and tok.tag_ in ("NN", "NNS") and words[0] == tok.text:
            words[0] = words[0].lower()  # sentence-initial capital of a common noun: "Evenings are worse"
        elif words and words[0].lower() in lx.COMMON_CAPITALISED and tok.sent.start == _name_tokens(tok)[0].i:
            words[0] = words[0].lower()
        return _join(kept, words) or None

    def _objects(
        self, head: Token, *, keep_dates: bool = False, qualifiers: list[Token] | None = None
    ) -> list[tuple[str, bool]]:
        """The object and its conjuncts (a conjunct with "not" is negated); unresolved pronouns left out.
        ``qualifiers``: the clause's phrases that qualify the object ("I hate meetings *on Fridays*")."""
        out: list[tuple[str, bool]] = []
        for tok in _with_conjuncts(head):
            negated = tok != head and any(c.dep_ == "neg" for c in tok.children)
            negated = negated or any(c.dep_ == "det" and c.lower_ == "no" for c in tok.children)
            name: str | None
            if tok.pos_ == "VERB" and tok.tag_ == "VBN":  # a passive participle is a property: "married"
                name = tok.lower_
            elif tok.pos_ == "VERB":  # "I love to paint", "I enjoy hiking in the hills"
                name = self._verb_object(tok)
            else:
                extra = [t for q in qualifiers or [] for t in _phrase(q)] if tok == head else []
                name = self._name(tok) if tok.pos_ == "PRON" else self._object_name(tok, keep_dates, extra)
            if name:
                out.append((name, negated))
        return out

    def _object_name(self, tok: Token, keep_dates: bool, extra: list[Token] | None = None) -> str | None:
        """The object's name: its name tokens, its own qualifying phrases ("meetings on Fridays", "capital
        of France") and ``extra`` tokens of the clause's."""
        own = sorted(_object_tokens(tok, keep_dates, self._dated), key=lambda t: t.i)
        # The clause's qualifiers follow the object, wherever they were said: "In the summer we live in
        # Menorca" -> "Menorca in summer".
        ahead = [t for t in sorted(extra or [], key=lambda t: t.i) if own and t.i < own[0].i and t not in own]
        behind = sorted({*own, *(extra or [])} - set(ahead), key=lambda t: t.i)
        return self._render(behind + ahead, {t.i: t.lower_ for t in ahead if t.pos_ == "ADP"})

    def _verb_object(self, verb: Token) -> str | None:
        """An activity as an object: "waking up early for meetings", "hiking in the hills", "to paint"."""
        tokens = [verb, *(c for c in verb.children if c.dep_ == "prt" or _is_manner(c))]
        obj = next((c for c in verb.children if c.dep_ in ("dobj", "attr") and c.pos_ != "PRON"), None)
        if obj is not None:
            tokens += _object_tokens(obj, False, self._dated)
        tokens += [t for q in self._qualifiers(verb, None, lx.ACTIVITY_QUALIFIERS) for t in _phrase(q)]
        head = verb.lower_ if verb.tag_ == "VBG" else verb.lemma_.lower()
        if verb.text[:1].isupper() and verb.i != verb.sent.start:
            head = verb.text  # capitalised mid-sentence: a name the tagger read as a verb ("I use Spotify")
        return self._render(sorted(set(tokens), key=lambda t: t.i), {verb.i: head})

    def _render(self, tokens: list[Token], words: dict[int, str] | None = None) -> str | None:
        """Tokens as a name: possessive pronouns as their owner ("my" -> "<speaker>'s"), hyphens kept."""
        kept: list[Token] = []
        out: list[str] = []
        for t in tokens:
            if t.dep_ == "poss" and t.pos_ == "PRON":
                owner = self._name(t)
                if owner is None:
                    continue  # "his tech" with no one named: the tech, not nothing
                kept.append(t)
                out.append(f"{owner}'s")
            else:
                kept.append(t)
                out.append((words or {}).get(t.i, t.text))
        return _join(kept, out) or None

    def _dated(self, prep: Token) -> bool:
        """ "in 2019", "on Monday", "last week": a phrase naming a date (``valid_at``), unlike "on Fridays"."""
        value = _pobj(prep)
        if value is not None and _recurring(value):  # "on Sundays", "in the evenings": no day
            return False
        return value is not None and value.ent_type_ in _TIME_LABELS and (
            resolve(" ".join(t.text for t in value.subtree), self.today, past=False) is not None
        )

    def _qualifiers(
        self, verb: Token, complement: Token | None, prepositions: frozenset[str] = lx.QUALIFIER_PREPOSITIONS
    ) -> list[Token]:
        """The clause's phrases of time and place (of an activity: purpose too) that qualify its object: "I
        hate meetings *on Fridays*", "waking up early *for meetings*"; never a date (``valid_at``)."""
        return [
            c for c in verb.children
            if c.dep_ == "prep" and c.lower_ in prepositions and c != complement
            and (value := _pobj(c)) is not None and value.pos_ != "PRON" and not self._dated(c)
        ]

    def _recurring_times(self, verb: Token, complement: Token) -> list[Token]:
        """The clause's phrases of a recurring time: "on weekends", "in (the) summer", "during the school year";
        not ``complement``, the phrase the object is in ("I swim in the mornings")."""
        return [q for q in self._qualifiers(verb, complement)
                if q.lower_ == "during" or (value := _pobj(q)) is not None and (
                    _recurring(value) or value.lower_ in ("summer", "winter", "spring", "autumn"))]

    # -- time and output -------------------------------------------------------

    def _when(self, verb: Token, tense: Tense | None) -> str | None:
        for ent in verb.sent.ents:
            if ent.label_ in _TIME_LABELS and _governs(verb, ent.root):
                day = resolve(ent.text, self.today, past=tense == "past")
                if day is not None:  # "turned 34 last week": 34 is no date, last week is
                    return day
        for c in verb.children:
            if c.lower_ in ("yesterday", "tomorrow", "today", "tonight"):
                return resolve(c.lower_, self.today, past=tense == "past")
        return None

    def _add(self, subject: str, predicate: str, obj: str, negated: bool, clause: _Clause, when: str | None) -> None:
        if predicate.startswith("prefers!"):  # "afternoon is better": the speaker prefers the subject
            subject, obj, negated = self.speaker, subject, negated != predicate.endswith("neg")
            predicate = "prefers"
        predicate = default_vocabulary().written_as(predicate)
        if predicate == lx.STATUS_PREDICATE:
            obj = lx.STATUS_WORDS.get(obj.lower(), obj)  # "reopened" is open, "over" ended
        tense: Tense = clause.tense or "present"
        confidence = clause.hedge if clause.hedge is not None else NO_HEDGE
        if tense == "future":
            confidence *= lx.PLAN_CONFIDENCE_FACTOR
        elif tense == "past" and predicate not in lx.TIMELESS_PREDICATES:
            confidence *= lx.PAST_CONFIDENCE_FACTOR
        triple = Triple(
            subject=subject,
            predicate=predicate,
            object=obj,
            negated=negated,
            confidence=round(confidence, 3),
            tense=tense,
            valid_at=when,
            revision=clause.revision,
        )
        if triple not in self.out and subject.lower() != obj.lower():
            self.out.append(triple)
            self._found.append((self._at, triple))


def is_question(sent: Span) -> bool:
    """Ends with "?", or opens with a question word or an inverted auxiliary ("Do I like coffee")."""
    words = [t for t in sent if not t.is_punct and t.lower_ not in lx.LEADING_WORDS]
    end = sent.text.rstrip()
    if end.endswith("?"):
        return True
    # "What can I say, I love turtles." is a statement: a full stop outweighs the opening word.
    return bool(words) and words[0].lower_ in lx.QUESTION_WORDS and not end.endswith((".", "!"))


# -- token helpers ---------------------------------------------------------------


def _with_conjuncts(tok: Token) -> list[Token]:
    out = [tok]
    for c in tok.children:
        if c.dep_ == "conj" and c.pos_ == tok.pos_ or c.dep_ == "conj" and c.pos_ in ("NOUN", "PROPN", "ADJ", "PRON"):
            out.extend(_with_conjuncts(c))
    return out


def _name_tokens(tok: Token) -> list[Token]:
    """The noun and its compounds, adjectives, numbers and possessor (never articles or adverbs)."""
    keep = {tok}
    for c in tok.children:
        named = c.dep_ in ("compound", "amod", "nummod", "poss", "case", "nmod")
        if (named or c.dep_ == "quantmod" and c.pos_ == "SYM") and c.i < tok.i and c.pos_ != "ADV":  # "$12"
            keep.update(
                t for t in c.subtree
                # an aux inside a noun is a misread "to" ("switched to oat milk")
                if (t.dep_ not in ("det", "advmod", "cc", "punct", "neg", "aux") or t.tag_ == "HYPH"
                    or _hyphenated(t)) and t.pos_ != "ADV"
            )
    keep.update(_glued(tok))
    if _kind(tok) in ("PROPN", "NOUN") and tok.ent_type_ not in _TIME_LABELS:
        # a model's or a code's number after its name: "Pixel 7", "KQ 101", "ticket 4821", "gate 7"
        keep.update(c for c in tok.children if c.dep_ == "nummod" and c.i == tok.i + 1)
    if tok.pos_ == "PROPN" and tok.ent_type_ not in _TIME_LABELS:
        # "Tomorrow Alice works": the parser may make "Tomorrow" a compound of a name ("morning meetings" stay)
        keep = {t for t in keep if t == tok or (t.ent_type_ not in _TIME_LABELS and t.lower_ not in lx.TIME_ADVERBS)}
    return sorted(keep, key=lambda t: t.i)


def _hyphenated(tok: Token) -> bool:
    """Whether a word sits between two hyphens inside one word ("the "a" of "five-a-side")."""
    doc = tok.doc
    return 0 < tok.i < len(doc) - 1 and doc[tok.i - 1].text == "-" and doc[tok.i + 1].text == "-" \
        and not doc[tok.i - 1].whitespace_ and not tok.whitespace_


def _glued(tok: Token) -> list[Token]:
    """What is written onto a number with no space, wherever the small parser hangs it: "3pm", "555-1234"."""
    out: list[Token] = []
    at = tok
    while at.i + 1 < len(tok.doc) and not at.whitespace_ and changes.is_number(tok):
        after = tok.doc[at.i + 1]
        if not (after.lower_ in ("am", "pm") or after.text in ("-", "/", ".") or changes.is_number(after)):
            break
        out.append(after)
        at = after
    while out and not (out[-1].lower_ in ("am", "pm") or changes.is_number(out[-1])):
        out.pop()  # never end on the separator: "555-" of "555-.", a full stop
    return out


def _object_tokens(tok: Token, keep_dates: bool, dated: Callable[[Token], bool]) -> list[Token]:
    """The head, its name tokens and its phrases ("capital of France", "meetings on Fridays", not a date:
    ``dated``), the name it is given ("a cat named Pixel"), and a place's ", France"."""
    keep = set(_name_tokens(tok))
    for c in tok.children:
        if c.dep_ == "prep" and c.i > tok.i and (value := _pobj(c)) is not None and value.pos_ != "PRON" and (
            c.lower_ in lx.COMPLEMENT_PREPOSITIONS or c.lower_ in lx.QUALIFIER_PREPOSITIONS and not dated(c)
        ):
            keep.update(_phrase(c))
        elif c.dep_ == "acl" and c.tag_ == "VBN" and (given := _given_name(c)):
            keep.update([c, *given])  # "a cat named Pixel"
        elif c.dep_ == "appos" and (tok.ent_type_ == "GPE" and c.ent_type_ == "GPE"
                                    or tok.pos_ == "NOUN" and _kind(c) == "PROPN" and not c.n_rights):
            # a place's ", France"; a thing's name after a comma ("a cat, Mochi")
            keep.update([c, *(t for t in tok.doc[tok.i + 1 : c.i] if t.is_punct)])
        elif keep_dates and c.dep_ in ("nummod", "npadvmod", "compound") and c.ent_type_ in _TIME_LABELS:
            keep.update(c.subtree)
    return sorted(keep, key=lambda t: t.i)


def _kind(tok: Token) -> str:
    """A word's part of speech, a capitalised word inside a sentence being a name whatever the tagger
    read ("it's Bumble" tagged an adjective)."""
    return "PROPN" if tok.text[:1].isupper() and tok.i != tok.sent.start else tok.pos_


def _given_name(participle: Token) -> list[Token]:
    """The name a participle gives its noun ("a cat named Pixel", "a parrot called Kiwi"): its predicate
    object, or the proper noun right after it where the parser hung that on the verb."""
    named = [t for o in participle.children if o.dep_ == "oprd" and _kind(o) == "PROPN" for t in o.subtree]
    if named or participle.n_rights:
        return named
    after = participle.doc[participle.i + 1:participle.sent.end]
    return list(itertools.takewhile(lambda t: _kind(t) == "PROPN", after))


def _misread_to(adjective: Token) -> Token | None:
    """The noun after "<adjective> to" that the parser read as an infinitive ("allergic to shellfish": "to"
    an aux of "shellfish", a verb): the object it is, when nothing follows it as a verb's would."""
    for c in adjective.children:
        if c.dep_ == "xcomp" and any(a.dep_ == "aux" and a.lower_ == "to" for a in c.children) \
                and not any(d.dep_ in ("dobj", "prep", "prt", "xcomp", "ccomp") for d in c.children):
            return c
    return None


def _recurring(tok: Token) -> bool:
    """ "Sundays", "weekends", "evenings": a time word in the plural, a time that comes back."""
    word = tok.lower_
    return word.endswith("s") and word[:-1] in lx.TIME_WORDS


def _phrase(prep: Token) -> list[Token]:
    """A prepositional phrase without its clauses, articles and punctuation (a hyphen stays)."""
    clauses = {t.i for r in prep.subtree if r.dep_ in ("relcl", "acl") for t in r.subtree}
    return [
        t for t in prep.subtree
        if t.i not in clauses and (t.dep_ != "det" or _hyphenated(t)) and (t.dep_ != "punct" or t.tag_ == "HYPH")
        and t.pos_ != "ADV"
    ]


def _is_manner(tok: Token) -> bool:
    """ "early", "late", "quickly": an adverb qualifying an activity (not a time like "recently")."""
    low = tok.lower_
    return tok.dep_ == "advmod" and tok.pos_ == "ADV" and low not in lx.TIME_ADVERBS | lx.FILLER_ADVERBS | {
        "not", "never", "so", "too", "very", "also", "just", "even", "really"}


def _join(tokens: list[Token], words: list[str]) -> str:
    out = ""
    for i, (t, w) in enumerate(zip(tokens, words, strict=True)):
        gap = "" if i == 0 else (" " if tokens[i - 1].whitespace_ or tokens[i - 1].i + 1 != t.i else "")
        out += gap + w
    return out.strip(" ,.")


def _span_text(tokens: list[Token]) -> str:
    return " ".join(t.text for t in sorted(tokens, key=lambda t: t.i))


def _quantity_head(tok: Token) -> Token:
    """ "lots of techniques", "a bunch of photos": the techniques, the photos."""
    if tok.lemma_.lower() in lx.QUANTITY_NOUNS:
        of = next((c for c in tok.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        if (pobj := _pobj(of)) is not None:
            return pobj
    return tok


def _is_attribute(tok: Token, values: list[Token]) -> bool:
    """ "my manager is Tom", "Tom's birthday is ...", "my favourite colour is ...", "our landlord is Mr.
    Patel": a possessed noun whose value names it (any noun when the value is a name); not an amount with
    a unit ("my rent is 1200 euros" is the rent's value) nor a description ("my wife is a doctor")."""
    if _possessor(tok) is None or tok.pos_ not in ("NOUN", "PROPN") or any(c.dep_ == "conj" for c in tok.children):
        return False
    if any(c.lower_ in lx.FAVOURITE_WORDS for c in tok.children):
        return True
    if any(changes.is_quantity(v) and not changes.is_bare_number(v) for v in values):
        return False
    lemma = tok.lemma_.lower()
    if lemma in lx.ATTRIBUTE_NOUNS and lemma not in lx.RELATION_NOUNS:
        return True
    # "is Tom", or "changed to Tom" (a change's value); "is in Berlin" says where, not who.
    return any(v.pos_ == "PROPN" and (v.dep_ in ("attr", "oprd") or v.head.lower_ in ("to", "as")) for v in values)


def _copula_values(verb: Token) -> list[Token]:
    """What a copula says its subject is: "is Tom", "is on July 4th" (the object of a first preposition)."""
    values = [c for c in verb.children if c.dep_ in ("attr", "acomp", "oprd", "xcomp", "npadvmod", "dobj")
              and not (c.dep_ == "npadvmod" and _is_time(c))]  # "... these days" says when, not what
    if not values:
        prep = next((c for c in verb.children if c.dep_ == "prep"), None)
        values = [v] if (v := _pobj(prep)) is not None else []
    return values


def _inverted_role(subj_tok: Token, values: list[Token]) -> Token | None:
    """The role of "Marta is my manager", "Dr. Okafor is my doctor now": a possessed noun as the
    complement of a named subject."""
    role = next((v for v in values if v.dep_ in ("attr", "oprd", "dobj", "ccomp", "xcomp", "pobj")
                 and v.pos_ == "NOUN" and _possessor(v) is not None), None)
    if role is None or subj_tok.pos_ not in ("PROPN", "PRON") or subj_tok.lower_ in _FIRST_PERSON:
        return None
    return role


def _attribute_slot(noun: Token, clause: _Clause) -> tuple[str, _Clause]:
    """The predicate an attribute noun names, ``has_<modifiers>_<noun>``, and its clause: "new"/"current"
    on the noun say the value changed (the same slot, a change), "former"/"old" that it was."""
    words = [c.lower_ for c in noun.children if c.dep_ in ("amod", "compound") and c.i < noun.i]
    if any(w in lx.CHANGE_MODIFIERS for w in words) and clause.tense != "future":
        clause = replace(clause, tense="present", revision=clause.revision or "change")
    elif any(w in lx.FORMER_MODIFIERS for w in words):
        clause = replace(clause, tense="past")
    kept = [w for w in words if w not in lx.CHANGE_MODIFIERS | lx.FORMER_MODIFIERS]
    predicate = "has_" + "_".join([*kept, noun.lemma_.lower()])
    return default_vocabulary().written_as(predicate), clause


def _copula_preposition(subj_tok: Token, preposition: str, place: Token) -> str:
    """ "I'm from Canada" comes_from, "the office is in Berlin" located_in; a person "at" a name that is
    no place works there ("I'm at Globex")."""
    if preposition == "at" and (subj_tok.lower_ in _FIRST_PERSON or changes.is_person(subj_tok)) and (
        place.pos_ == "PROPN" and place.ent_type_ not in lx.NOT_EMPLOYER_LABELS
    ):
        return "works_at"
    return lx.COPULA_PREPOSITIONS.get(preposition, f"is_{preposition}")


def _home_predicate(subj_tok: Token, place: Token) -> str:
    """Where a move puts its subject: a thing is located there; a person lives there, works there
    (an organisation) or is placed there (an office)."""
    if not (subj_tok.lower_ in _FIRST_PERSON or changes.is_person(subj_tok)):
        return "located_in"
    if place.ent_type_ == "ORG" and _organisation_by_form(place):
        return "works_at"
    return "located_in" if place.lemma_.lower() in lx.WORKPLACE_NOUNS else "lives_in"


def _organisation_by_form(name: Token) -> bool:
    """A name whose form only an organisation has: an acronym ("KPMG") or a corporate designator ("Acme
    Corp"). After a verb of moving the small model labels many cities ORG ("relocated to Bristol"), and a
    person moves home far more often than to an employer, so the label alone does not make it a job."""
    span = next((e for e in name.doc.ents if e.start <= name.i < e.end), None)
    words = [t.text for t in span] if span is not None else [name.text]
    return any(len(w) >= 2 and w.isalpha() and w.isupper() for w in words) or any(
        w.casefold().rstrip(".") in lx.ORGANISATION_DESIGNATORS for w in words)


def _is_habit(verb: Token, subj_tok: Token) -> bool:
    """ "I smoke", "Tom doesn't drink", "she runs every morning": a person's activity in the present with no
    object or complement at all (``has_habit``, the object "smoking"); verbs that say no activity when
    used alone ("I agree", "I see", "I know") are left out."""
    person = subj_tok.lower_ in _FIRST_PERSON or changes.is_person(subj_tok)
    bare = not any(c.dep_ not in ("nsubj", "aux", "neg", "advmod", "npadvmod", "punct", "prep") for c in verb.children)
    own = subj_tok.head == verb  # not a subject shared with another verb ("it helps me reset and recharge")
    # A present verb, or "do" + verb ("I don't smoke"); a bare verb after "make"/"help" is no habit.
    finite = verb.tag_ in ("VBP", "VBZ") or verb.tag_ == "VB" and any(c.lemma_ == "do" for c in verb.children)
    return (
        person and bare and own and finite and verb.lemma_.lower() not in lx.NOT_HABITS
        and not _modal(verb) and not any(c.dep_ == "prep" and not _is_time(c) for c in verb.children)
    )


def _modal(verb: Token) -> bool:
    """ "can become", "might quit", "should move": a possibility or advice, not a fact that changed."""
    return any(c.dep_ == "aux" and c.tag_ == "MD" and c.lower_ not in ("will", "'ll", "wo", "shall")
               for c in verb.children)


def _is_event(verb: Token, clause: _Clause) -> bool:
    """A verb of status reports a change when it happened ("closed down", "was cancelled", "has ended") or
    is going on ("the beta is running"); "the store opens at 9" is a timetable, "is closed" a state."""
    auxes = {c.lower_ for c in verb.children if c.dep_ in ("aux", "auxpass")}
    return verb.tag_ in ("VBD", "VBG") or clause.tense == "past" or (
        verb.tag_ == "VBN" and bool(auxes & {"was", "were", "has", "have", "had", "been", "got", "gets", "'s"}))


def _is_state(verb: Token) -> bool:
    """ "the bridge is closed", "the project is cancelled": a status participle after a present copula."""
    return verb.tag_ == "VBN" and any(c.dep_ == "auxpass" and c.lower_ in ("is", "are", "am") for c in verb.children)


def _not_alternatives(verb: Token, obj: Token) -> list[Token]:
    """ "I like blue, not green": a complement beside the object with its own "not"."""
    return [
        c for c in verb.children
        if c != obj and c.i > obj.i and c.dep_ in ("ccomp", "dep", "appos", "npadvmod", "conj", "advcl", "attr")
        and c.pos_ in ("NOUN", "PROPN", "ADJ") and any(g.dep_ == "neg" for g in c.children)
    ]


def _possessor(tok: Token) -> Token | None:
    return next((c for c in tok.children if c.dep_ == "poss"), None)


def _is_time(tok: Token) -> bool:
    """A time phrase hanging off the verb: "last year", "in 2019", "yesterday", "every 90 days"."""
    if tok.dep_ == "prep":
        pobj = _pobj(tok)
        return pobj is not None and (pobj.ent_type_ in _TIME_LABELS or pobj.lower_ in lx.TIME_ADVERBS)
    return tok.dep_ in ("npadvmod", "advmod", "tmod") and (
        tok.ent_type_ in _TIME_LABELS or tok.lower_ in lx.TIME_ADVERBS
    )


def _as_job_role(verb: Token) -> Token | None:
    """The role of "joined Acme as a designer" ("as" a preposition, or the mark of a clause the small parser
    makes of it: "as their finance lead"), unless it is no job ("as a member", "as a volunteer")."""
    for c in verb.children:
        role = _pobj(c) if c.dep_ == "prep" and c.lower_ == "as" else c if c.dep_ == "advcl" and any(
            m.dep_ == "mark" and m.lower_ == "as" for m in c.children) else None
        if role is not None and role.pos_ == "NOUN" and role.lemma_.lower() not in lx.NOT_JOB_ROLES:
            return role
    return None


def _stative(participle: Token) -> bool:
    """Whether a passive participle says a present state: its only auxiliary a present "be" ("I'm
    subscribed", "the MOT is booked"; not "was booked", "have been reassigned", "will be moved")."""
    aux = [c for c in participle.children if c.dep_ in ("aux", "auxpass")]
    return len(aux) == 1 and aux[0].tag_ in ("VBZ", "VBP")


def _time_value(verb: Token, prepositions: frozenset[str]) -> Token | None:
    """The day or time of "on Friday", "to Thursday", "at 3pm" hanging off ``verb``, or off the verb it is set to
    ("scheduled to ship on Tuesday"), or None."""
    for c in verb.children:
        if c.dep_ == "prep" and c.lower_ in prepositions and (pobj := _pobj(c)) is not None:
            if pobj.ent_type_ in _TIME_LABELS or pobj.lower_ in lx.WEEKDAYS:
                return pobj
        if c.dep_ == "xcomp" and c.pos_ == "VERB" and (day := _time_value(c, prepositions | lx.TIME_PREPOSITIONS)):
            return day
    return None


def _governs(verb: Token, tok: Token) -> bool:
    """``tok`` hangs off ``verb`` directly or through one preposition, not through another clause."""
    head = tok.head
    if head == verb and tok != verb:
        return True
    return head.dep_ == "prep" and head.head == verb


def _mark(clause: Token) -> str:
    return next((c.lower_ for c in clause.children if c.dep_ == "mark"), "")


def _negated(verb: Token) -> bool:
    """``neg`` ("not", "n't", "never"), "no longer", "not anymore"; "can't stand" is read by the phrase table."""
    negated = False
    for c in verb.children:
        if c.dep_ == "neg" or c.lower_ == "never":
            negated = True
        elif c.lower_ == "longer" and any(g.lower_ == "no" for g in c.children):
            negated = True
    return negated


def _tense(verb: Token) -> Tense | None:
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
    words = {a.lower_ for a in auxes}
    if words & {"will", "'ll", "shall", "wo", "gonna"}:
        return "future"
    if any(a.tag_ == "VBD" for a in auxes) or (verb.tag_ == "VBD" and not words):
        if "used" in words:
            return "past"
        return "past"
    if words & {"have", "has", "'ve"} and verb.tag_ == "VBN":
        return "present" if verb.lemma_.lower() in lx.STATIVE_VERBS else "past"
    return None


def _local_text(verb: Token) -> str:
    """The clause's own words: the verb, its auxiliaries and adverbs (hedges live there)."""
    words = [verb] + [
        c
        for c in verb.children
        if c.dep_ in ("aux", "advmod", "neg", "nsubj", "prep", "npadvmod", "acomp")
        and not any(g.dep_ in _CLAUSE_DEPS for g in c.children)
    ]
    return " ".join(t.text for t in sorted(set(words), key=lambda t: t.i))


def _min(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return min(values) if values else None


def _phrase_verb(verb: Token) -> str:
    """The modal + verb + particle phrase the phrase table keys on: "would like", "can stand", "would rather"."""
    parts = [c.lower_ for c in verb.children if c.dep_ == "aux" and c.lower_ in ("would", "'d", "can", "ca", "could")]
    parts = ["would" if p == "'d" else "can" if p == "ca" else p for p in parts]
    rather = [c.lower_ for c in verb.children if c.lower_ == "rather"]
    return " ".join([*parts[:1], *rather, verb.lemma_.lower()])


def _passive_agent(verb: Token) -> Token | None:
    """Who does what a passive verb says ("managed by Tomasz"): the object of its "by"; None if it has none."""
    if verb.pos_ != "VERB" or not any(c.dep_ == "auxpass" for c in verb.children):
        return None
    return next((_pobj(c) for c in verb.children if c.dep_ == "agent"), None)


def _verb_predicate(base: str, preposition: str) -> str:
    """The verb table's predicate for "verb preposition", else the verb's own: "go to" -> goes_to."""
    if preposition and f"{base} {preposition}" in lx.VERBS:
        return lx.VERBS[f"{base} {preposition}"]
    if preposition:
        return f"{lx.VERBS.get(base, _third(base))}_{preposition}"
    return lx.VERBS.get(base, _third(base))


def _third(base: str) -> str:
    head, _, particle = base.partition(" ")
    return "_".join(filter(None, [third_person(head), particle]))


def _one_named_person(doc: Doc) -> str | None:
    """The one person the observation names (he/she refer to them), or None when there are none or several."""
    names = {e.text for e in doc.ents if e.label_ == "PERSON"}
    names |= {t.text for t in doc if t.dep_ in _SUBJECT_DEPS and t.pos_ == "PROPN" and not t.ent_type_}
    return names.pop() if len(names) == 1 else None


def _one_person_spoken_of(doc: Doc) -> Token | None:
    """The one person spoken of without a name of the parser's (someone's by a word for a person: "my sister"; a
    capitalised bare noun opening a sentence as its subject, a name the parser took for a common noun: "Beatriz
    left"; a subject's name it labelled an organisation), or None when there are none or several."""
    found = {t.lower_: t for t in doc if t.pos_ == "NOUN" and (
        t.lemma_.lower() in lx.PERSON_NOUNS and any(c.dep_ == "poss" for c in t.children)
        or t.dep_ in _SUBJECT_DEPS and t.i == t.sent.start and t.text[:1].isupper() and t.tag_ in ("NN", "NNS")
        and not any(c.dep_ in ("det", "poss", "compound", "amod") for c in t.children))
        # a name the small model labels an organisation ("Marcus quit the restaurant"), as a subject
        or t.pos_ == "PROPN" and t.dep_ in _SUBJECT_DEPS and t.ent_type_ in ("ORG", "PRODUCT", "NORP")}
    return next(iter(found.values())) if len(found) == 1 else None


# The predicates of verbs of ending, leaving or giving up ("gives_up", "quits", "ditches").
_ENDING_PREDICATES = frozenset(_verb_predicate(*f"{verb} ".split(" ")[:2]) for verb in (
    lx.ENDING_VERBS | lx.LEAVE_VERBS | lx.REPLACE_VERBS | lx.STATUS_TRANSITIVE))
