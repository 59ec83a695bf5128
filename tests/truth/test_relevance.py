"""What a question asks and what answers it (``truth.relevance``): the attribute, the time of day, the clause."""

from __future__ import annotations

import pytest

from mnemonet.model.views import StatementView
from mnemonet.truth.record import gives_kind
from mnemonet.truth.relevance import ANSWERS, Question, answering_part, score
from mnemonet.truth.text import fold
from mnemonet.truth.vocabulary import default_vocabulary


@pytest.mark.parametrize(("text", "question", "part"), [
    # the clause covering the most of the question, when one does
    ("Priya stood down at Tuesday's meeting and Declan Walsh was voted in as chair of planning",
     "who chairs the planning committee now?", "Declan Walsh was voted in as chair of planning"),
    ("Oluwaseun is the new book club host, Marguerite wanted a break", "who hosts book club?",
     "Oluwaseun is the new book club host"),
    ("Tomasz is out sick; Aiyana is covering as on-call lead for payments", "who's the on-call lead for payments?",
     "Aiyana is covering as on-call lead for payments"),
    # no clause covers two words of it: the whole turn ("quit the kitchen" names only whom it asks of)
    ("Haruto quit the kitchen and he's driving deliveries for a bakery now", "what does Haruto do for work?",
     "Haruto quit the kitchen and he's driving deliveries for a bakery now"),
    # two clauses cover as much: the whole turn
    ("the plumber can't come Wednesday, the plumber will come Thursday", "when is the plumber coming?",
     "the plumber can't come Wednesday, the plumber will come Thursday"),
    # the clause covering most gives no value of the kind asked (a number): the whole turn
    ("a new boy joined Aisha's class on Monday, so that's 24 now", "how many kids are in Aisha's class?",
     "a new boy joined Aisha's class on Monday, so that's 24 now"),
    # of a turn about several people, the clause naming the one asked of, with a value of the kind asked
    ("rota for Saturday: Anneke starts at 8am, Rahul comes in at 10am and Kiri's on the 2pm shift",
     "when does Rahul start on Saturday?", "Rahul comes in at 10am"),
    # "and" between two names is no clause break
    ("my kids are Amara and Tobi", "what are my kids called?", "my kids are Amara and Tobi"),
])
def test_the_clause_that_answers_is_the_part_quoted(text: str, question: str, part: str) -> None:
    asked = Question.read(question, "user")
    gives = None if gives_kind("", asked) else (lambda words: gives_kind(words, asked, clause=True))
    assert answering_part(text, asked, "user", gives) == part


@pytest.mark.parametrize(("question", "attribute", "named"), [
    ("what's the registration number of Chidi's car?", "number", None),  # an attribute of a thing, any attribute
    ("what is the capital of France?", "capital", None),
    ("what's the name of the bakery Lena works at?", "name", "bakery"),  # a name, of that thing
    ("what's Mr Petrov's phone number?", "number", None),
])
def test_the_attribute_a_question_asks_of_a_thing(question: str, attribute: str, named: str | None) -> None:
    asked = Question.read(question, "user")
    assert (asked.attribute, asked.named) == (fold(attribute), fold(named) if named else None)


@pytest.mark.parametrize(("question", "said", "answers"), [
    ("what time is my flight to Lisbon?", ("user", "flies_to", "Lisbon on the 9th"), False),  # a day, no time of it
    ("what time is my flight to Lisbon?", ("user", "flies_to", "Lisbon at 6:40am"), True),
    ("what time is my flight to Lisbon?", ("user", "flies_to", "Lisbon in the morning"), True),
    ("what time is the retro?", ("retro", "happens_on", "Friday at 2pm"), True),
    ("what time is the retro?", ("retro", "happens_on", "Friday"), False),
    # a name with or without its accent, capitalised or not
    ("what car does Björn drive?", ("björn", "drives", "Volvo XC60"), True),
    # an amount asked is given by a value with digits, whatever its relation
    ("how much is the boiler service?", ("annual boiler service", "costs", "£85"), True),
    ("how much is the boiler service?", ("annual boiler service", "is_due", "next week"), False),
    ("how many kids does Priyanka have?", ("Priyanka", "has", "Arjun"), False),
    ("how many kids does Priyanka have?", ("Priyanka", "has", "two kids"), True),
    # "which <kind>" picks one out: by a name, or naming the kind
    ("which hospital does Tariq work at?", ("Tariq", "works_as", "paramedic"), False),
    ("which hospital does Tariq work at?", ("Tariq", "works_at", "St James's"), True),
    ("which hospital does Tariq work at?", ("Tariq", "works_at", "the children's hospital"), True),
    # ... by a name the question does not say already, no day or month
    ("which hotel are we staying at in Hokkaido?", ("user", "has_property", "off to Hokkaido in February"), False),
    ("which hotel are we staying at in Hokkaido?", ("user", "stays_at", "Hotel Niseko in Hokkaido"), True),
    ("what's the registration number of Chidi's car?", ("Chidi", "has_car", "blue Skoda Octavia"), False),
    ("what's the registration number of Chidi's car?", ("Chidi's car", "has_registration_number", "KX19 ABC"), True),
    # a yes-or-no question naming one thing: another value of a many-valued relation says nothing of it
    ("do I have a dog?", ("user", "has", "cat named Miso"), False),
    ("do I have a dog?", ("user", "has", "dog named Pepper"), True),
    ("do I play the drums?", ("user", "plays", "guitar"), False),
    ("do I live in a flat?", ("user", "lives_in", "house in Leeds"), True),  # one value at a time: it tells
    # the holder of a thing: the statement says the whole question ("who coaches the under-9 team?" of "Priya
    # coaches the under-9s", the question naming the whole object, answers too: tests/service/test_answer.py)
    ("who's driving to the lake?", ("Rosa", "drives", "everyone to the lake on Sunday"), True),
    ("who's driving to the lake?", ("Rosa", "drives", "her kids to school"), False),
])
def test_a_statement_answers_only_with_what_is_asked(question: str, said: tuple[str, str, str], answers: bool) -> None:
    statement = StatementView(id="st-1", subject=said[0], predicate=said[1], object=said[2], confidence=0.9)
    assert (score(statement, Question.read(question, "user"), default_vocabulary()) >= ANSWERS) is answers


@pytest.mark.parametrize(("text", "gives"), [
    ("on-call handed over to Bea Lindqvist", True),
    ("weekly sync moved to Thursdays 10:00, Room 4.12", False),  # a day and a numbered room are no one
])
def test_who_is_answered_by_a_person_s_name(text: str, gives: bool) -> None:
    assert gives_kind(text, Question.read("who chairs the weekly sync?", "user")) is gives


@pytest.mark.parametrize(("text", "gives"), [
    ("honestly... the team is nice but the work is boring", False),  # no place
    ("I've been at Hooli for two weeks now", True),
    ("working from home most days", True),  # a phrase of place
    ("the spare key's under the mat", True),
    ("Malaga this year, booked it last night", True),  # a name opening the words
])
def test_where_is_answered_by_a_place(text: str, gives: bool) -> None:
    assert gives_kind(text, Question.read("where do I work?", "user")) is gives


@pytest.mark.parametrize(("text", "speaker", "gives"), [
    ("my van fits all six of us, I'll drive instead", "tomasz", True),  # its speaker, by "I"
    ("my van fits all six of us, I'll drive instead", "rosa", False),  # the one the question names
    ("the van fits all six of us", "tomasz", False),  # no one
])
def test_who_is_answered_by_a_speaker_s_i(text: str, speaker: str, gives: bool) -> None:
    assert gives_kind(text, Question.read("who's driving Rosa's kids to the lake?", "user"), speaker=speaker) is gives


@pytest.mark.parametrize(("text", "gives"), [
    ("we're off to Hokkaido in February!!", False),  # the place asked about and a month pick out no hotel
    ("booked the Hotel Niseko for the whole week", True),
])
def test_which_is_answered_by_a_name_the_question_does_not_say(text: str, gives: bool) -> None:
    assert gives_kind(text, Question.read("which hotel are we staying at in Hokkaido?", "user")) is gives
