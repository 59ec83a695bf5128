"""The observation is the record (``truth.record``): a slot's newer value read by the shape of the value.

Each row: what was stated, what its speaker (or someone about its subject) said later, the question;
and the slot's value as the later words restate it, or None when they restate nothing. The sentences are
written for this table, in several shapes (names, amounts, times, kinds of a role), with the rows that
must not restate: another slot, another person, a many-valued relation both hold, an ambiguous reading.
"""

from __future__ import annotations

import pytest

from mnemonet.model.views import ObservationView, StatementView
from mnemonet.truth.record import gives_kind, said_since, value_since
from mnemonet.truth.relevance import Question
from mnemonet.truth.vocabulary import default_vocabulary

ROWS = [
    # a name where a name was: the old one named beside it, or a word of the question
    (("user", "drives", "Corolla"), ("user", "I traded in the Corolla for a Tesla Model 3."),
     "what car do I drive?", "Tesla Model 3"),
    (("user", "has_doctor", "Dr Patel"), ("user", "Dr Patel retired so I'm seeing Dr Nguyen now"),
     "who is my doctor?", "Dr Nguyen"),
    (("head of chemistry department", "is", "Professor Adeyemi"),
     ("user", "Professor Adeyemi stepped down and Dr. Kowalczyk is now head of the chemistry department."),
     "who is the head of the chemistry department?", "Dr. Kowalczyk"),
    (("gustavo", "drives", "Fiat"), ("gustavo", "sold the Fiat, bought a Renault"),
     "what car does Gustavo drive?", "Renault"),
    # an amount in the same unit, a time of the same form
    (("user", "weighs", "82 kg"), ("user", "Down to 76 kg!!"), "how much do I weigh?", "76 kg"),
    (("concert", "happens_on", "5th"), ("user", "concert's been bumped to the 12th, venue issues"),
     "when is the concert?", "12th"),
    (("launch", "happens_on", "May 3"), ("user", "launch slipped to May 17 because of QA"),
     "when is the launch?", "May 17"),
    # a day of a month in any of its forms is a date: "June 7th", "12th of July", "3 May"
    (("stag party", "happens_on", "weekend of June 7th"),
     ("user", "the stag party got bumped, it's now the 12th of July"), "when is the stag party?",
     "weekend of 12th of July"),
    (("wedding", "happens_on", "14 June"), ("user", "the wedding moved to June 3rd"), "when is the wedding?",
     "June 3rd"),
    (("leaving party", "happens_on", "Thursday 5th June"),
     ("user", "leaving party got pushed back, now Thursday the 12th"), "when is the leaving party?", "Thursday 12th"),
    (("user's rent", "has_value", "$1,200 a month"), ("user", "landlord bumped the rent to $1,350"),
     "what is my rent?", "$1,350 a month"),
    # two names listed with "and" are two names, not one ("March and Mrs Grant")
    (("user", "has_landlord", "Mr Osei"), ("user", "Mr Osei sold up in March and Mrs Grant is the landlord now"),
     "who is my landlord?", "Mrs Grant"),
    # of an object with several names, the one said again is the one changed
    (("user", "learns", "German on Babbel"), ("user", "gave up Babbel, it's Busuu for me now"),
     "which app do I learn German with?", "German on Busuu"),
    # a description identified by a name has one holder at a time; a description is no name ("Python developer")
    (("release manager", "is", "Ayesha"), ("user", "the release manager role went to Bilal this cycle"),
     "who is the release manager?", "Bilal"),
    (("Ana", "is_a", "Python developer"), ("user", "Ana picked up Rust this year"), "what is Ana?", None),
    # a bare number of three digits or more is a value of its shape (a code, a year); of fewer, it is not
    (("user's membership card", "ends_in", "3306"), ("user", "scratch that, it ends in 3366"),
     "what does my membership card end in?", "3366"),
    (("user's membership card", "ends_in", "3306"), ("user", "scratch that, it ends in 66"),
     "what does my membership card end in?", None),
    # another rank of the same kind of role
    (("Maya", "is_a", "junior designer"), ("user", "Maya's lead designer now, well deserved."),
     "what is Maya's role?", "lead designer"),
    # a number restated without its unit, when the words are about the slot
    (("user's daily step goal", "has_value", "8000 steps"), ("user", "I raised my step goal to 10000"),
     "what is my daily step goal?", "10000"),
    (("user", "weighs", "82 kg"), ("user", "I bought 3 books today"), "how much do I weigh?", None),
    # the same thing of the same owner said shorter; another owner's thing of that name is no restatement
    (("user's car's MOT", "happens_on", "10 March"), ("user", "the garage rescheduled my MOT to 24 March"),
     "when is my car's MOT?", "24 March"),
    (("user's car's MOT", "happens_on", "10 March"), ("user", "my brother's MOT is on 24 March"),
     "when is my car's MOT?", None),
    # a value of one shape the words do not give leaves another shape to read ("Deloitte" is not said
    # again, "senior analyst" is); the old thing said again with a verb is no new kind
    (("user", "is_a", "junior analyst at Deloitte"), ("user", "got promoted today!! senior analyst now"),
     "what is my job title?", "senior analyst at Deloitte"),
    (("user", "puts", "oat milk in user's coffee"), ("user", "my husband still has oat milk"),
     "what milk do I put in my coffee?", None),
    # nothing restated
    (("user", "drives", "Corolla"), ("user", "I met Anna at the Louvre"), "what car do I drive?", None),
    (("user", "likes", "Paris"), ("user", "Rome is lovely"), "what cities do I like?", None),
    (("user", "has_manager", "Ruth"), ("user", "My wife's manager is Greg."), "who is my manager?", None),
    (("user", "has_favourite_author", "Le Guin"), ("user", "my favourite band is Wilco"),
     "who is my favourite author?", None),
    (("user", "weighs", "82 kg"), ("user", "bought 2 kg and 3 kg bags of rice"), "how much do I weigh?", None),
    (("user", "has", "cat"), ("user", "I have a dog too"), "what pets do I have?", None),
    # of two new names, the one the words have act now holds the role; a place is gone to
    (("ward sister", "is", "Moira"), ("user", "Moira retired to Cornwall, Bisi runs the ward as sister now"),
     "who is the ward sister?", "Bisi"),
    (("ward sister", "is", "Moira"), ("user", "Moira retired to Cornwall, Bisi is on the ward a lot"),
     "who is the ward sister?", None),
    # a name sharing a word with the old one (a title, a product line) is of its kind; unless the words
    # were read as another of the subject's relations
    (("user", "has_dentist", "Dr Moss"), ("user", "the practice moved me over to Dr Ferreira"),
     "who is my dentist?", "Dr Ferreira"),
    (("user", "has_dentist", "Dr Moss"), ("user", "I met Dr Ferreira at the conference"),
     "who is my dentist?", None),
    # the extraction saw a change to the value, not which slot changed: the slot asked about
    (("user's laptop", "has_value", "ThinkPad"), ("user", "finally upgraded to a Framework 13"),
     "what laptop do I have?", "Framework 13"),
    (("user's laptop", "has_value", "ThinkPad"), ("user", "my brother upgraded to a Framework 13"),
     "what laptop do I have?", None),
    # what the words put in place of the old value, named, when the extraction could not place it
    (("user", "drinks", "oat flat white"), ("user", "gave up the flat white, it's matcha for me now"),
     "what do I drink?", "matcha"),
    (("user", "drinks", "oat flat white"), ("user", "it's matcha for me these days"), "what do I drink?", None),
    # the same kind of thing said as a change replaces a value of a many-valued relation; added, it does not
    (("user", "cooks_with", "dairy butter"), ("user", "switched to vegan butter"),
     "what butter do I cook with?", "vegan butter"),
    (("user", "cooks_with", "dairy butter"), ("user", "I keep some vegan butter too"),
     "what butter do I cook with?", None),
    # a number of another length is the slot's when the words are about it
    (("user's rent", "has_value", "950"), ("user", "the landlord put the rent up to 1,020"),
     "how much is my rent?", "1,020"),
    (("user's rent", "has_value", "950"), ("user", "paid 1,020 for the sofa"), "how much is my rent?", None),
    (("yara", "lives_in", "Haifa"), ("user", "Yara lives in Tel Aviv."), "where does Yara live?", None),
    # its teller's pronoun stands for the thing: its one new amount is the value, said without the unit
    (("user's rent", "has_value", "950 euros"), ("user", "landlord bumped it to 1100 from this month ugh"),
     "how much is my rent?", "1100"),
    (("user's rent", "has_value", "950 euros"), ("user", "paid 1100 for the sofa today"), "how much is my rent?",
     None),
    # a time of day with its day is one value, in place of the old time and its day
    (("car's MOT", "happens_on", "9am"), ("user", "garage called, they've moved the MOT to 2pm on the 10th"),
     "when is the car's MOT?", "2pm on the 10th"),
    (("car's MOT", "happens_on", "9am on the 3rd"), ("user", "garage called, they've moved the MOT to 2pm on the 10th"),
     "when is the car's MOT?", "2pm on the 10th"),
    (("car's MOT", "happens_on", "9am on Friday"), ("user", "garage called, they've moved the MOT to 2pm"),
     "when is the car's MOT?", "2pm on Friday"),
    # a day and a month where a day and another month were: one form of date
    (("graduation", "happens_on", "21 June"), ("user", "they brought graduation forward to 30 May"),
     "when is graduation?", "30 May"),
    # a number glued to letters is part of a name, no amount ("Galaxy S23" is no "23" for "Pixel 7")
    (("user's phone", "has_value", "Pixel 7"), ("user", "cracked the screen, so I'm on an old Galaxy S9 now"),
     "what phone do I have?", "Galaxy S9"),
    (("user's phone", "has_value", "Pixel 7"), ("user", "my sister is on a Galaxy S9 now"),
     "what phone do I have?", None),
    # the number of a name is no amount: "Pixel 8" restates "iPhone 12" as a name, never as "iPhone 8"
    (("user's phone", "has_value", "iPhone 12"), ("user", "upgraded to a Pixel 8 last weekend"),
     "what phone do I have?", "Pixel 8"),
    (("user's flight", "departs_at", "11:40"), ("user", "no, BA 287 leaves at 14:10"),
     "when does my flight depart?", "14:10"),
    # a change the extraction could not place: a copula with a preposition, or a switch written as "uses"
    (("user", "trains_at", "PureGym"), ("user", "cancelled that and signed up with Anytime Fitness instead"),
     "which gym do I train at?", "Anytime Fitness"),
    # the owner's thing moved from the old value to the new is the owner's change; another's thing is not
    (("user", "insures_with", "Aviva"), ("user", "moved both cars from Aviva to Direct Line"),
     "who do I insure with?", "Direct Line"),
    (("user", "insures_with", "Aviva"), ("user", "my sister's van went over to Direct Line"),
     "who do I insure with?", None),
]

# What the observation's extraction wrote (the write-time rules judged these already).
DRAWN: dict[str, list[tuple[str, ...]]] = {
    "My wife's manager is Greg.": [("user's wife", "has_manager", "Greg")],
    "my favourite band is Wilco": [("user", "has_favourite_band", "Wilco")],
    "Yara lives in Tel Aviv.": [("yara", "lives_in", "Tel Aviv")],
    "I met Dr Ferreira at the conference": [("user", "meets", "Dr Ferreira")],
    "I raised my step goal to 10000": [("user", "has_step_goal", "10000", "change")],
    "the garage rescheduled my MOT to 24 March": [("user's MOT", "happens_on", "24 March", "change")],
    "my brother's MOT is on 24 March": [("user's brother's MOT", "happens_on", "24 March")],
    "gave up the flat white, it's matcha for me now": [
        ("user", "gives_up", "flat white"), ("user", "has_value", "matcha", "change")],
    "it's matcha for me these days": [("user", "has_value", "matcha", "change")],
    "switched to vegan butter": [("user", "uses", "vegan butter", "change")],
    "moved both cars from Aviva to Direct Line": [
        ("user's cars", "located_in", "Aviva"), ("user's cars", "located_in", "Direct Line", "change")],
    "my sister's van went over to Direct Line": [("user's sister's van", "goes_to", "Direct Line", "change")],
    "cracked the screen, so I'm on an old Galaxy S9 now": [("user", "is_on", "old Galaxy S9", "change")],
    "upgraded to a Pixel 8 last weekend": [("user", "has_value", "Pixel 8", "change")],
    "my sister is on a Galaxy S9 now": [("user's sister", "is_on", "Galaxy S9", "change")],
    "cancelled that and signed up with Anytime Fitness instead": [("user", "uses", "Anytime Fitness", "change")],
    "I keep some vegan butter too": [("user", "keeps", "vegan butter")],
    "Moira retired to Cornwall, Bisi runs the ward as sister now": [
        ("Moira", "retires_to", "Cornwall"), ("Bisi", "runs", "ward as sister")],
    "Moira retired to Cornwall, Bisi is on the ward a lot": [("Moira", "retires_to", "Cornwall")],
    "finally upgraded to a Framework 13": [("user", "has_value", "Framework", "change")],  # the name cut short
    "my brother upgraded to a Framework 13": [("user's brother", "has_value", "Framework 13", "change")],
}


def _statement(id: str, subject: str, predicate: str, obj: str, revision: str | None = None, *, at: int,
               derived: str = "", source: str | None = None) -> StatementView:
    return StatementView(id=id, subject=subject, predicate=predicate, object=obj, confidence=0.9, created_at=at,
                         source=source or subject.partition("'s ")[0], derived_from=[derived] if derived else [],
                         revision=revision)


@pytest.mark.parametrize(("speaker", "text", "expected"), [
    ("user", "landlord's put it up, we're paying £1275 now", "£1275 a month"),
    ("bob", "landlord's put it up, we're paying £1275 now", None),  # not its teller
    ("user", "paid £40 for the gym today", None),  # no word standing for it
])
def test_its_teller_restates_a_thing_by_a_pronoun_and_a_value_of_its_shape(
    speaker: str, text: str, expected: str | None,
) -> None:
    lead = _statement("st-1", "rent on the flat", "has_value", "£1150 a month", at=1, source="user")
    said = ObservationView(id="obs-2", text=text, source=speaker, created_at=2)
    update = said_since(lead, [said], {}, Question.read("how much is the rent on the flat?", "user"),
                        default_vocabulary())
    assert (update.statement.object if update else None) == expected


@pytest.mark.parametrize(("stated", "later", "ask", "expected"), ROWS, ids=[r[1][1][:40] for r in ROWS])
def test_a_later_utterance_restates_the_slot_by_the_shape_of_its_value(
    stated: tuple[str, str, str], later: tuple[str, str], ask: str, expected: str | None,
) -> None:
    lead = _statement("st-1", *stated, at=1)
    said = ObservationView(id="obs-2", text=later[1], source=later[0], created_at=2)
    drawn = {said.id: [_statement(f"st-d{i}", *t, at=2, derived=said.id)
                       for i, t in enumerate(DRAWN.get(later[1], []))]}
    update = said_since(lead, [said], drawn, Question.read(ask, "user"), default_vocabulary())
    if expected is None:
        assert update is None, f"restated as {update.statement.object!r}" if update else ""
    else:
        assert update is not None, "not restated"
        assert update.statement.object == expected
        assert update.observation.id == "obs-2" and update.earlier.id == "st-1"


@pytest.mark.parametrize(("speaker", "drawn", "expected"), [
    ("user", [("user", "uses", "GitHub Actions", "change")], "GitHub Actions"),
    ("bob", [("bob", "uses", "GitHub Actions", "change")], None),  # another speaker's team
    ("user", [("user", "likes", "GitHub Actions")], None),  # no change read in the words
])
def test_the_teller_of_a_value_naming_it_replaced_restates_it(
    speaker: str, drawn: list[tuple[str, str, str, str]], expected: str | None,
) -> None:
    lead = StatementView(id="st-1", subject="CI", predicate="runs_on", object="Jenkins", confidence=0.9,
                         created_at=1, source="user")
    said = ObservationView(id="obs-2", text="we replaced Jenkins with GitHub Actions", source=speaker, created_at=2)
    update = said_since(lead, [said], {said.id: [_statement(f"st-d{i}", *t, at=2, derived=said.id)
                                                 for i, t in enumerate(drawn)]},
                        Question.read("what does our CI run on?", "user"), default_vocabulary())
    assert (update.statement.object if update else None) == expected


def test_a_value_changed_twice_ends_at_the_last() -> None:
    lead = _statement("st-1", "wedding", "happens_on", "June 14", at=1)
    said = [ObservationView(id="obs-2", text="the wedding got pushed back to September 6", source="user", created_at=2),
            ObservationView(id="obs-3", text="wedding moved again, now October 2", source="user", created_at=3)]
    update = said_since(lead, said, {}, Question.read("when is the wedding?", "user"), default_vocabulary())
    assert update is not None and update.statement.object == "October 2" and update.observation.id == "obs-3"


@pytest.mark.parametrize(("first", "aside", "restating", "value"), [
    # an amount: only its speaker restates it
    ("my flight lands at 6pm", ("bob", "bob: my flight lands at 9pm"), "scratch that, it lands at 8pm", "8pm"),
    # a name: restated beside the old one
    ("the on-call engineer this week is Bo", ("user", "Kim is on holiday"), "Bo swapped on-call with Kim", "Kim"),
    # an amount of someone else's, in between, restates nothing: it names none of the names the words did
    ("Leave balance update - Nkechi Eze: 12 days remaining",
     ("user", "Leave balance update - Olumide Bello: 4 days remaining"),
     "Leave balance update - Nkechi Eze: 10 days remaining", "10 days"),
])
def test_a_value_said_in_words_alone_is_restated_by_its_speaker(
    first: str, aside: tuple[str, str], restating: str, value: str,
) -> None:
    said = ObservationView(id="obs-1", text=first, source="user", created_at=1)
    later = [ObservationView(id="obs-2", text=aside[1], source=aside[0], created_at=2),
             ObservationView(id="obs-3", text=restating, source="user", created_at=3)]
    assert value_since(said, later) == (value, later[1])
    assert value_since(said, later[:1]) is None


def test_a_holder_asked_for_is_restated_by_a_later_holder() -> None:
    lead = _statement("st-1", "Carlos", "chairs", "committee", at=1)
    said = ObservationView(id="obs-2", text="Carlos handed the chair to Ines", source="user", created_at=2)
    question = Question.read("who chairs the committee?", "user")
    update = said_since(lead, [said], {}, question, default_vocabulary())
    assert update is not None and update.statement.subject == "Ines" and update.statement.object == "committee"
    aside = ObservationView(id="obs-3", text="Carlos had lunch with Ines", source="user", created_at=3)
    assert said_since(lead, [aside], {}, question, default_vocabulary()) is None


@pytest.mark.parametrize(("text", "ask", "gives"), [
    ("my sister is a nurse", "what is my sister's name?", False),
    ("my sister Ana is a nurse", "what is my sister's name?", True),
    ("the retro moved", "when is the retro?", False),
    ("the retro moved to Thursday", "when is the retro?", True),
    ("rent went up again", "how much is my rent?", False),
    ("rent went up to 1400", "how much is my rent?", True),
    ("I like the new office", "what do I think of the office?", True),
])
def test_words_lead_only_with_a_value_of_the_kind_asked(text: str, ask: str, gives: bool) -> None:
    assert gives_kind(text, Question.read(ask, "user")) is gives


def test_in_a_conversation_anyone_may_restate_a_value() -> None:
    said = ObservationView(id="obs-1", text="flat viewing is Wednesday at 5pm", source="gita", created_at=1)
    later = [ObservationView(id="obs-2", text="agent says 6pm is free", source="gita", created_at=2),
             ObservationView(id="obs-3", text="fine, 6:30pm Wednesday, see you there", source="omar", created_at=3)]
    assert value_since(said, later, anyone=True) == ("6:30pm", later[1])
    assert value_since(said, later) is None  # only its speaker's words, who said nothing sharing a word with it
