"""Changes said as events, recognised on the parse: what value a clause gives its subject from now on.

A change is written on the slot the plain statement of the new state uses,
so the memory sees that it replaces the earlier fact (``mapping`` writes it
present and ``revision="change"``). Each reader here takes a verb and returns
tokens; the mapper turns them into triples with the rules it uses for the
plain statement:

- ``change_to``: "<X> went up / was cut / was promoted / got pushed (from A) to
  B" is "X is B" (the copula's slot: a quantity is X's value, a day is when X
  happens, a title is what X is). The verbs of scalar change and of
  rescheduling are a small table (``lexicon.SCALAR_VERBS``,
  ``RESCHEDULE_VERBS``); any verb with the particle up/down/forward/back does
  too ("came down to 3").
- ``moved_to``: "<X> moved / relocated / got transferred to P" is "X is in P".
- ``switched_to``: "switched / migrated (from A) to B", "replaced A with B",
  "swapped A for B": the subject uses B and no longer A.
- ``role_as``: "<Y> took over (from Z) as my manager", "they hired Y as our
  CTO": Y holds the possessed role ("my manager" -> <speaker> has_manager Y).
- ``job_at``: "started / took / landed a new job at X", "got hired by X": the
  subject works at X (a job lost or quit: no longer).
- ``acquired``: "adopted a dog", "bought a Tesla": the subject has it now
  (beside what it had: having is many-valued).
- ``status_of_clause``: "the cafe closed down", "the project was cancelled",
  "the beta has ended": the thing's status (``has_status``) from a small table
  of verbs and adjectives of opening, closing, ending and expiring.
- ``ended_activity``: "stopped going to the gym", "quit smoking": the activity,
  which the mapper writes negated.
- ``became``: "became a lecturer", "turned 34": the copula's value;
  ``appointed``: "they made Omar head of sales", "she was named VP": a title.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mnemonet.llm.offline import lexicon as lx

if TYPE_CHECKING:
    from spacy.tokens import Token

_TIME_LABELS = ("DATE", "TIME")
_AMOUNT_LABELS = ("MONEY", "PERCENT", "QUANTITY")
_PERSON_PRONOUNS = frozenset({"i", "me", "we", "us", "he", "she", "him", "her", "they", "them", "you", "myself"})
_NUMBER = re.compile(r"^[$€£]?\d[\d.,]*(?:k|m|bn|%)?$", re.IGNORECASE)
_CLOCK = re.compile(r"^\d{1,2}(?::\d{2})?\s*(?:am|pm)$", re.IGNORECASE)


# -- values ------------------------------------------------------------------------


def pobj(prep: Token | None) -> Token | None:
    """The object of a preposition (or its clause)."""
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


def is_number(tok: Token) -> bool:
    """ "34", "20k", "1,500", "ten", "3%": a number written as one token (not an ordinal: "the 19th")."""
    if tok.ent_type_ == "ORDINAL" or re.search(r"\d(?:st|nd|rd|th)$", tok.lower_):
        return False
    return tok.like_num or bool(_NUMBER.match(tok.text))


def _clock(tok: Token) -> bool:
    """ "10am", "9 pm": a time of day, not an amount."""
    return bool(_CLOCK.match(tok.text)) or is_number(tok) and any(c.lower_ in ("am", "pm") for c in tok.children)


def is_quantity(tok: Token) -> bool:
    """An amount: a number alone ("34", "20k") or with its unit ("1500 euros", "12 people", "$10",
    "3 percent", "40 minutes"); not a date ("May 20") or a time of day ("10am")."""
    if _clock(tok):
        return False
    if any(c.dep_ == "prep" and c.lower_ == "of" for c in tok.children):
        return False  # "one of my faves", "two of us": a part, not an amount
    if tok.ent_type_ in _AMOUNT_LABELS or is_number(tok) and tok.dep_ != "nummod":
        return True
    return tok.ent_type_ != "DATE" and any(c.dep_ == "nummod" and is_number(c) for c in tok.children)


def is_age(tok: Token) -> bool:
    """A bare whole number a person's age can be: "34", not "34 euros", "95k" or "1500"."""
    return is_bare_number(tok) and tok.text.isdigit() and int(tok.text) <= lx.MAX_AGE


def is_bare_number(tok: Token) -> bool:
    """A number with no unit ("34", not "34 euros")."""
    return is_number(tok) and tok.dep_ != "nummod"


def is_time_value(tok: Token) -> bool:
    """A day or time that a thing happens on: "Thursday", "May 20", "10am", "the 19th", "April"."""
    if _clock(tok) or tok.ent_type_ == "ORDINAL" or re.search(r"\d(?:st|nd|rd|th)$", tok.lower_):
        return True
    if is_quantity(tok):
        return False
    return tok.ent_type_ in _TIME_LABELS or tok.lower_ in lx.WEEKDAYS or tok.lower_ in lx.MONTHS


def is_person(tok: Token) -> bool:
    """A pronoun of a person, a word for a person ("my parents", "her sister") or a capitalised name that
    is not labelled a place or an organisation (the small model's PERSON label is unreliable)."""
    if tok.pos_ == "PRON":
        return tok.lower_ in _PERSON_PRONOUNS
    if tok.pos_ == "NOUN":
        return tok.lemma_.lower() in lx.PERSON_NOUNS
    owned = any(c.dep_ == "poss" for c in tok.children)  # "our HQ" is no person
    return tok.pos_ == "PROPN" and not owned and tok.ent_type_ not in (
        "ORG", "GPE", "LOC", "FAC", "PRODUCT", "NORP", *_TIME_LABELS)


def is_thing(tok: Token) -> bool:
    """A noun or a name that is not a person, or a version or model of letters and digits ("v2.3", "A320"): what
    can have a status or a value."""
    if tok.pos_ in ("X", "NUM"):
        return any(ch.isalpha() for ch in tok.text) and any(ch.isdigit() for ch in tok.text)
    return tok.pos_ in ("NOUN", "PROPN") and not is_person(tok)


# -- the verb's parts ----------------------------------------------------------------


def particle(verb: Token) -> Token | None:
    """ "went *up* to", "moved *out* to", "brought the wedding *forward*"."""
    return next(
        (c for c in verb.children if c.dep_ == "prt" or c.dep_ in ("advmod", "prep") and c.lower_ in lx.PARTICLES),
        None,
    )


def preposition(verb: Token, words: frozenset[str]) -> Token | None:
    """The first of ``words`` hanging off the verb, its particle or its object ("delayed the trip to
    August": the small parser hangs "to August" on the trip), with an object."""
    hosts = [verb, *(h for h in [particle(verb), direct_object(verb)] if h is not None)]
    for host in hosts:
        for c in host.children:
            if c.dep_ in ("prep", "dative") and c.lower_ in words and pobj(c) is not None:
                return c
    return None


def direct_object(verb: Token) -> Token | None:
    return next((c for c in verb.children if c.dep_ == "dobj"), None)


def _lemma_with_particle(verb: Token) -> str:
    p = particle(verb)
    return f"{verb.lemma_.lower()} {p.lower_}" if p is not None else verb.lemma_.lower()


# -- the constructions -----------------------------------------------------------------


def change_to(verb: Token) -> tuple[Token, Token | None] | None:
    """(B, A) of "<verb> (from A) to B" when the verb says a value changed, else None.

    Verbs of rescheduling take a day or time only ("pushed the code to GitHub" is no change of date).
    """
    lemma = verb.lemma_.lower()
    moving = lemma in lx.SCALAR_VERBS or lemma in lx.AMOUNT_MOTION_VERBS
    for c in verb.children:
        # "went up to $12": the small parser makes "up to" part of the amount ("paid up to $50" is no change).
        amount = c.dep_ in ("dobj", "npadvmod", "attr") and moving
        if amount and any(q.dep_ == "quantmod" and q.lower_ == "to" for q in c.children):
            return c, None
    p = particle(verb)
    # A verb of scalar change or promotion moves any value; any other verb with up/down/forward an amount
    # or a day only ("came down to 3", "moved up to Monday"; "opened me up to new ideas" is no change).
    ranked = lemma in lx.SCALAR_VERBS or _lemma_with_particle(verb) in lx.PROMOTION_PHRASES
    scalar = ranked or p is not None and p.lower_ in lx.CHANGE_PARTICLES
    if not scalar and lemma not in lx.RESCHEDULE_VERBS:
        return None
    to = preposition(verb, lx.RESCHEDULE_PREPOSITIONS if not scalar else frozenset({"to"}))
    value = pobj(to)
    if value is None and ranked:  # "got promoted to professor": the small parser's "to professor" clause
        # (it takes a bare title after "to" for a verb now and then: "was promoted to sergeant")
        value = next((c for c in verb.children if c.dep_ == "xcomp" and c.pos_ in ("NOUN", "PROPN", "VERB")
                      and any(a.lower_ == "to" for a in c.children)
                      and not any(a.dep_ in ("dobj", "advmod") for a in c.children)), None)
    if value is None:
        return None
    if not (is_time_value(value) or scalar and is_quantity(value) or ranked and _new_value(value, lemma)):
        return None
    return value, pobj(preposition(verb, frozenset({"from"})))


def _new_value(tok: Token, lemma: str) -> bool:
    """What a rank or a value can change to: a bare title ("promoted to senior engineer", "moved up to
    senior analyst") or, after "changed to" or "upgraded to", a name ("my manager changed to Frank",
    "upgraded her plan to Premium"); not a place, a thing or a person ("promoted to the board", "changed
    to my old bank")."""
    bare = not any(c.dep_ in ("det", "poss") for c in tok.children)
    misread = tok.pos_ == "VERB" and tok.dep_ == "xcomp"  # a title the parser took for a verb (see change_to)
    tier = lemma in ("change", "upgrade", "downgrade") and tok.ent_type_ != "PERSON"  # "upgraded to Premium"
    return bare and (tok.pos_ in ("NOUN", "ADJ") or misread or tok.pos_ == "PROPN" and tier) and (
        tok.ent_type_ not in ("GPE", "LOC", "FAC"))


def changed_thing(verb: Token, subject: Token) -> Token:
    """What a change is about: the object of an active verb ("they raised *the price* to 45"), else
    the subject ("*the price* went up to 45")."""
    obj = direct_object(verb)
    passive = any(c.dep_ == "auxpass" for c in verb.children)
    return obj if obj is not None and not passive and obj.pos_ in ("NOUN", "PROPN", "PRON") else subject


def moved_to(verb: Token) -> tuple[Token, Token | None] | None:
    """(P, A) of "<X> moved / relocated / was transferred (from A) to P", else None."""
    p = particle(verb)
    if verb.lemma_.lower() not in lx.MOVE_VERBS:
        return None
    to = preposition(verb, lx.MOVE_PREPOSITIONS)
    place = pobj(to)
    if place is None or is_time_value(place) or place.pos_ == "PRON":
        return None
    if p is not None and p.lower_ in lx.CHANGE_PARTICLES and place.pos_ != "PROPN":
        return None  # "moved up to senior analyst" is a change of rank; "moved up to Manchester" a move
    if place.pos_ != "PROPN":
        # "moved into a flat in Galway": the named place, on the flat or on the verb.
        named = [pobj(c) for h in (place, verb) for c in h.children if c.dep_ == "prep" and c.lower_ == "in"]
        place = next((n for n in named if n is not None and n.pos_ == "PROPN"), place)
    return place, pobj(preposition(verb, frozenset({"from"})))


def switched_to(verb: Token) -> tuple[Token, Token | None] | None:
    """(B, A) of "switched (from A) to B", "replaced A with B", "swapped A for B", "traded A in for B"."""
    lemma, to = verb.lemma_.lower(), frozenset({"to"})
    misread = _to_object(verb)
    # "swapped to oat milk": a verb of replacing with no thing given up switches, as "switched to" does
    if lemma in lx.SWITCH_VERBS or lemma in lx.REPLACE_VERBS and (
            misread is not None or preposition(verb, to) is not None and _own_object(verb) is None):
        new = pobj(preposition(verb, to)) or misread
        if new is None or is_time_value(new):
            return None
        return new, pobj(preposition(verb, frozenset({"from"}))) or (_own_object(verb) if misread is None else None)
    if lemma in lx.REPLACE_VERBS and (old := _own_object(verb)) is not None:
        new = pobj(preposition(verb, frozenset({"with", "for"})))
        return (new, old) if new is not None else None
    return None


def _to_object(verb: Token) -> Token | None:
    """The object after "to" that the small parser read as a verb's ("switched to oat milk": "to" an aux of
    "oat", "milk" the direct object)."""
    obj = direct_object(verb)
    return obj if obj is not None and obj.left_edge.lower_ == "to" else None


def _own_object(verb: Token) -> Token | None:
    """The direct object, unless it is a job ("switched jobs"): the thing given up."""
    obj = direct_object(verb)
    return obj if obj is not None and obj.lemma_.lower() not in lx.JOB_NOUNS else None


def role_as(verb: Token, subject: Token) -> tuple[Token, Token] | None:
    """(holder, role) of "<Y> took over as my manager", "Y replaced Z as my manager", "they named Y as
    our new CEO": the role is a possessed noun after "as"; its holder is the named object of a verb
    that gives the role (named, hired), else the subject."""
    role = pobj(preposition(verb, frozenset({"as"})))
    if role is None or role.pos_ != "NOUN" or not any(c.dep_ == "poss" for c in role.children):
        return None
    obj = direct_object(verb) or next((c for c in verb.children if c.dep_ == "oprd"), None)
    replacing = verb.lemma_.lower() in lx.REPLACE_VERBS or _lemma_with_particle(verb) in lx.REPLACE_VERBS
    agent = pobj(next((c for c in verb.children if c.dep_ == "agent"), None))
    if replacing and agent is not None:  # "Tess was replaced by Gabe as our PM"
        return agent, role
    holder = obj if obj is not None and is_person(obj) and not replacing else subject
    return holder, role


def took_role(verb: Token, subject: Token) -> tuple[Token, Token] | None:
    """(holder, role) of "Ingrid took over as treasurer", "Kwame replaced Ines as captain", "Aroha started as
    a flight attendant": a role no one's (no possessor; ``role_as`` reads "my manager") that a verb of
    replacing, or of starting a job (done, not a plan), gives its subject."""
    role = pobj(preposition(verb, frozenset({"as"})))
    if role is None or role.pos_ != "NOUN" or any(c.dep_ == "poss" for c in role.children):
        return None
    replacing = verb.lemma_.lower() in lx.REPLACE_VERBS or _lemma_with_particle(verb) in lx.REPLACE_VERBS
    starting = verb.lemma_.lower() in lx.ROLE_STARTING_VERBS and verb.tag_ in ("VBD", "VBN")
    return (subject, role) if (replacing or starting) and subject.dep_ in ("nsubj", "nsubjpass") else None


def acquired(verb: Token) -> Token | None:
    """What "adopted a dog", "bought a Tesla", "inherited a cottage" leaves the subject having: the direct
    object of a verb of acquiring said as done (present habits, "I buy coffee daily", are no acquisition)."""
    if verb.lemma_.lower() not in lx.ACQUIRE_VERBS or verb.tag_ not in ("VBD", "VBN"):
        return None
    return direct_object(verb)


def job_at(verb: Token) -> tuple[Token, bool] | None:
    """(employer, ended) of "started a new job at Hooli", "took a position with Acme", "accepted an
    offer from PwC", "lost my job at X" (ended), "got hired by Cyberdyne" or "at Oakfield", "started at
    Hooli", "left Wayne for a job at Cyberdyne" (the job taken)."""
    lemma = verb.lemma_.lower()
    if lemma in lx.HIRE_VERBS and any(c.dep_ == "auxpass" for c in verb.children):
        # "got hired by Cyberdyne", "got hired at Oakfield Academy"
        employer = pobj(next((c for c in verb.children if c.dep_ == "agent"), None))
        employer = employer or _employer(preposition(verb, lx.EMPLOYER_PREPOSITIONS))
        return (employer, False) if employer is not None else None
    if lemma in lx.JOB_ENDING_VERBS and (taken := _job_employer(pobj(preposition(verb, frozenset({"for"}))))):
        return taken  # "left Wayne for a job at Cyberdyne": the job taken (leaving Wayne is read as such)
    job = direct_object(verb)
    if job is None:
        if lemma in ("start", "begin"):
            # "started at Hooli last month": starting at a named organisation (the small model labels made-up
            # company names as places as often as not, so any proper noun) is a job there
            employer = pobj(preposition(verb, frozenset({"at"})))
            return (employer, False) if employer is not None and employer.pos_ == "PROPN" else None
        return None
    noun = job.lemma_.lower()
    taking = lemma in lx.JOB_TAKING_VERBS and (noun in lx.JOB_NOUNS or noun == "offer" and lemma in ("accept", "take"))
    ending = lemma in lx.JOB_ENDING_VERBS and noun in lx.JOB_NOUNS
    if not (taking or ending):
        return None
    for host in (job, verb):
        for c in host.children:
            if c.dep_ == "prep" and c.lower_ in lx.EMPLOYER_PREPOSITIONS and (employer := pobj(c)) is not None:
                return employer, ending
    return None


def _employer(prep: Token | None) -> Token | None:
    """The named organisation a preposition leads to (not a place, a date or an amount)."""
    org = pobj(prep)
    return org if org is not None and org.pos_ == "PROPN" and org.ent_type_ not in lx.NOT_EMPLOYER_LABELS else None


def _job_employer(job: Token | None) -> tuple[Token, bool] | None:
    """(employer, False) of a job noun with its employer: "a job at Cyberdyne"."""
    if job is None or job.lemma_.lower() not in lx.JOB_NOUNS:
        return None
    for c in job.children:
        if c.dep_ == "prep" and c.lower_ in lx.EMPLOYER_PREPOSITIONS and (employer := pobj(c)) is not None:
            return employer, False
    return None


def became(verb: Token) -> Token | None:
    """The value of "<X> became a lecturer", "I turned 34", "she turned vegan": verbs of becoming are a
    copula that says the value is new."""
    lemma = verb.lemma_.lower()
    if lemma not in lx.BECOME_VERBS:
        return None
    for c in verb.children:
        if c.dep_ in ("attr", "acomp", "oprd") or c.dep_ == "dobj" and is_number(c):
            return c
    return None


def appointed(verb: Token, subject: Token) -> tuple[Token, Token] | None:
    """(holder, title) of "they made Omar head of sales", "Nora was made a partner", "I was named VP of
    marketing", "she was appointed our lead": verbs that give a title (``lexicon.APPOINT_VERBS``). A
    name given ("the dog was named Rex") is no title: a proper noun without an "of" phrase."""
    if verb.lemma_.lower() not in lx.APPOINT_VERBS:
        return None
    holder: Token | None = subject
    if any(c.dep_ == "auxpass" for c in verb.children):
        title = next((c for c in verb.children if c.dep_ in ("oprd", "attr", "dobj", "xcomp")), None)
    else:
        # The small parser reads "made Omar head of sales" as a clause "Omar head of sales". Actively, only a
        # bare title given to a name counts: "I made my friend some ice cream" gives a thing.
        title = next((c for c in verb.children if c.dep_ in ("ccomp", "oprd", "xcomp") and c.pos_ == "NOUN"
                      and not any(d.dep_ == "det" for d in c.children)), None)
        holder = next((c for c in title.children if c.dep_ == "nsubj" and c.pos_ == "PROPN"), None) if title else None
    if title is None or holder is None or title.pos_ not in ("NOUN", "PROPN"):
        return None
    if title.pos_ == "PROPN" and not any(c.dep_ == "prep" and c.lower_ == "of" for c in title.children):
        return None
    return holder, title


def status_word(tok: Token) -> str | None:
    """The status an adjective or participle names ("open", "closed", "cancelled", "over" -> ended)."""
    return lx.STATUS_WORDS.get(tok.lower_)


def status_of_clause(verb: Token, subject: Token) -> tuple[Token, str] | None:
    """(thing, status) of "the cafe closed down", "the project was cancelled", "they cancelled the
    project", "the beta has ended", "my visa expired", "the beta is running"."""
    key = _lemma_with_particle(verb)
    status = lx.STATUS_VERBS.get(key) or lx.STATUS_VERBS.get(verb.lemma_.lower())
    if status is None:
        return None
    passive = any(c.dep_ == "auxpass" for c in verb.children)
    obj = direct_object(verb)
    if obj is not None and not passive:
        # "they cancelled the project", "I closed my account": a known thing (not "I opened an account").
        # Done, not under way: "I'm selling my keyboard" has not sold it.
        known = any(c.dep_ == "poss" or c.lower_ in ("the", "this", "that", "our", "my") for c in obj.children)
        if verb.lemma_.lower() in lx.STATUS_TRANSITIVE and is_thing(obj) and (known or obj.pos_ == "PROPN") \
                and verb.tag_ != "VBG":
            return obj, status
        return None
    if not is_thing(subject):
        return None
    if verb.lemma_.lower() == "run" and not (verb.tag_ == "VBG" and any(c.lemma_ == "be" for c in verb.children)):
        return None  # "the beta is running" is a status; "the rotation runs every 90 days" is not
    return subject, status


def ended_activity(verb: Token) -> Token | None:
    """The activity of "stopped going to the gym", "quit smoking", "gave up playing chess": an -ing
    verb (or an -ing noun the small parser makes of it) after a verb of ending; or the thing a person gives
    up ("I gave up the keto diet"), not a job nor a name ("quit Acme": a change of work, read elsewhere)."""
    if _lemma_with_particle(verb) not in lx.ENDING_VERBS and verb.lemma_.lower() not in lx.ENDING_VERBS:
        return None
    for c in verb.children:
        if c.dep_ in ("xcomp", "dobj", "ccomp") and c.tag_ in ("VBG", "NN") and c.lower_.endswith("ing"):
            return c
    person = any(c.dep_ == "nsubj" and is_person(c) for c in verb.children)
    return next((c for c in verb.children if person and c.dep_ == "dobj" and c.pos_ == "NOUN"
                 and c.lemma_.lower() not in lx.JOB_NOUNS), None)
