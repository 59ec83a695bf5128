"""A dependency parse -> triples: the offline model's main reader.

Each clause (a verb with its subject) becomes triples:

- subject: the nominal subject with its compounds, adjectives and possessor
  ("my sister" -> "<speaker>'s sister"); first person is the speaker; he/she
  is the one person named in the observation, or the clause is left out;
  "X and Y" gives one triple per subject; "my brother Sam" is Sam (and
  <speaker> has_brother Sam).
- predicate: the verb lemma with its particle or preposition, through the
  verb table (``lexicon.VERBS``: "work at" -> works_at, "move to" ->
  lives_in ...) and the relation vocabulary's aliases (``truth.vocabulary``);
  copulas give is_a (a noun), has_property (an adjective), "<adjective>
  <preposition>" (interested_in) or, with a possessive subject, an
  attribute ("my manager is Tom" -> <speaker> has_manager Tom).
- object: the head of the complement with its compounds, adjectives,
  numbers and "of" phrases; never a relative or subordinate clause; "X and
  Y" gives one triple per object, "not Y" a negated one.
- negation: ``neg`` dependents, "no longer", "never", "no X".
- confidence: the hedge table (``mnemonet.llm.hedges``) over the clause and
  the verbs that govern it; lowered for past facts and plans.
- tense: past (past-tense verbs, "used to"), future ("will", "going to",
  "plan to"), else present; time phrases resolve to ``valid_at``.
- changes said as events give the state they leave: "Tom left Initech and
  joined Hooli" -> (Tom, works_at, Initech, negated), (Tom, works_at, Hooli);
  "we renamed the Monday meeting to Kickoff" -> (Monday meeting, has_name,
  Kickoff); "the retro moved to Thursday" and "the retro is on Friday" ->
  (retro, happens_on, Thursday / Friday), all present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from mnemonet.llm.base import Tense, Triple
from mnemonet.llm.hedges import NO_HEDGE, hedge_confidence
from mnemonet.llm.offline import lexicon as lx
from mnemonet.llm.offline.when import resolve
from mnemonet.llm.offline.words import third_person
from mnemonet.truth.vocabulary import default_vocabulary

if TYPE_CHECKING:  # spaCy itself is imported only when the first parse loads the pipeline (``nlp``)
    from spacy.tokens import Doc, Span, Token

_SUBJECT_DEPS = ("nsubj", "nsubjpass", "csubj")
_CLAUSE_DEPS = ("conj", "ccomp", "advcl", "parataxis", "xcomp", "relcl", "acl")
_KEEP_IN_NAME = ("compound", "amod", "nummod", "poss", "nmod", "quantmod", "case", "npadvmod")
_OBJECT_DEPS = ("dobj", "attr", "oprd", "acomp", "dative")
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})
_FIRST_PERSON = frozenset({"i", "me", "we", "us", "my", "our", "mine", "ours", "myself", "ourselves"})
_TIME_LABELS = ("DATE", "TIME")


@dataclass
class _Clause:
    """What a verb's clause inherits from the verbs above it."""

    subjects: list[Token] = field(default_factory=list)
    tense: Tense | None = None
    hedge: float | None = None


class Mapper:
    """Maps one parsed observation to triples, for one speaker, seen from one day."""

    def __init__(self, doc: Doc, speaker: str, today: date) -> None:
        self.doc = doc
        self.speaker = speaker
        self.today = today
        self.named = _one_named_person(doc)
        self.out: list[Triple] = []
        self._found: list[tuple[int, Triple]] = []
        self._at = 0

    def sentence(self, sent: Span) -> list[Triple]:
        """The triples of one sentence of the document (a question asserts nothing)."""
        self.out = []
        self._found = []
        if not is_question(sent):
            self._clause(sent.root, _Clause())
        # In the order the text says them, whatever the tree's shape ("I hate X, Y is better").
        return [t for _, t in sorted(self._found, key=lambda pair: pair[0])]

    # -- clauses ---------------------------------------------------------------

    def _clause(self, verb: Token, inherited: _Clause) -> None:
        # The small parser sometimes hangs the subject on the auxiliary ("Alice and Bob are married").
        own = [c for c in verb.children if c.dep_ in _SUBJECT_DEPS] or [
            g for c in verb.children if c.dep_ in ("aux", "auxpass") for g in c.children if g.dep_ in _SUBJECT_DEPS
        ]
        if not own and (
            verb.tag_ in ("VBZ", "VBP", "VBD") or verb.tag_ == "NNS" and any(c.dep_ == "dobj" for c in verb.children)
        ):
            # ... or tags a sentence-initial name as a compound of the verb ("In 2019 Jenna works at Acme").
            own = [
                c
                for c in verb.children
                if c.i < verb.i
                and c.dep_ in ("compound", "npadvmod", "dep")
                and c.pos_ in ("PROPN", "PRON")
                and c.ent_type_ not in _TIME_LABELS
            ][-1:]
        subjects = _with_conjuncts(own[0]) if own else inherited.subjects
        tense = _tense(verb) or inherited.tense
        hedge = _min(inherited.hedge, hedge_confidence(_local_text(verb)))
        here = _Clause(subjects, tense, hedge)
        lemma = verb.lemma_.lower()
        children = list(verb.children)
        xcomp = next((c for c in children if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
        if xcomp is not None and self._through(verb, lemma, xcomp, here):
            pass
        elif lemma in lx.REPORTING_VERBS and any(c.dep_ == "ccomp" for c in children):
            pass  # the report itself ("Jenna said ...") is not a fact about Jenna
        elif subjects and verb.dep_ not in ("relcl", "acl", "amod"):
            self._emit(verb, here)
        for child in children:
            for verb_conj in (
                g for g in child.children if g.dep_ == "conj" and g.pos_ == "VERB" and child.dep_ in _OBJECT_DEPS
            ):
                self._clause(verb_conj, _Clause(subjects, None, inherited.hedge))  # "I like cats and hate dogs"
            if child.dep_ == "advcl" and _mark(child) in lx.CONDITIONAL_MARKS:
                continue  # "if it rains I stay home": a condition asserts neither part
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
            self._clause(xcomp, _Clause(here.subjects, "past", here.hedge))
            return True
        if lemma == "go" and verb.tag_ == "VBG" or lemma in lx.PLAN_VERBS:
            self._clause(xcomp, _Clause(here.subjects, "future", here.hedge))
            return True
        if lemma in lx.ASPECT_VERBS and any(c.dep_ in ("dobj", "prep", "attr") for c in xcomp.children):
            # "I just started volunteering at a shelter": the activity, going on now, is the fact.
            self._clause(xcomp, _Clause(here.subjects, "present", here.hedge))
            return True
        return False

    # -- one clause's triples --------------------------------------------------

    def _emit(self, verb: Token, clause: _Clause) -> None:
        self._at = verb.i
        negated = _negated(verb)
        when = self._when(verb, clause.tense)
        lemma = verb.lemma_.lower()
        if lemma in lx.RENAME_VERBS:
            self._rename(verb, negated, clause)
            return
        for subj_tok in clause.subjects:
            if lemma == "be" and _is_attribute(subj_tok):
                self._attribute(subj_tok, verb, negated, clause, when)
                continue
            subject = self._subject(subj_tok)
            if subject is None:
                continue
            for predicate, obj_tok, obj_negated in self._predicates(verb, lemma, subj_tok):
                here = clause
                if lemma in lx.MOVE_VERBS and predicate == "lives_in" and clause.tense == "past":
                    # "I moved from Boston to Seattle": Seattle is home now, Boston was.
                    moved_from = obj_tok.head.lower_ == "from"
                    here = _Clause(clause.subjects, "past" if moved_from else "present", clause.hedge)
                elif predicate in lx.RESULT_PREDICATES and lemma in lx.CHANGE_VERBS and clause.tense == "past":
                    # "Tom joined Hooli", "the retro moved to Thursday": the change is done, its result holds now.
                    here = _Clause(clause.subjects, "present", clause.hedge)
                dated = predicate == lx.WHEN_PREDICATE  # the day is the value, not when the statement holds
                for item, item_negated in self._objects(obj_tok, keep_dates=dated):
                    self._add(subject, predicate, item, negated != (obj_negated or item_negated), here,
                              None if dated else when)

    def _predicates(self, verb: Token, lemma: str, subj_tok: Token) -> list[tuple[str, Token, bool]]:
        """(predicate, object head, negated by the phrase) for each complement of ``verb``."""
        children = [c for c in verb.children if not _is_time(c)]
        out: list[tuple[str, Token, bool]] = []
        if lemma == "be":
            for c in children:
                # "blue, not green": a second complement with its own "not" is negated.
                own_neg = bool(out) and any(g.dep_ == "neg" for g in c.children)
                if c.dep_ == "attr":
                    out.extend((p, o, own_neg) for p, o, _ in self._copula_noun(c))
                elif c.dep_ == "acomp":
                    out.extend((p, o, own_neg) for p, o, _ in self._copula_adjective(c, subj_tok))
                elif c.dep_ == "prep" and (pobj := _pobj(c)) is not None and not out:
                    out.append((lx.COPULA_PREPOSITIONS.get(c.lower_, f"is_{c.lower_}"), pobj, False))
            if not out and subj_tok.pos_ == "NOUN" and (day := _time_value(verb, lx.TIME_PREPOSITIONS)) is not None:
                out.append((lx.WHEN_PREDICATE, day, False))  # "the launch is on Monday": when a thing happens
            return out
        if lemma in lx.RESCHEDULE_VERBS and subj_tok.pos_ == "NOUN":
            day = _time_value(verb, lx.RESCHEDULE_PREPOSITIONS)
            if day is not None:  # "the retro (was) moved to Thursday": it happens then now
                return [(lx.WHEN_PREDICATE, day, False)]
        if lemma in lx.JOIN_VERBS | lx.LEAVE_VERBS:
            employer = next((c for c in children if c.dep_ == "dobj"), None)
            if employer is not None and employer.pos_ == "PROPN" and employer.ent_type_ not in lx.NOT_EMPLOYER_LABELS:
                return [("works_at", employer, lemma in lx.LEAVE_VERBS)]
        if any(c.dep_ == "auxpass" for c in children):
            return self._passive(verb, lemma, children)
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
            if c.dep_ in _OBJECT_DEPS:
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
        return out

    def _passive(self, verb: Token, lemma: str, children: list[Token]) -> list[tuple[str, Token, bool]]:
        """ "I am called Sam" (has_name), "I was born in Lagos" (born_in), "they are married" (has_property)."""
        oprd = next((c for c in children if c.dep_ in ("oprd", "attr", "dobj")), None)
        if lemma in ("call", "name") and oprd is not None:
            return [("has_name", oprd, False)]
        for c in children:
            if c.dep_ == "prep" and (pobj := _pobj(c)) is not None and f"{lemma} {c.lower_}" in lx.VERBS:
                return [(lx.VERBS[f"{lemma} {c.lower_}"], pobj, False)]
        if oprd is None and not any(c.dep_ == "agent" for c in children):
            return [("has_property", verb, False)]
        return []

    def _copula_noun(self, attr: Token) -> list[tuple[str, Token, bool]]:
        if attr.lemma_.lower() in lx.FAN_NOUNS:  # "I'm a big fan of football"
            pobj = next((_pobj(p) for p in attr.children if p.dep_ == "prep" and p.lower_ == "of"), None)
            return [("likes", pobj, False)] if pobj is not None else []
        if attr.pos_ == "PROPN" or attr.pos_ == "PRON":
            return [("is", attr, False)]
        has_article = any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in attr.children)
        return [("is_a" if has_article or attr.pos_ == "NOUN" else "has_property", attr, False)]

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
        if word in lx.BETTER_WORDS and subj_tok.lower_ not in _FIRST_PERSON and subj_tok.pos_ != "PROPN":
            # "afternoon is better": the speaker prefers it; "evenings are worse": does not.
            return [("prefers!" + ("neg" if word in lx.WORSE_WORDS else ""), subj_tok, False)]
        return [("has_property", acomp, False)]

    def _attribute(self, subj_tok: Token, verb: Token, negated: bool, clause: _Clause, when: str | None) -> None:
        """ "my manager is Tom" -> (speaker, has_manager, Tom);
        "Tom's birthday is on July 4th" -> (Tom, has_birthday, July 4th)."""
        owner = self._name(_possessor(subj_tok))  # type: ignore[arg-type]
        if owner is None:
            return
        words = [c.lower_ for c in subj_tok.children if c.dep_ in ("amod", "compound") and c.i < subj_tok.i]
        predicate = "has_" + "_".join([*words, subj_tok.lemma_.lower()])
        predicate = default_vocabulary().written_as(predicate)
        values = [c for c in verb.children if c.dep_ in ("attr", "acomp", "oprd", "xcomp", "npadvmod", "dobj")]
        if not values:
            prep = next((c for c in verb.children if c.dep_ == "prep"), None)
            values = [v] if (v := _pobj(prep)) is not None else []
        for i, value in enumerate(values):
            if value.ent_type_ in _TIME_LABELS:
                when = None  # "Tom's birthday is on July 4th": the date is the value, not when it holds
            own_neg = i > 0 and any(g.dep_ == "neg" for g in value.children)
            for item, item_negated in self._objects(value, keep_dates=True):
                self._add(owner, predicate, item, negated != (item_negated or own_neg), clause, when)

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
        appos = next((c for c in tok.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None)
        if appos is not None and tok.pos_ == "NOUN" and (owner := _possessor(tok)) is not None:
            # "my brother Sam lives in Denver": the subject is Sam, and Sam is the speaker's brother.
            owner_name = self._name(owner)
            name = _span_text([t for t in appos.subtree if t.dep_ in ("compound", "flat") or t == appos])
            if owner_name is not None:
                self._add(owner_name, f"has_{tok.lemma_.lower()}", name, False, _Clause(), None)
            return name
        return self._name(tok)

    def _name(self, tok: Token) -> str | None:
        """A noun phrase as a concept name, or None for a pronoun that names no one."""
        low = tok.lower_
        if tok.pos_ == "PRON" or low in _FIRST_PERSON:
            if low in _FIRST_PERSON:
                return self.speaker
            if low in _PERSON_PRONOUNS and self.named is not None:
                return self.named
            return None
        words: list[str] = []
        for t in _name_tokens(tok):
            if t.dep_ == "poss" and t != tok:
                owner = self._name(t)
                if owner is None:
                    return None
                words.append(f"{owner}'s")
            elif t.dep_ == "case" or t.pos_ == "PUNCT":
                continue
            else:
                words.append(t.text)
        if words and tok.i == tok.sent.start and tok.tag_ in ("NN", "NNS") and words[0] == tok.text:
            words[0] = words[0].lower()  # sentence-initial capital of a common noun: "Evenings are worse"
        elif words and words[0].lower() in lx.COMMON_CAPITALISED and tok.sent.start == _name_tokens(tok)[0].i:
            words[0] = words[0].lower()
        return " ".join(words) or None

    def _objects(self, head: Token, *, keep_dates: bool = False) -> list[tuple[str, bool]]:
        """The object and its conjuncts (a conjunct with "not" is negated); unresolved pronouns left out."""
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
                name = self._name(tok) if tok.pos_ == "PRON" else self._object_name(tok, keep_dates)
            if name:
                out.append((name, negated))
        return out

    def _object_name(self, tok: Token, keep_dates: bool) -> str | None:
        kept: list[Token] = []
        words: list[str] = []
        for t in _object_tokens(tok, keep_dates):
            if t.dep_ == "poss" and t.pos_ == "PRON":
                owner = self._name(t)
                if owner is None:
                    continue  # "his tech" with no one named: the tech, not nothing
                kept.append(t)
                words.append(f"{owner}'s")
            else:
                kept.append(t)
                words.append(t.text)
        return _join(kept, words) or None

    def _verb_object(self, verb: Token) -> str | None:
        obj = next((c for c in verb.children if c.dep_ in ("dobj", "attr")), None)
        head = verb.lower_ if verb.tag_ == "VBG" else verb.lemma_.lower()
        if obj is None or obj.pos_ == "PRON":
            return head
        name = self._object_name(obj, False)
        return f"{head} {name}" if name else head

    # -- time and output -------------------------------------------------------

    def _when(self, verb: Token, tense: Tense | None) -> str | None:
        for ent in verb.sent.ents:
            if ent.label_ in _TIME_LABELS and _governs(verb, ent.root):
                return resolve(ent.text, self.today, past=tense == "past")
        for c in verb.children:
            if c.lower_ in ("yesterday", "tomorrow", "today", "tonight"):
                return resolve(c.lower_, self.today, past=tense == "past")
        return None

    def _add(self, subject: str, predicate: str, obj: str, negated: bool, clause: _Clause, when: str | None) -> None:
        if predicate.startswith("prefers!"):  # "afternoon is better": the speaker prefers the subject
            subject, obj, negated = self.speaker, subject, negated != predicate.endswith("neg")
            predicate = "prefers"
        predicate = default_vocabulary().written_as(predicate)
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
        if c.dep_ in ("compound", "amod", "nummod", "poss", "case", "nmod") and c.i < tok.i and c.pos_ != "ADV":
            keep.update(
                t for t in c.subtree if t.dep_ not in ("det", "advmod", "cc", "punct", "neg") and t.pos_ != "ADV"
            )
    if tok.pos_ == "PROPN" and tok.ent_type_ not in _TIME_LABELS:
        # "Tomorrow Alice works": the parser may make "Tomorrow" a compound of a name ("morning meetings" stay)
        keep = {t for t in keep if t == tok or (t.ent_type_ not in _TIME_LABELS and t.lower_ not in lx.TIME_ADVERBS)}
    return sorted(keep, key=lambda t: t.i)


def _object_tokens(tok: Token, keep_dates: bool) -> list[Token]:
    """The head, its name tokens and "of" phrases (and a place's ", France")."""
    keep = set(_name_tokens(tok))
    for c in tok.children:
        if c.dep_ == "prep" and c.lower_ == "of" and c.i > tok.i:
            clauses = {t.i for r in c.subtree if r.dep_ in ("relcl", "acl") for t in r.subtree}
            keep.update(
                t for t in c.subtree if t.i not in clauses and t.dep_ not in ("det", "punct") and t.pos_ != "ADV"
            )
        elif c.dep_ == "appos" and tok.ent_type_ == "GPE" and c.ent_type_ == "GPE":
            keep.update([c, *(t for t in tok.doc[tok.i + 1 : c.i] if t.is_punct)])
        elif keep_dates and c.dep_ in ("nummod", "npadvmod", "compound") and c.ent_type_ in _TIME_LABELS:
            keep.update(c.subtree)
    return sorted(keep, key=lambda t: t.i)


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


def _is_attribute(tok: Token) -> bool:
    """ "my manager", "Tom's birthday", "my favourite colour": a possessed attribute noun."""
    if _possessor(tok) is None or tok.pos_ not in ("NOUN", "PROPN") or any(c.dep_ == "conj" for c in tok.children):
        return False
    if any(c.lower_ in lx.FAVOURITE_WORDS for c in tok.children):
        return True
    lemma = tok.lemma_.lower()
    if lemma in lx.RELATION_NOUNS:  # "my manager is Tom" names him; "my wife is a doctor" describes her
        return any(c.dep_ in ("attr", "oprd") and c.pos_ == "PROPN" for c in tok.head.children)
    return lemma in lx.ATTRIBUTE_NOUNS


def _possessor(tok: Token) -> Token | None:
    return next((c for c in tok.children if c.dep_ == "poss"), None)


def _pobj(prep: Token | None) -> Token | None:
    if prep is None:
        return None
    found = next((c for c in prep.children if c.dep_ in ("pobj", "pcomp")), None)
    if found is None and prep.i + 1 < len(prep.doc):
        # The small parser sometimes hangs a preposition's object off the verb instead ("Person306 works
        # at Company306": "Company306" an advmod of "works", "at" left with no object): a dangling
        # preposition takes the name right after it when both hang off the same word.
        after = prep.doc[prep.i + 1]
        if after.head == prep.head and after.pos_ in ("NOUN", "PROPN", "NUM") and not after.dep_.startswith("nsubj"):
            return after
    return found


def _is_time(tok: Token) -> bool:
    """A time phrase hanging off the verb: "last year", "in 2019", "yesterday", "every 90 days"."""
    if tok.dep_ == "prep":
        pobj = _pobj(tok)
        return pobj is not None and (pobj.ent_type_ in _TIME_LABELS or pobj.lower_ in lx.TIME_ADVERBS)
    return tok.dep_ in ("npadvmod", "advmod", "tmod") and (
        tok.ent_type_ in _TIME_LABELS or tok.lower_ in lx.TIME_ADVERBS
    )


def _time_value(verb: Token, prepositions: frozenset[str]) -> Token | None:
    """The day or time of "on Friday", "to Thursday", "at 3pm" hanging off ``verb``, or None."""
    for c in verb.children:
        if c.dep_ == "prep" and c.lower_ in prepositions and (pobj := _pobj(c)) is not None:
            if pobj.ent_type_ in _TIME_LABELS or pobj.lower_ in lx.WEEKDAYS:
                return pobj
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
