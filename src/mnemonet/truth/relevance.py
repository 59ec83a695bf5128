"""Does a statement answer a question? Who it is about, and what it says about them.

A statement answers only when its **subject is the one asked about** and its
relation (or its object) **covers what the question asks**; a question no
statement answers is answered with "nothing in memory", whatever shares a word
with it. Matching is on folded content words (``text.terms``: crude singular
forms, a few synonyms, first person as the asker), and, for the kind of answer
a question wants, on the words the relation vocabulary says a question asks
for the relation with (``asked``: "where" and "home" ask for lives_in, "role"
and "title" for is_a ...).

The subject: the asker's "I" / "my" is the asker (never another person, so
bob's "where do I work?" is never answered with alice's job); a named person
or thing must be named in the question (every word of a common noun's head,
any word of a proper name); a possessed subject ("alice's sister") needs its
possessor and its noun in the question ("my sister", "alice's sister"), so a
relative's city never answers "where am I based?". A question about
something's holder ("who manages QA?") may match a statement by its object
when the relation matches too.

The score of a statement is the share of the question's content words it
covers (subject, relation and object together), 0 when its subject is not the
one asked about, or when the question asks for an attribute ("what is Ola's
job title?") it does not name; it answers at ``ANSWERS`` or more. A relation
the vocabulary does not declare that ends in a preposition of place gives a
place ("works from home" answers "where"). Asked for a name of someone's someone ("what is Sakura's teacher's
name?"), an answer must name that someone (the teacher), not only give a name. A statement whose every word
the question already says ("my sister is Chiara" for "what does my sister Chiara do?") answers nothing.

What a question asks for shapes what answers it: "the <attribute> of <thing>" asks as "<thing>'s
<attribute>" does; "which <kind>" is answered by a name (one the question does not say already, no day or
month), or by naming the kind; "what time" by a time of day, not a date; "how much" by a value with digits,
whatever its relation; a yes-or-no question ending with one thing ("do I have a dog?") by a statement naming it, or
by a value of a relation that holds one at a time. ``answering_part`` picks the clause of a turn that answers (for
words quoted as the answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from mnemonet.model.views import ObservationView, StatementView
from mnemonet.truth.text import (
    FIRST_PERSON,
    FIRST_PERSON_PLURAL,
    MONTHS,
    RECURRING_TIMES,
    fold,
    object_words,
    plain,
    terms,
)
from mnemonet.truth.vocabulary import Vocabulary

# The share of the question a statement must cover to answer it (see the module docstring).
ANSWERS = 0.5
_WORD = re.compile(r"[a-z0-9]+(?:'s)?")
_ARTICLES = frozenset({"the", "a", "an", "our", "their", "his", "her", "its"})
_QUESTION_WORDS = ("where", "when", "who", "whom", "whose", "what", "which", "how", "why")
# "Why" asks for a reason: only words that give one (a causal connective) answer it.
_CAUSAL = frozenset({"because", "cause", "cos", "cuz", "since", "due", "reason", "so"})
# The auxiliaries of a question about the past ("where did I work?", "what was ...", "what did I use to ...").
_PAST_AUXILIARIES = frozenset({"did", "was", "were", "used", "had"})
# The first words of a question asking yes or no ("do I still smoke?", "is Marco my manager?").
_POLAR_OPENERS = frozenset({"is", "are", "am", "do", "does", "can", "will", "has", "have"})
_NOT_POLAR = frozenset({"not", "never", "or"})  # a negated question, or one offering a choice
# The question words that ask for a kind of answer (a place, a time, a person), and what a statement that
# gives none of it keeps of its score: it may still answer, when nothing giving that kind does.
_KINDS = frozenset({"where", "when", "who"})
WRONG_KIND = 0.6
# "what is Ola's job title?", "which is my favourite band", "what is my locker number at the pool?": the
# possessed noun phrase's last word names the attribute asked for (``Question.attribute``), which an answer
# must give.
_ATTRIBUTE = re.compile(r"(?:what|which)(?:'s|\s+is|\s+are)\s+(?:the\s+)?"
                        r"(?:[\w-]+'s|my|your|our|his|her|their|[\w.-]+\s+[\w-]+'s)"  # "Mr Petrov's" too
                        r"((?:\s+[\w'-]+)+?)\s*(?:\s(?:at|in|on|for|of|with|from|to|now|these|this|today)\b.*)?\??$")
# "what's the name of the bakery Lena works at?", "what's the registration number of Chidi's car?": an attribute of
# a thing, which an answer must give (a name of a thing must be named in that thing).
_ATTRIBUTE_OF = re.compile(r"(?:what|which)(?:'s|\s+is|\s+was)\s+the\s+(?:[\w-]+\s+)?([\w-]+?)s?\s+of\s+"
                          r"(?:the|my|your|our|his|her|their|[\w-]+'s)?\s*(?:[\w-]+'s\s+)?([\w-]+)")
# "which hospital does Tariq work at?": one of a kind, which an answer picks out by a name (or names the kind).
_WHICH = re.compile(r"\bwhich\s+(?!(?:of|is|are|was|were|one|ones|do|does|did|can|will|would|has|have)\b)"
                    r"([a-z][\w-]*)\b")
# A name's word: a capital and small letters ("Elena", "O'Neill"; not "DBA", "Q3"), a sentence's first word
# only if it is not the question's.
_NAME_WORD = re.compile(r"\b[A-Z][a-z][\w'-]*")
_CALENDAR_WORDS = frozenset(fold(w) for w in RECURRING_TIMES | MONTHS)  # "Saturday", "May": no one's name
# "my order 88213", "my ticket #4821": one's thing and the number naming it.
_OWN_NUMBERED = re.compile(r"\bmy\s+([a-z][\w-]*)\s+(?:number\s+|no\.?\s*|#)?([a-z]*\d[\w-]*)", re.IGNORECASE)
# "do I have a dog?", "do I play the drums?": a yes-or-no question ending with one thing it names.
_THING_ASKED = re.compile(r"\b(?:a|an|the)\s+([a-z][\w-]*)\s*\?*$")
_AMOUNT_ASKED = frozenset({"much", "many", "long", "far", "old", "often"})
_NUMBER_WORDS = frozenset({
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty",
    "thirty", "forty", "fifty", "hundred", "thousand", "dozen", "half", "once", "twice", "daily", "weekly",
})
# "what time is my flight?": a time of day, which a date does not give.
_WHAT_TIME = re.compile(r"\b(?:what|which)\s+time\b(?!\s+of\b)")
_CLOCK = re.compile(r"\b\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\b(?:noon|midday|midnight|o'clock|"
                    r"morning|afternoon|evening|night|tonight)\b", re.IGNORECASE)
_HAVE = frozenset({fold("has")})  # the verb of an attribute relation ("has_sister"), no word of its own
_NUMBER = fold("number")  # the attribute a value with digits gives ("what's my flight number?": "KQ 101")
_NAME = fold("name")  # the attribute a value that is a name gives ("what are my kids' names?": "Tobi")
# "who is the captain of my team?", "who's our GP?": the one holder of something (not "who is a nurse?").
_THE_HOLDER = re.compile(r"who(?:'s|\s+is|\s+are)\s+(?:the|my|our|your|his|her|their|[\w-]+'s)\s")
# The last word of a relation that makes its object a place ("works from home", "goes to Riverside Primary").
_PLACE_PREPOSITIONS = frozenset({"in", "at", "from", "near", "to"})
# Where a value's head phrase ends: "bakery" of "bakery in Hamburg".
_AFTER_HEAD = re.compile(r"\s(?:in|at|from|near|on|for|with|by)\s")


@dataclass(frozen=True)
class Question:
    """What a question asks, read once: its folded content words, its question word, first person."""

    text: str
    asker: str
    words: frozenset[str]
    wh: str | None
    first_person: bool
    past: bool = False  # asks what held once ("where did I work?"), not what holds now
    polar: bool = False  # asks yes or no of one fact ("don't I ...?", "is it not ...?", "... or ...?" do not)
    attribute: str | None = None  # the head noun of "what is X's <attribute>?" ("title" of "Ola's job title")
    the_holder: bool = False  # asks who is the one holder of something ("who is the captain?", "who's my GP?")
    named: str | None = None  # whose name "what is X's <noun>'s name?" asks for ("teacher" of "Sakura's teacher's")
    ours: bool = False  # in the first person plural only ("what do we use for chat?"): of a team, not the asker alone
    clock: bool = False  # asks for a time of day ("what time is my flight?")
    which: str | None = None  # the kind "which <kind>" asks to pick one of ("hospital" of "which hospital ...?")
    names: frozenset[str] = frozenset()  # the words of the names it says ("elena" of "what shoe size is Elena?")
    amount: bool = False  # asks how much, many, long, far, old or often: a number
    # asked of "us" beside a conversation of several others (``in_conversation``): a member's "we" is the group's
    group_talk: bool = False
    # the numbers by which the asker named the thing asked about as theirs ("88213" of "my order 88213")
    owned: frozenset[str] = frozenset()
    # the one thing a yes-or-no question ends by naming ("dog" of "do I have a dog?")
    thing: str | None = None

    def in_conversation(self, turns: list[ObservationView]) -> Question:
        """This question asked beside ``turns``: two or more speakers besides the asker make a conversation, whose
        members' "we" ("let's meet at the clock tower") is the group asked of as "we"; a thing the question asks
        of as the asker's, which the asker named by its number ("where's my order 88213?"), is the one others'
        words name by it ("Order 88213 has been dispatched")."""
        me = plain(self.asker)
        others = {plain(t.source or "user") for t in turns} - {me}
        owned = {m.group(2).casefold() for t in turns if plain(t.source or "user") == me
                 for m in _OWN_NUMBERED.finditer(t.text) if fold(m.group(1).casefold()) in self.words}
        return replace(self, group_talk=self.ours and len(others) >= 2, owned=frozenset(owned))

    @classmethod
    def read(cls, text: str, asker: str | None) -> Question:
        me = asker or "user"
        raw = _WORD.findall(plain(text).replace("_", " "))
        wh = next((w.removesuffix("'s") for w in raw if w.removesuffix("'s") in _QUESTION_WORDS), None)  # "where's"
        polar = bool(raw) and raw[0] in _POLAR_OPENERS and wh is None and not _NOT_POLAR & set(raw)
        m = _ATTRIBUTE.match(text.casefold().strip())
        holder = _THE_HOLDER.match(text.casefold().strip()) is not None
        possessed = m.group(1).split() if m else []
        attribute = fold(possessed[-1].removesuffix("'s")) if possessed else None
        named = fold(possessed[-2].removesuffix("'s")) if attribute == _NAME and len(possessed) > 1 \
            and possessed[-2].endswith("'s") else None
        if (of := _ATTRIBUTE_OF.match(text.casefold().strip())) is not None:  # "what's the name of the bakery ...?"
            attribute = fold(of.group(1))
            named = fold(of.group(2)) if attribute == _NAME else None
        return cls(text=text, asker=me, words=frozenset(terms(text, me)), wh=wh,
                   first_person=any(w in FIRST_PERSON for w in raw), past=bool(_PAST_AUXILIARIES & set(raw)),
                   ours=bool(FIRST_PERSON_PLURAL & set(raw)) and not (FIRST_PERSON - FIRST_PERSON_PLURAL) & set(raw),
                   polar=polar, attribute=attribute, the_holder=holder, named=named,
                   clock=_WHAT_TIME.search(text.casefold()) is not None,
                   which=next(iter(terms(w.group(1), me)), None) if (w := _WHICH.search(text.casefold())) else None,
                   amount=wh == "how" and bool(_AMOUNT_ASKED & set(raw)), names=_names_said(text, me),
                   thing=fold(t.group(1)) if polar and (t := _THING_ASKED.search(text.casefold())) else None)


def _names_said(text: str, asker: str) -> frozenset[str]:
    """The words of the names a question says: words with a capital and small letters, not its first word, no day
    or month ("elena" of "what shoe size is Elena?"; not "DBA", "Q3", "Saturday")."""
    found = _NAME_WORD.findall(text)
    return frozenset(terms(" ".join(found[1:] if text[:1].isupper() else found), asker)) - _CALENDAR_WORDS


def subject_words(subject: str, asker: str) -> frozenset[str] | None:
    """The question words a subject needs to be the one asked about; None if no question could name it."""
    name = plain(subject).strip()
    possessor, sep, noun = name.partition("'s ")
    if sep:
        # its owner, and the nouns of the possessed phrase: each one possessed and the head ("user's car's MOT"),
        # not its modifiers ("my older sister" is asked as "my sister")
        owner = _owner_words(possessor, asker)
        words = _WORD.findall(noun)
        nouns = [w.removesuffix("'s") for w in words[:-1] if w.endswith("'s")] + words[-1:]
        return owner | frozenset(terms(" ".join(nouns), asker)) if owner else None
    if name == plain(asker) or name == "user" and asker == "user":
        return _owner_words(name, asker)
    words = [w for w in _WORD.findall(name) if w not in _ARTICLES]
    if not words:
        return None
    if subject[:1].isupper() and len(words) > 1:  # a proper name: any of its words names it
        return frozenset()
    return frozenset({fold(words[-1])})  # a common noun: its head


def _owner_words(name: str, asker: str) -> frozenset[str]:
    if name == plain(asker):
        return frozenset(terms(asker, asker)) or frozenset({"user"})
    return frozenset(terms(name, asker))


def holds_role(s: StatementView, q: Question) -> bool:
    """Whether ``s`` names a holder of the role ``q`` asks the one holder of, by the copula ("Kwame is
    captain" for "who is the captain of my team?"; "is_a" has no words of its own)."""
    return q.the_holder and bool(s.object) and not terms(s.predicate, q.asker) and not about_subject(s, q)


def holds_thing(s: StatementView, q: Question, vocabulary: Vocabulary) -> bool:
    """Whether ``s`` names who holds the thing ``q`` asks the holder of, by its relation and object ("who
    manages the under-12 team?" of "Coach Alvarez manages the under-12 team", "Tomasz manages the under-12s")."""
    if q.wh != "who" or about_subject(s, q):
        return False
    relation = frozenset(terms(s.predicate, q.asker)) | frozenset(fold(w) for w in vocabulary.asked_with(s.predicate))
    return _names_what_is_held(frozenset(terms(s.object, q.asker)), relation, q)


def _names_what_is_held(obj: frozenset[str], relation: frozenset[str], q: Question) -> bool:
    """Whether a statement's object is the thing ``q`` asks the holder of, by a relation the question names: the
    question names every word of the object ("who coaches the under-9 netball team?" of "Priya coaches the
    under-9s"), or the relation and the object say every word of the question ("who's driving to the lake?" of
    "Rosa drives everyone to the lake on Sunday")."""
    return bool(obj & q.words) and bool(relation & q.words) and (obj <= q.words or q.words <= obj | relation)


def about_subject(s: StatementView, q: Question) -> bool:
    """Whether ``s`` is about whoever or whatever ``q`` asks about."""
    needed = subject_words(s.subject, q.asker)
    if needed is None:
        return False
    if not needed:  # a proper name of several words: any of them
        return bool({fold(w) for w in _WORD.findall(plain(s.subject))} & q.words)
    return needed <= q.words


def _place_asked(s: StatementView, vocabulary: Vocabulary) -> frozenset[str]:
    """{"where"} for a relation the vocabulary does not declare that ends in a preposition of place, with an
    object that is no time ("works from home", "goes to Riverside Primary"; not "teaches from term")."""
    if vocabulary.known(s.predicate) or s.predicate.rpartition("_")[2] not in _PLACE_PREPOSITIONS \
            or object_words(s.object) & RECURRING_TIMES:
        return frozenset()
    return frozenset({"where"})


def gives_clock(text: str) -> bool:
    """Whether ``text`` gives a time of day ("at 6:40", "2pm", "in the morning")."""
    return _CLOCK.search(text) is not None


def gives_amount(text: str) -> bool:
    """Whether ``text`` gives an amount: a number, in digits or words ("12 days", "twice a week")."""
    return any(c.isdigit() for c in text) or bool(object_words(text) & _NUMBER_WORDS)


def gives_reason(text: str) -> bool:
    """Whether ``text`` gives a reason ("because the pay was bad", "due to the move")."""
    return bool(_CAUSAL & set(_WORD.findall(text.casefold())))


def text_gives_attribute(text: str, q: Question) -> bool:
    """Whether words nothing was extracted from may give the attribute ``q`` asks for: a number or a name, asked,
    must be named or have its shape in them (digits, a capitalised word); any other attribute may be given
    without its word ("the firm made Yuna a partner" gives her position), so words may give it."""
    if q.attribute not in (_NUMBER, _NAME) or q.attribute in terms(text, q.asker):
        return True
    if q.attribute == _NUMBER:
        return any(c.isdigit() for c in text)
    return any(w[:1].isupper() for w in text.split()[1:])


# Where a turn's clauses part: a stop, a semicolon, a comma, a dash or a conjunction joining two clauses; "and"
# only between two runs of ``_CLAUSE_WORDS`` words or more ("Amara and Tobi" is one phrase).
_CLAUSE_BREAK = re.compile(r"[.!?;]+\s+|,\s+|\s[-–—]\s|\s(?:but|so|while|whereas)\s", re.IGNORECASE)
_AND = re.compile(r"\sand\s", re.IGNORECASE)
_CLAUSE_WORDS = 3


def answering_part(text: str, q: Question, speaker: str, gives: Callable[[str], bool] | None = None) -> str:
    """The clause of ``text`` that answers ``q``: of those that ``gives`` a value of the kind asked, when one is
    asked (and name whom it names, when any does), the one covering the most of its words, when it covers two
    or more (a value of the kind asked counts as one beside a name: "Rahul comes in at 10am" for "when does
    Rahul start?") and more than any other ("Priya stood down on Tuesday and Declan was voted in as chair"
    for "who chairs the committee?" is Declan's clause); else the whole text."""
    parts = _clauses(text)
    if len(parts) < 2:
        return text
    words = [set(terms(part, speaker)) for part in parts]
    # Of a turn about several people ("Anneke starts at 8am, Rahul comes in at 10am"), a clause naming the one
    # asked of answers, with a word of the question besides the name, or a value of the kind asked ("10am").
    naming = [bool(q.names & w) for w in words]
    covered = []
    for part, said, named in zip(parts, words, naming, strict=True):
        kind = gives is not None and named  # counts as a word of the question it covers
        if gives is not None and not gives(part) or any(naming) and not named \
                or not (q.words - q.names) & said and not kind:
            covered.append(0)
        else:
            covered.append(len(q.words & said) + kind)
    best = max(covered)
    if best < 2 or covered.count(best) > 1:
        return text
    return parts[covered.index(best)]


def rest_of_clause(text: str, phrase: str) -> str | None:
    """``phrase`` as ``text`` says it, with the phrase qualifying it to the end of its clause ("Zoom for the book
    club calls" of "Zoom" in "we use Zoom for the book club calls, it's free"), or None when the text does not
    say it so (not "Chiara works as a pharmacist" of "Chiara": a clause of its own)."""
    found = re.search(re.escape(phrase), text, re.IGNORECASE) if phrase else None
    if found is None:
        return None
    end = _CLAUSE_BREAK.search(text, found.end())
    rest = text[found.end():end.start() if end else len(text)]
    return f"{found.group(0)}{rest}".strip(" .!?") if _QUALIFIER.match(rest) else None


# What starts a phrase qualifying the one before it: "for the book club calls", "at the weekends".
_QUALIFIER = re.compile(r"\s+(?:for|in|on|at|with|from|during|every|over|to|by|of|about|after|before)\s",
                        re.IGNORECASE)


def leaving_out(text: str, values: list[frozenset[str]]) -> str:
    """The longest run of ``text``'s clauses naming none of ``values`` (each named by all its words), as said
    ("wait no, I got that wrong, it's The Black Horse" of "..., the Red Lion was last month" without the Red
    Lion); the whole text when no clause or every clause names one."""
    ends = [0, *(m.end() for m in _CLAUSE_BREAK.finditer(text)), len(text) + 1]
    spans = [(start, end) for start, end in zip(ends, ends[1:], strict=False) if text[start:end].strip()]
    names = [any(v <= object_words(text[start:end]) for v in values) for start, end in spans]
    if not any(names) or all(names):
        return text
    best: tuple[int, int] = (0, 0)
    run_start = None
    for i, named in enumerate([*names, True]):
        if not named and run_start is None:
            run_start = i
        elif named and run_start is not None:
            if i - run_start > best[1] - best[0]:
                best = (run_start, i)
            run_start = None
    return text[spans[best[0]][0]:spans[best[1] - 1][1]].strip(" ,;.!?-–—")


def _clauses(text: str) -> list[str]:
    out: list[str] = []
    for piece in _CLAUSE_BREAK.split(text.strip()):
        halves = _AND.split(piece)
        if len(halves) == 2 and all(len(h.split()) >= _CLAUSE_WORDS for h in halves):
            out += halves
        elif piece.strip(" .!?"):
            out.append(piece)
    return [p.strip(" .!?") for p in out]


def _names(s: StatementView, q: Question) -> bool:
    """Whether ``s`` gives the name ``q`` asks for: a capitalised word in its object's head phrase, or in the head
    phrase of the part naming the thing whose name is asked ("bakery" of "what is the name of the bakery?")."""
    part = s.object  # "Ravi has_coach Mehmet": the relation names whose name the object is
    if q.named and q.named not in terms(f"{s.predicate} {s.object}", q.asker):
        part = s.subject if q.named in terms(s.subject, q.asker) else ""
    head = _AFTER_HEAD.split(part, maxsplit=1)[0]  # "bakery" of "bakery in Hamburg": a name it holds names it
    return any(w[:1].isupper() for w in head.split())


def _picks_one(value: str, q: Question) -> bool:
    """Whether ``value`` picks one out by a name or a number the question does not already say, no day or month
    ("which hotel are we staying at in Hokkaido?" is not answered by "off to Hokkaido in February")."""
    said = q.words | _CALENDAR_WORDS
    return any((w[:1].isupper() or w[:1].isdigit()) and not terms(w, q.asker) <= said for w in value.split())


def score(s: StatementView, q: Question, vocabulary: Vocabulary) -> float:
    """The share of ``q``'s content words that ``s`` covers; 0 when it is not about the subject asked."""
    if not q.words:
        return 0.0
    asked = vocabulary.asked_with(s.predicate) | _place_asked(s, vocabulary)
    subject = frozenset(terms(s.subject, q.asker))
    relation = frozenset(terms(s.predicate, q.asker)) | frozenset(fold(w) for w in asked)
    obj = frozenset(terms(s.object, q.asker))
    if q.attribute == _NAME and _names(s, q) or q.attribute == _NUMBER and any(c.isdigit() for c in s.object):
        obj |= {q.attribute}  # the value is of the kind asked: a name, a number ("my booking is BK 4471")
    if q.attribute and q.attribute not in subject | relation | obj:
        return 0.0  # "what is Ola's job title?" is not answered by "Ola started at the company"
    if q.named and q.named not in subject | relation | obj:
        return 0.0  # "what is Sakura's teacher's name?": a name, but her teacher's (not her school's)
    said = subject | frozenset(terms(s.predicate, q.asker)) | obj
    if q.clock and not gives_clock(s.object):
        return 0.0  # "what time is my flight?" is not answered by "you fly to Lisbon on the 9th"
    if q.which and q.which not in said and not _picks_one(s.object, q):
        return 0.0  # "which hospital does Tariq work at?" is not answered by "Tariq works as a paramedic"
    if q.amount and not gives_amount(s.object):
        return 0.0  # "how much is the boiler service?" is not answered by "the boiler service is due next week"
    if q.thing and q.thing not in obj and not vocabulary.single_valued(s.predicate):
        return 0.0  # "do I have a dog?" is not answered by "you have a cat": many values may hold at once
    if q.wh == "why" and not gives_reason(s.object):
        return 0.0  # "why did I quit?" is not answered by "you quit your job"
    if q.wh and not q.polar and not s.negated and said <= q.words | _HAVE:
        return 0.0  # it says nothing the question does not: "my sister is Chiara" for "what does my sister Chiara do?"
    if about_subject(s, q):
        covered = q.words & (subject | relation | obj)
    elif q.wh in ("who", "what", "which") and (_names_what_is_held(obj, relation, q) or q.wh == "who" and bool(
            obj) and obj <= q.words and not terms(s.predicate, q.asker)):
        # the holder of something: "who manages QA?"; of a role said by the copula, "who leads the Atlas
        # project?" of "Ingrid is the project lead on Atlas"
        covered = q.words & (relation | obj)
    elif holds_role(s, q) and q.words <= relation | obj:
        covered = q.words  # the one holder of a role, by the copula: "Ines is captain of our team"
    else:
        return 0.0
    # The question word asking for the relation ("where" for lives_in) counts as half a word it covers when
    # no other word of the question names the relation (a word naming another relation outweighs it:
    # "where does Dana work?" is works_at, not lives_in); a question naming nothing but its subject ("who is
    # the budget owner?") asks for whatever is said of it, and the question word only breaks ties there.
    # An amount asked ("how much is the boiler service?") is given by a value with digits, whatever its relation.
    kind = (q.wh in asked or q.amount and any(c.isdigit() for c in s.object)) and not (relation & q.words)
    if q.words <= subject:
        share = 1.0 - (0.0 if kind else 0.001)
    elif not (covered - subject) and not kind:
        return 0.0  # the subject alone answers nothing
    else:
        share = min(1.0, (len(covered) + 0.5 * kind) / len(q.words))
    # "Where", "when" and "who" ask for a place, a time, a person: a statement giving none of these (no
    # relation they ask for, no time it holds at, no name) tells of the subject without answering.
    # "Who" asks for a person: a statement naming one (a capitalised object: "therapist is Dr Alvarez")
    # gives it, whatever its relation; "sees new therapist" does not.
    gives = q.wh in asked or (q.wh == "when" and s.valid_at is not None) or (
        q.wh == "who" and any(w[:1].isupper() for w in s.object.split())) or holds_role(s, q)
    return share * (1.0 if gives or q.wh not in _KINDS else WRONG_KIND)
