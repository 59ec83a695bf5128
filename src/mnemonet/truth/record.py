"""The observation is the record: a slot's newer value read from what was said after its statement.

An extraction can miss a change said in words it has no rule for ("ditched the iPhone for a Pixel",
"Down to 76 kg!!", "concert's been bumped to the 12th"). The words are still there, in the observation.
What marks a change, whatever the wording, is the *shape of the value*: a later utterance by or about the
same subject that names a new value of the kind the slot holds (a name where a name was, an amount in the
same unit, a date of the same form, the same kind of thing: "oat milk" where "cow's milk" was) restates the
slot. ``said_since`` reads that value and the slot's statement with it, for the answer to lead with (its
evidence is the observation, cited; the older statement shows as changed).

It speaks only when the reading is unambiguous:

- the observation is newer than the statement and by its subject (or whoever spoke for the asker), or
  names the subject, or is by the statement's teller naming the old value as a change ("our CI runs on
  Jenkins", then "we replaced Jenkins with GitHub Actions"), or by its teller standing for it with a
  pronoun and naming a value of its distinctive shape ("rent on the flat is £1150", then "landlord's put
  it up, we're paying £1275 now");
- it names exactly one new value of the slot's shape (none of the subject's, the asker's or the
  question's own words);
- it is about the slot: it names the old value ("traded in the Corolla for a Tesla"), or a word the
  question asks with (besides whom it asks about), or the new value is of a strong shape (an amount in the
  same unit, the same kind of thing by its head noun), or a name sharing a word with the old one ("Dr
  Lindqvist" for "Dr Okafor", unless the extraction read it as another relation), or the extraction saw
  the subject change to it without placing the change (a generic relation: "upgraded to a Pixel 8"; a copula
  with only a preposition: "now I'm on a Samsung"; the "uses" a switch is written as);
- of several new names, the one the words have act now is the value ("Marco left for Paris; Aiko runs the
  kitchen as head chef");
- a many-valued relation (likes, has, uses) changes only when the old value is named with the new one
  (or a thing of its kind is said as a change: "swapped to oat milk"), and never when the observation's
  own statements wrote the slot (the write-time rules judged it then), or gave the new value to someone
  else ("my wife's manager is Greg").

Where the words name the old value and the extraction placed the value that took its place nowhere ("gave
up coffee, it's green tea for me now"), that value is the slot's (``_in_place_of``).

Asked for the holder of something ("who chairs the committee?" of "Carlos chairs committee"), the
subject is the value: a later observation naming the old holder, the thing held and one other name
("Carlos handed the chair to Ines") restates it. Observations are read oldest first, each against the
value then current, so a value changed twice ends at the last. When words nothing was extracted from
lead an answer, ``value_since`` reads the same way what their speaker said since.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemonet.model.views import ObservationView, StatementView
from mnemonet.truth.relevance import Question, about_subject, gives_amount, gives_clock
from mnemonet.truth.text import FIRST_PERSON, fold, matching_text, object_words, plain, points_back, terms
from mnemonet.truth.vocabulary import HABIT_RELATION, Vocabulary, rule_cardinality

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_CALENDAR = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december",
})
_TIMES = _CALENDAR | frozenset({
    "today", "tomorrow", "tonight", "yesterday", "week", "weekend", "month", "year", "morning", "afternoon",
    "evening", "night", "noon", "midnight", "later", "soon", "next", "spring", "summer", "autumn", "winter",
})
# An amount: an optional currency sign or month name before a number, an optional unit after it (glued, as
# in "8pm" and "12th", or a word after a space, as in "76 kg"); not a number glued to letters before it, which
# is part of a name ("Galaxy S23", "v2").
_AMOUNT = re.compile(
    r"(?P<pre>[$£€¥]|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+)?"
    r"(?<![a-z\d])(?P<num>\d+(?:[.,:]\d+)*)(?P<space>\s?)(?P<unit>%|[a-z]+\b)?", re.IGNORECASE)
# Words after a number that are no unit of it ("$10.99 a month", "7 because ...").
_NOT_UNITS = frozenset({
    "a", "an", "the", "per", "and", "or", "to", "for", "of", "in", "on", "at", "by", "because", "but", "with",
    "now", "this", "that", "last", "next", "each", "every", "from", "so", "then", "is", "was", "it",
})
_ORDINAL = frozenset({"st", "nd", "rd", "th"})
# A day after a time of day: " on the 10th", " on Friday", " on 3 May".
_DAY_AFTER = re.compile(r"\s+on\s+(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?(?:\s+(?:jan|feb|mar|apr|may|jun|jul|"
                        r"aug|sep|oct|nov|dec)[a-z]*)?|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*)\b", re.IGNORECASE)
# The word right before a number (a space between them), and the short weekdays a number after a word may date.
_LAST_WORD = re.compile(r"([A-Za-z][\w'’.&-]*)[ \t]+$")
_WEEKDAYS_SHORT = frozenset({"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"})
_DAY = {"date", "ordinal"}  # the forms of a day of a month, with its month or without
# The month after a day and its ordinal ("12th of July", "the 3rd of May").
_MONTH_AFTER = re.compile(r"\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
_CLOCK = frozenset({"am", "pm"})
# A name: a word with a capital letter, joined to the next by a space, a dot or a connecting word; not by
# "and", which lists two names more often than it joins one ("retired in May and Paulo replaced her").
_TOKEN = re.compile(r"[A-Za-z0-9][\w'’.&-]*")
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "the"})
_NUMBERED = re.compile(r"\d+(?:[.:]\d+)*")  # the number of a numbered name: "Room 4.12", "Gate 5"
# A sentence ends at a stop that is not a title's ("Dr. Kowalczyk", "St. Ives").
_SENTENCE_END = re.compile(r"(?<!\b[A-Z][a-z])(?<!\b[A-Z])[.!?]+\s+|\n")
# A preposition of place before what it places ("from home", "under the mat", "next to the station"), or an
# adverb of place ("upstairs", "abroad"): English's closed classes of both.
_PLACE_PHRASE = re.compile(
    r"\b(?:at|in|on|from|near|to|into|onto|outside|inside|behind|opposite|by|under|underneath|beneath|below|above|"
    r"over|beside|besides|between|among|along|across|past|around|round|through|beyond|toward|towards|within|up|down|"
    r"off|next\s+to|close\s+to|in\s+front\s+of)\s+[\w']"
    r"|\b(?:home|upstairs|downstairs|abroad|overseas|nearby|outdoors|indoors|next\s+door|away|locally|online|"
    r"here|there|everywhere|somewhere)\b", re.IGNORECASE)
_SINGULAR_FIRST = frozenset({"i", "me", "myself"})  # "I'll" is read as "i" and "ll"
# Words a name never is: the speaker's "I" and its contractions.
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'll", "i'd", "im", "ok", "okay"})
# What ends a thing's own words and starts a qualifier: "cow's milk in my coffee" -> "cow's milk".
_QUALIFIER = re.compile(r"\s(?:in|on|at|for|with|from|during|every|by|of)\s", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:'s)?")
_DETERMINERS = frozenset({
    "a", "an", "the", "my", "your", "his", "her", "our", "their", "its", "to", "for", "of", "in", "on", "at",
    "and", "or", "now", "is", "was", "be", "been", "with", "from", "this", "that", "some", "any", "just",
})


# The relations of any value (not attributes naming one): "has_property" says nothing of which slot, nor
# does a habit taken up or given up ("gave up coffee, it's green tea for me now").
_GENERIC = frozenset({"has_property", "has_value", "has_status", HABIT_RELATION})
_SWITCHED = "uses"  # what the extraction writes a switch as when it cannot tell the slot ("moved my account to Monzo")


@dataclass(frozen=True)
class Update:
    """A slot restated by a later observation: the statement as it now reads, and what says so."""

    statement: StatementView
    observation: ObservationView
    earlier: StatementView


def said_since(lead: StatementView, observations: list[ObservationView],
               drawn: dict[str, list[StatementView]], question: Question, vocabulary: Vocabulary) -> Update | None:
    """The lead's slot as the observations said since restate it, or None (see the module docstring).

    ``drawn`` maps an observation id to the statements extracted from it."""
    # Asked for the holder ("who chairs the committee?" of "Carlos chairs committee"), the subject is the value.
    holder = not about_subject(lead, question)
    current, update = lead, None
    for o in sorted((o for o in observations if o.created_at > lead.created_at), key=lambda o: o.created_at):
        if holder:
            changed = _new_holder(current, o, drawn.get(o.id, []), question)
            field = "subject"
        else:
            said = drawn.get(o.id, [])
            changed = _new_value(current, o, said, question, vocabulary) or _in_place_of(current, o, said, vocabulary)
            field = "object"
        if changed is not None:
            current = current.model_copy(update={
                field: changed, "created_at": o.created_at, "source": o.source, "negated": False,
                "tense": "present", "id": o.id, "derived_from": [o.id], "superseded_by": [], "revision": "change"})
            update = Update(statement=current, observation=o, earlier=lead)
    return update


def _new_holder(s: StatementView, o: ObservationView, drawn: list[StatementView], question: Question) -> str | None:
    """The holder ``o`` names in place of the subject of ``s``: it names the old holder, the thing held (or
    a word the question asks with) and exactly one other name ("Carlos handed the chair to Ines")."""
    if s.negated or not _has_name(s.subject):
        return None
    found = _names(s.subject, o.text)
    if found is None or not object_words(found[0]) <= object_words(o.text):
        return None
    thing = object_words(s.object) | set(question.words)
    if not thing & set(terms(o.text, o.source or "user")) - object_words(s.subject):
        return None
    names = _acting([n for n in dict.fromkeys(found[2]) if object_words(n) - object_words(question.text)
                     - object_words(o.source or "")], drawn)
    if len(names) != 1 or any(d.subject.casefold() == s.subject.casefold() and not d.negated
                              and d.object.casefold() == s.object.casefold() for d in drawn):
        return None  # ambiguous, or the old holder said again to hold it
    return names[0]


def _acting(names: list[str], drawn: list[StatementView]) -> list[str]:
    """Of several names, those the words have do something now ("Marco left for Paris; Aiko runs the
    kitchen as head chef": a holder acts, a place is gone to); one name stays as it is."""
    if len(names) < 2:
        return names
    return [n for n in names if any(d.subject.casefold() == n.casefold() and d.tense == "present"
                                    and not d.negated for d in drawn)]


def value_since(said: ObservationView, observations: list[ObservationView],
                anyone: bool = False) -> tuple[str, ObservationView] | None:
    """The value ``said`` names as its speaker restated it since, and the words that restate it last: a
    later observation by the same speaker (by anyone in the conversation, with ``anyone``), sharing a word
    with it, naming one other value of the same shape: an amount of the same distinctive form (a currency, a
    unit, a time of day ...: "my flight lands at 6pm" -> "scratch that, it lands at 8pm"), or a name beside
    the old one ("the on-call engineer is Bo" -> "Bo swapped on-call with Kim"); not words naming none of the
    names ``said`` does and others instead (someone else's). None unless ``said`` names exactly one amount, or
    else one name."""
    speaker = (said.source or "user").casefold()
    current, topic, out = said.text, _content(said.text), None
    named = [object_words(n) for n in name_runs(said.text)]
    for o in sorted((o for o in observations if o.created_at > said.created_at), key=lambda o: o.created_at):
        if (o.source or "user").casefold() != speaker and not anyone or not topic & _content(o.text):
            continue
        if named and not any(n <= object_words(o.text) for n in named) \
                and any(not object_words(n) <= topic for n in name_runs(o.text)):
            continue  # of someone else: "Olumide Bello: 4 days remaining" after "Nkechi Eze: 12 days remaining"
        value = _restated_amount(current, o.text) or _restated_name(current, o.text)
        if value is not None:
            current, out = value, (value, o)
    return out


def _restated_amount(said: str, text: str) -> str | None:
    if len(_AMOUNT.findall(said)) != 1:
        return None
    found = _amounts(said, text)
    return found[2][0] if found is not None and found[1] and len(set(found[2])) == 1 else None


def _restated_name(said: str, text: str) -> str | None:
    if _AMOUNT.search(said):
        return None
    found = _names(said, text)
    if found is None or not object_words(found[0]) <= object_words(text):
        return None
    return found[2][0] if len(set(found[2])) == 1 else None


def _content(text: str) -> frozenset[str]:
    """The content words of a text, without numbers and the speaker's "I"."""
    return frozenset(w for w in terms(text) if not w[:1].isdigit() and w != "user")


def gives_kind(text: str, question: Question, clause: bool = False, speaker: str | None = None) -> bool:
    """Whether ``text`` holds a value of the kind ``question`` asks for: a person's name for "who" (or its
    ``speaker``'s "I": "I'll drive instead"); a place for "where" (a name, or a phrase of place); a name for
    "what is ...'s name" and for "which <kind>" (or the kind: "which hospital"), a time for "when" (of day for
    "what time"), a number for "how much/many/old"; any other question takes any text. A ``clause`` cut from a
    turn may open with a name ("..., Marguerite wanted a break")."""
    words = set(_WORD.findall(question.text.casefold()))
    if question.clock:
        return gives_clock(text)
    if question.wh == "who":  # a person: no day of the week or month, no number ("Thursdays", "Room 4.12")
        asked = object_words(question.text)
        if speaker is not None and _SINGULAR_FIRST & set(_WORD.findall(text.casefold())) \
                and not object_words(speaker) <= asked:
            return True
        return any(object_words(n) - asked for n in name_runs(text, first_is_name=clause)
                   if not object_words(n) & _CALENDAR and not any(c.isdigit() for c in n))
    if question.wh == "where":  # a place: a name the question does not say (opening the words too: "Malaga this
        # year"), or a phrase of place ("from home")
        asked = object_words(question.text)
        return any(object_words(n) - asked for n in name_runs(text, first_is_name=True)) \
            or _PLACE_PHRASE.search(text) is not None
    if "name" in words or question.which:  # a name the question does not say, no day or month ("in February")
        asked = object_words(question.text) | _CALENDAR
        return any(object_words(n) - asked for n in name_runs(text, first_is_name=clause)) or (
            question.which is not None and question.which in terms(text))
    if question.wh == "when":
        return bool(_AMOUNT.search(text)) or bool(object_words(text) & _TIMES)
    if question.amount:
        return gives_amount(text)
    return True


def _new_value(s: StatementView, o: ObservationView, drawn: list[StatementView], question: Question,
               vocabulary: Vocabulary) -> str | None:
    """The object of ``s`` as ``o`` restates it, or None."""
    if s.negated:
        return None
    # The first shape the old value has that the words give a new value of ("senior analyst now" for a
    # "junior analyst at Deloitte" names no new employer, but a new rank).
    amounts = _amounts(s.object, o.text)
    found = next((f for f in (amounts, _names(s.object, o.text), _kinds(s.object, o.text))
                  if f is not None and f[2]), None)
    if found is None:
        return None
    old, strong, values = found
    text = o.text
    mentions_old = object_words(old) <= object_words(text)
    if not (_by_or_about(s, o) or mentions_old and _retold(s, o, drawn) or strong and _refers_back(s, o)):
        return None
    excluded = object_words(s.subject) | object_words(question.text) | object_words(o.source or "") \
        | object_words(question.asker) | object_words(old)
    values = _acting(list(dict.fromkeys(v for v in values if object_words(v) - excluded)), drawn)
    if len(values) != 1:
        return None
    asked = question.words - set(terms(question.asker, question.asker))
    if _names_someone(s.subject, question.asker):  # whom it is about is no topic; what of theirs is ("rent")
        asked -= set(terms(s.subject.partition("'s ")[0], question.asker))
    value, owner = values[0], s.subject.casefold().partition("'s ")[0]
    # "Dr Lindqvist" where "Dr Okafor" was, "iPhone 15" where "iPhone 12" was: a name sharing a word with
    # the old one, each with a word of its own, is a name of its kind.
    kin = _shares_a_word(old, value)
    # "upgraded to a Pixel 8": the extraction saw the subject change to the value but not which of its
    # slots changed (a generic relation); the slot asked about is that slot.
    unplaced = any(_unplaced(d, s, vocabulary) and object_words(value) & object_words(d.object) for d in drawn)
    # "landlord bumped it to 1100" where "950 euros" was: its teller's pronoun stands for the thing, and the
    # one new amount is its value.
    linked = mentions_old or bool(asked & set(terms(matching_text(o), o.source or "user"))) or unplaced \
        or found is amounts and _refers_back(s, o)
    predicate = vocabulary.canonical(s.predicate)
    # A name of the old one's kind is not enough when the extraction put it in another of the subject's
    # relations ("I met Dr Ferreira at the conference": meets, not the dentist).
    elsewhere = any(d.subject.casefold() in (s.subject.casefold(), owner)
                    and vocabulary.canonical(d.predicate) not in (*_GENERIC, predicate)
                    and object_words(value) <= object_words(d.object) for d in drawn)
    on_topic = linked or strong or kin and not elsewhere
    # "the project owner is Luis" identifies one holder by its name: an identity has one value at a time.
    identity = predicate in ("is", "is_a") and name_runs(s.object, first_is_name=True) == [s.object]
    many = not vocabulary.single_valued(predicate) and rule_cardinality(predicate) == "multi" \
        and vocabulary.spec(predicate).cardinality != "single_per_topic" and not identity
    # Two values of a many-valued relation may both hold: only naming the old one, an amount in the same
    # unit, another rank of the same kind of role ("lead designer" for "junior designer") or the same kind of
    # thing said as a change ("swapped to oat milk" where "cow's milk" was; "I also take oat milk" adds one)
    # replaces it.
    said_as_change = any(d.revision == "change" and not d.negated and object_words(value) <= object_words(d.object)
                         and d.subject.casefold() in (s.subject.casefold(), owner) for d in drawn)
    replaces = mentions_old or strong and (_AMOUNT.search(old) is not None or predicate == "is_a" or said_as_change)
    if not on_topic or many and not replaces:
        return None
    for d in drawn:
        if d.subject.casefold() == s.subject.casefold() and vocabulary.canonical(d.predicate) == predicate:
            return None  # understood: the slot was written, and judged when it was
        # "moved all my accounts from Barclays to Monzo": the owner's thing went from the old value to the new
        moved = any(e.subject == d.subject and object_words(old) <= object_words(e.object) for e in drawn)
        if object_words(value) <= object_words(d.object) and _someone_else(d.subject, s.subject, owner) and not moved:
            return None  # understood: someone else's value ("my wife's manager is Greg")
        if object_words(value) <= object_words(d.object) and _another_attribute(d.predicate, s):
            return None  # understood: another of the subject's attributes ("my favourite band is Wilco")
    if _DAY_AFTER.search(value) is not None:  # the new time's day stands for the old one's
        at = s.object.find(old)
        if at >= 0 and (after := _DAY_AFTER.match(s.object, at + len(old))) is not None:
            old += after.group(0)
    return s.object.replace(old, value, 1)


def _in_place_of(s: StatementView, o: ObservationView, drawn: list[StatementView],
                 vocabulary: Vocabulary) -> str | None:
    """The value ``o`` puts in place of the object of ``s``: it names the old value ("gave up coffee, it's
    green tea for me now" of "drinks black coffee") and the extraction read one change of the subject's
    that it could not place (a generic relation, "user has_value green tea"), to another value."""
    if s.negated or not _by_or_about(s, o):
        return None
    old = _core(s.object)
    words = _WORD.findall(old.casefold())
    if not words or fold(words[-1]) not in {fold(w) for w in _WORD.findall(o.text.casefold())}:
        return None  # the old value's head noun is not named
    values = {d.object for d in drawn if _unplaced(d, s, vocabulary) and not d.negated and d.tense == "present"
              and not object_words(d.object) & object_words(old)}
    return s.object.replace(old, values.pop(), 1) if len(values) == 1 else None


def _unplaced(d: StatementView, s: StatementView, vocabulary: Vocabulary) -> bool:
    """Whether ``d`` is a change of the subject of ``s`` (or its owner's) that its extraction could not place:
    a generic relation ("upgraded to a Pixel 8": user has_value Pixel 8), a copula with a preposition and no
    word of its own ("now I'm on a Samsung": is_on), or the "uses" a switch is written as ("switched to Monzo")."""
    predicate = vocabulary.canonical(d.predicate)
    placeless = predicate in (*_GENERIC, _SWITCHED) or not terms(predicate)
    return d.revision == "change" and placeless \
        and d.subject.casefold() in (s.subject.casefold(), s.subject.casefold().partition("'s ")[0])


def _by_or_about(s: StatementView, o: ObservationView) -> bool:
    """Whether ``o`` is by the subject of ``s`` (or its possessor: "user's coach") or names it."""
    owner = plain(s.subject).partition("'s ")[0]
    if owner == plain(o.source or "user"):
        return True
    named = object_words(s.subject) - {"user"}
    return bool(named & object_words(matching_text(o)))


def _retold(s: StatementView, o: ObservationView, drawn: list[StatementView]) -> bool:
    """Whether ``o``, naming the old value of ``s`` without its subject, is its teller saying it changed:
    the same speaker, and the extraction read a change ("our CI runs on Jenkins", then "we replaced Jenkins
    with GitHub Actions")."""
    return (o.source or "user").casefold() == (s.source or "user").casefold() \
        and any(d.revision == "change" for d in drawn)


def _refers_back(s: StatementView, o: ObservationView) -> bool:
    """Whether ``o`` is the teller of ``s`` speaking of something said before without naming it ("rent on the
    flat is £1150", then "landlord's put it up, we're paying £1275 now"): by the same speaker, with a pronoun
    standing for a thing."""
    return (o.source or "user").casefold() == (s.source or "user").casefold() \
        and points_back(o.text)


def _someone_else(subject: str, lead_subject: str, owner: str) -> bool:
    """Whether ``subject`` names another person or thing than the lead's (a name or a possession)."""
    if subject.casefold() in (lead_subject.casefold(), owner):
        return False
    mine, _, thing = subject.casefold().partition("'s ")
    if mine == owner and thing and object_words(thing) <= object_words(lead_subject):
        return False  # the same thing of the same owner, said shorter: "my MOT" for "my car's MOT"
    return "'s " in subject or subject[:1].isupper()


def _another_attribute(predicate: str, s: StatementView) -> bool:
    """Whether ``predicate`` is an attribute (``has_favourite_band``) naming what the slot of ``s`` does not
    (``has_favourite_author``); "has_coach" names what "user's running coach" does."""
    if not predicate.startswith("has_") or predicate in _GENERIC:
        return False
    named = object_words(predicate.removeprefix("has_").replace("_", " "))
    return not named <= object_words(f"{s.subject} {s.predicate.replace('_', ' ')}")


def _names_someone(subject: str, asker: str) -> bool:
    """Whether the subject is a person or a named thing (its name is then no topic of its own)."""
    owner = subject.partition("'s ")[0]
    return owner.casefold() in (asker.casefold(), "user") or owner[:1].isupper()


def _shares_a_word(old: str, new: str) -> bool:
    """Whether two names share a word and each has one of its own ("Dr Okafor", "Dr Lindqvist")."""
    a, b = object_words(old), object_words(new)
    return bool(a & b) and bool(a - b) and bool(b - a)


def _has_name(value: str) -> bool:
    """Whether a value holds a capitalised word: a name."""
    return any(any(c.isupper() for c in w) for w in value.split())


def _core(value: str) -> str:
    """A value without its qualifier: "cow's milk in user's coffee" -> "cow's milk"."""
    return _QUALIFIER.split(value, maxsplit=1)[0].strip()


def _amounts(obj: str, text: str) -> tuple[str, bool, list[str]] | None:
    """(the amount in ``obj``, whether its form is distinctive, the amounts of that form in ``text``): the
    form is a currency, a unit, an ordinal, a time of day or a month; a bare number is distinctive by its
    digits when it has three or more (a year, a code: "ends in 4411" -> "it ends in 4471"), and then meets
    numbers of as many digits; failing those, numbers of three digits or more, or bare numbers where ``obj``
    has a unit, not distinctive."""
    m = _AMOUNT.search(obj)
    if m is None or _numbers_a_name(m):
        return None  # "iPhone 12" is a name, restated by a name ("Pixel 8"), not by a number
    pre, unit = _form(m)
    bare, digits = (pre, unit) == ("", ""), len(re.sub(r"\D", "", m.group("num")))
    out, longer_or_shorter = [], []
    for n in _AMOUNT.finditer(text):
        if _numbers_a_name(n):
            continue  # "BA 287", "Pixel 8": the number of a name is no amount
        their_pre, their_unit = _form(n)
        # A bare number meets a number followed by any word ("May 3" and "May 17 because ..."), not a glued unit;
        # a date meets a day said without its month ("Thursday 5th June", then "now Thursday the 12th").
        same_unit = their_unit == unit or not unit and bool(n.group("space")) or {unit, their_unit} == _DAY
        their_digits = len(re.sub(r"\D", "", n.group("num")))
        if their_pre != pre or n.group("num") == m.group("num"):
            continue
        if not same_unit:
            if unit and not their_unit:  # "raised my step goal to 10000" where "8000 steps" was: the unit dropped
                longer_or_shorter.append(_amount_text(n, False))
            continue
        if not bare or digits < 3 or their_digits == digits:
            # a time of day with its day is one value: "moved the MOT to 2pm on the 10th"
            out.append(_amount_text(n, bool(unit)) + (_day_after(n) if unit == "clock" else ""))
        elif their_digits >= 3:
            longer_or_shorter.append(_amount_text(n, bool(unit)))
    if not out and longer_or_shorter:
        # "1,020" where "950" was, "10000" where "8000 steps" was: no amount of the old one's shape, so no
        # value by its shape alone; a value of the slot still when the words are about it (``_new_value`` asks
        # for that when it is not strong).
        return _amount_text(m, bool(unit)), False, longer_or_shorter
    return _amount_text(m, bool(unit)), not bare or digits >= 3, out


def _numbers_a_name(m: re.Match[str]) -> bool:
    """Whether the amount ``m`` is the number of a name: after a capitalised word that is no weekday or month
    and no "I" ("iPhone 12", "Gate 5", "BA 287"; not "Thu 10:00", "May 3", "I'm 34")."""
    if m.group("pre"):
        return False
    before = _LAST_WORD.search(m.string, 0, m.start())
    if before is None:
        return False
    word = before.group(1).casefold().rstrip(".")
    return any(c.isupper() for c in before.group(1)) and word not in _NOT_NAMES | _CALENDAR | _WEEKDAYS_SHORT \
        and word[:3] not in _MONTHS


def _amount_text(m: re.Match[str], with_unit: bool) -> str:
    """The amount as written, with its unit when the unit is part of it ("76 kg", not "$10.99 a"), and the
    month after a day ("12th of July")."""
    if _form(m) == ("", "date"):
        unit = m.group("unit") or ""
        day = unit if unit.casefold() in _ORDINAL or unit[:3].casefold() in _MONTHS else ""
        month = _MONTH_AFTER.match(m.string, m.end())
        return f"{m.group('pre') or ''}{m.group('num')}{m.group('space') if day else ''}{day}".strip() + \
            (month.group(0).rstrip() if month else "")
    return (m.group(0) if with_unit else (m.group("pre") or "") + m.group("num")).strip()


def _day_after(m: re.Match[str]) -> str:
    """The day said right after the amount ``m`` ("2pm *on the 10th*", "9:30 on Friday"), or ""."""
    day = _DAY_AFTER.match(m.string, m.end())
    return day.group(0).rstrip() if day else ""


def _form(m: re.Match[str]) -> tuple[str, str]:
    """(what comes before the number, its unit), with every way of writing a day of a month one form ("date"):
    "June 7th", "7 June", "12th of July"."""
    pre = (m.group("pre") or "").strip().casefold()
    unit = (m.group("unit") or "").casefold()
    if pre[:3] in _MONTHS or unit in _MONTHS or unit[:3] in _MONTHS and unit in _CALENDAR \
            or _MONTH_AFTER.match(m.string, m.end()):
        return "", "date"
    if m.group("space") and unit in _NOT_UNITS:
        unit = ""
    if unit in _ORDINAL:
        unit = "ordinal"
    elif unit in _CLOCK:
        unit = "clock"
    elif unit.endswith("s") and len(unit) > 3:
        unit = unit[:-1]
    return pre, unit


def _names(obj: str, text: str) -> tuple[str, bool, list[str]] | None:
    """(the one name in ``obj``, False, the other names in ``text`` of its kind: a weekday or month, or not;
    "Dr Nguyen" is another name than "Dr Patel", "Professor Adeyemi" the same as "Adeyemi"). Of an object
    with several names ("Spanish on Duolingo"), the one ``text`` names again is the one it changes."""
    mine = name_runs(obj, first_is_name=True)
    if len(mine) > 1:  # "Spanish on Duolingo": the one of its names the text says again is the one it changes
        mine = [n for n in mine if object_words(n) <= object_words(text)]
    if len(mine) != 1:
        return None
    old, known = mine[0], object_words(mine[0])
    calendar = bool(known & _CALENDAR)
    out = [n for n in name_runs(text) if bool(object_words(n) & _CALENDAR) == calendar
           and not (object_words(n) <= known or known <= object_words(n)) and not object_words(n) <= object_words(obj)]
    return old, False, out


def values_named(text: str) -> list[frozenset[str]]:
    """The values ``text`` names, each as its words: its names, any capitalised word counting ({"red", "lion"}
    of "Red Lion works"), and its numbers ({"8:15"})."""
    names = [object_words(n.replace("'s", "").replace("’s", "")) for n in name_runs(text, first_is_name=True)]
    return [v for v in names if v] + [frozenset({m.group("num")}) for m in _AMOUNT.finditer(text)]


def name_runs(text: str, first_is_name: bool = False) -> list[str]:
    """Runs of capitalised words, broken by punctuation; a sentence's capitalised first word only if
    ``first_is_name`` or the sentence names it again ("Soylent made me an offer, I'm at Soylent now"; not
    "Down to 76 kg")."""
    runs: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        tokens = [(m.group(0), sentence[prev_end:m.start()].strip() != "") for prev_end, m in _spaced(sentence)]
        words = [t for t, _ in tokens]
        run: list[str] = []
        for i, (tok, after_mark) in enumerate([*tokens, ("", True)]):
            if run and after_mark:
                runs.append(" ".join(run).rstrip(".,!?"))
                run = []
            capital = any(c.isupper() for c in tok) and tok.casefold().rstrip(".") not in _NOT_NAMES
            opener = i == 0 and not first_is_name and tok[:1].isupper() and tok[1:].islower() and tok not in words[1:]
            if capital and not opener:
                run.append(tok)
            elif run and (_NUMBERED.fullmatch(tok.rstrip(".,!?")) or tok.casefold() in _CONNECTORS
                          and i + 1 < len(words) and words[i + 1][:1].isupper()):
                run.append(tok)
            elif run:
                runs.append(" ".join(run).rstrip(".,!?"))
                run = []
    return runs


def _spaced(sentence: str) -> list[tuple[int, re.Match[str]]]:
    """The word tokens of ``sentence``, each with where the previous one ended (to see punctuation between)."""
    out, end = [], 0
    for m in _TOKEN.finditer(sentence):
        out.append((end, m))
        end = m.end()
    return out


def _kinds(obj: str, text: str) -> tuple[str, bool, list[str]] | None:
    """(the thing in ``obj``, True, the same kind of thing in ``text``): by its head noun, with other words
    before it ("oat milk" for "cow's milk")."""
    old = _core(obj)
    words = _WORD.findall(old.casefold())
    if len(words) < 2:
        return None
    head, known = fold(words[-1]), object_words(old)
    out = []
    for sentence in _SENTENCE_END.split(text):
        tokens = _WORD.findall(sentence.casefold())
        for i, tok in enumerate(tokens):
            if fold(tok) != head:
                continue
            before: list[str] = []
            for w in reversed(tokens[max(0, i - 2):i]):
                if w in _DETERMINERS or w.endswith("'s") or w in FIRST_PERSON or w in _TIMES:
                    break
                before.insert(0, w)
            # the old thing said again with another word ("still has oat milk") is no new kind
            if before and not known <= object_words(" ".join(before + [tok])):
                out.append(" ".join([*before, tok]))
    return old, True, out
