"""The offline model reads a change said in everyday words onto the slot of the fact it changes (issue 32).

Each case: a plain statement of a fact, then the same attribute changed in other words. The change must
land on the subject and predicate the plain statement gets, present, marked as a change (or correction).
The sentences are this file's own (bench/extraction_changes.py measures a larger set, split dev/test).
"""

from __future__ import annotations

from datetime import date

import pytest

from mnemonet.llm import OfflineLanguageModel
from mnemonet.llm.base import CandidatePair, Triple
from mnemonet.settings import Settings
from mnemonet.truth.vocabulary import default_vocabulary

TODAY = date(2026, 11, 23)

# (class, before, after, (subject, predicate, object, negated) of the change; its predicate also the before's)
CHANGES: list[tuple[str, str, str, tuple[str, str, str, bool]]] = [
    ("role", "My manager is Carol", "Frank took over from Carol as my manager", ("Sam", "has_manager", "Frank", False)),
    ("role", "My manager is Carol", "My new manager is Frank", ("Sam", "has_manager", "Frank", False)),
    ("role", "I report to Carol", "I report to Hugo now", ("Sam", "has_manager", "Hugo", False)),
    ("role", "Carol is my manager", "Ines replaced Carol as my manager", ("Sam", "has_manager", "Ines", False)),
    ("role", "Our landlord is Ken Adams", "Maria Lopez is our landlord now", ("Sam", "has_landlord", "Maria Lopez",
                                                                             False)),
    ("employer", "I work at Initech", "I started a new job at Hooli last month", ("Sam", "works_at", "Hooli", False)),
    ("employer", "Maya works for Globex", "Maya got hired by Initrode", ("Maya", "works_at", "Initrode", False)),
    ("employer", "I work at Initech", "I took a position with Contoso", ("Sam", "works_at", "Contoso", False)),
    ("relocation", "We live in Lisbon", "We relocated to Porto in March", ("Sam", "lives_in", "Porto", False)),
    ("relocation", "Folake lives in Croydon", "Folake has moved up to Manchester",  # a place, not a rank
     ("Folake", "lives_in", "Manchester", False)),
    ("relocation", "I'm based in the Paris office", "I got transferred to the Lyon office",
     ("Sam", "located_in", "Lyon office", False)),
    ("switch", "I use Vim", "I switched from Vim to Emacs", ("Sam", "uses", "Emacs", False)),
    ("switch", "I use Vim", "I switched from Vim to Emacs", ("Sam", "uses", "Vim", True)),
    ("switch", "We use Trello", "We replaced Trello with Asana", ("Sam", "uses", "Trello", True)),
    ("postponement", "The retro is on Tuesday", "The retro got bumped to Friday", ("retro", "happens_on", "Friday",
                                                                                   False)),
    ("postponement", "The launch is in May", "We postponed the launch until June", ("launch", "happens_on", "June",
                                                                                    False)),
    ("numeric", "The budget is 50k", "The budget was cut to 20k", ("budget", "has_value", "20k", False)),
    ("numeric", "My rent is 1200 euros", "My rent went up to 1500 euros", ("Sam's rent", "has_value", "1500 euros",
                                                                           False)),
    ("numeric", "Our team has 10 people", "Our team is now 12 people", ("Sam's team", "has_value", "12 people", False)),
    ("numeric", "Ben is 41", "Ben turned 42", ("Ben", "has_age", "42", False)),
    ("promotion", "Sam is a junior engineer", "Sam was promoted to senior engineer", ("Sam", "is_a", "senior engineer",
                                                                                      False)),
    ("promotion", "Ada is a cook", "Ada is head chef now", ("Ada", "is_a", "head chef", False)),
    ("promotion", "Omar is a sales rep", "They made Omar head of sales", ("Omar", "is_a", "head of sales", False)),
    ("status", "The cafe on Main Street is open", "The cafe on Main Street closed down",
     ("cafe on Main Street", "has_status", "closed", False)),
    ("status", "The pilot is active", "The pilot was scrapped", ("pilot", "has_status", "cancelled", False)),
    ("status", "I smoke", "I quit smoking", ("Sam", "has_habit", "smoking", True)),
    ("status", "I go to the gym", "I stopped going to the gym", ("Sam", "goes_to", "gym", True)),
    ("correction", "My manager is Carol", "Scratch that, my manager is Frank", ("Sam", "has_manager", "Frank", False)),
    ("correction", "Ana lives in Braga", "no wait, Ana lives in Faro", ("Ana", "lives_in", "Faro", False)),
    ("correction", "The demo is on Thursday", "let me correct that: the demo is on Friday",
     ("demo", "happens_on", "Friday", False)),
]


@pytest.fixture
def offline() -> OfflineLanguageModel:
    return OfflineLanguageModel(Settings(), today=lambda: TODAY)


def _slot(t: Triple) -> tuple[str, str]:
    return t.subject, default_vocabulary().canonical(t.predicate)


@pytest.mark.parametrize(("kind", "before", "after", "expected"), CHANGES, ids=[f"{c[0]}: {c[2]}" for c in CHANGES])
async def test_a_change_lands_on_the_slot_of_the_fact_it_changes(
    offline: OfflineLanguageModel, kind: str, before: str, after: str, expected: tuple[str, str, str, bool]
) -> None:
    said = (await offline.extract_observation(before, "Sam")).statements
    changed = (await offline.extract_observation(after, "Sam")).statements
    found = [t for t in changed if (t.subject, t.predicate, t.object, t.negated) == expected]
    assert found, [t.model_dump() for t in changed]
    assert found[0].tense == "present"
    assert found[0].revision == ("correction" if kind == "correction" else "change")
    assert _slot(found[0]) in {_slot(t) for t in said}, [t.model_dump() for t in said]


@pytest.mark.parametrize(("before", "after"), [
    ("My manager is Carol", "My sister's new manager is Frank"),  # another person's slot
    ("I live in Lisbon", "My brother just moved to Porto"),
    ("The budget is 50k", "The marketing budget was cut to 20k"),  # another thing
    ("The review is on Tuesday", "The retro got moved to Thursday"),
    ("I work at Initech", "I used to work at Globex"),  # a past fact
])
async def test_a_change_of_something_else_keeps_off_the_slot(
    offline: OfflineLanguageModel, before: str, after: str
) -> None:
    said = {_slot(t) for t in (await offline.extract_observation(before, "Sam")).statements}
    changed = (await offline.extract_observation(after, "Sam")).statements
    assert changed
    assert not [t for t in changed if _slot(t) in said and t.tense == "present"], [t.model_dump() for t in changed]


@pytest.mark.parametrize(("sentence", "expected"), [
    # what moved names nothing: the speaker switched to the place it went, no one lives there
    ("moved everything over to Revolut last week", ("Sam", "uses", "Revolut")),
    ("moved it all to Starling", ("Sam", "uses", "Starling")),
    # a thing that names itself moved there; the speaker moved home
    ("we moved our hosting to Hetzner", ("Sam's hosting", "located_in", "Hetzner")),
    ("we moved to Leeds last month", ("Sam", "lives_in", "Leeds")),
])
async def test_a_move_of_what_names_nothing_is_a_switch(
    offline: OfflineLanguageModel, sentence: str, expected: tuple[str, str, str]
) -> None:
    found = (await offline.extract_observation(sentence, "Sam")).statements
    assert [(t.subject, t.predicate, t.object) for t in found if t.revision == "change"] == [expected], \
        [t.model_dump() for t in found]


# Read in real chat (LoCoMo dev turns): none of these says a value changed.
@pytest.mark.parametrize(("sentence", "absent"), [
    ("A certain activity can become a part of our lives", "is_a"),  # a possibility
    ("I went down to the beach", "is_a"),  # a place, not a new value
    ("Networking opened me up to amazing products", "is_a"),
    ("I look up to my dad", "is_a"),
    ("I paid up to $50", "has_value"),
    ("This trilogy is one of my faves", "has_value"),  # a part, not an amount
    ("It really helps me reset and recharge", "has_habit"),  # no subject of its own
    ("I won't quit", "has_habit"),
    ("I made my friend some ice cream", "is_a"),  # a thing given, not a title
])
async def test_everyday_turns_that_change_nothing(offline: OfflineLanguageModel, sentence: str, absent: str) -> None:
    found = (await offline.extract_observation(sentence, "Sam")).statements
    assert not [t for t in found if t.predicate == absent or t.revision == "change"], [t.model_dump() for t in found]


async def test_a_change_of_place_from_a_to_b_says_where_it_was(offline: OfflineLanguageModel) -> None:
    rows = [(t.predicate, t.object, t.tense, t.revision)
            for t in (await offline.extract_observation("I moved from Boston to Seattle", "Sam")).statements]
    assert rows == [("lives_in", "Boston", "past", None), ("lives_in", "Seattle", "present", "change")]


async def test_a_plan_to_change_stays_a_plan(offline: OfflineLanguageModel) -> None:
    [t] = (await offline.extract_observation("I will move to Lisbon next month", "Sam")).statements
    assert (t.predicate, t.tense, t.revision) == ("lives_in", "future", None)


# -- issue 32, "What was seen" 8: the design's own examples ------------------------------------------------


async def test_a_pronoun_in_a_reported_clause_is_the_reporter(offline: OfflineLanguageModel) -> None:
    [t] = (await offline.extract_observation("user said they hate waking up early for meetings", "user")).statements
    assert (t.subject, t.predicate, t.object) == ("user", "dislikes", "waking up early for meetings")
    [t] = (await offline.extract_observation("Priya told me her manager is Dana", "Sam")).statements
    assert (t.subject, t.predicate, t.object) == ("Priya", "has_manager", "Dana")


async def test_x_not_y_negates_y(offline: OfflineLanguageModel) -> None:
    rows = [(t.predicate, t.object, t.negated)
            for t in (await offline.extract_observation("I like blue, not green", "Sam")).statements]
    assert rows == [("likes", "blue", False), ("likes", "green", True)]


async def test_an_inferred_claim_keeps_its_basis_tense_date_and_doubt(offline: OfflineLanguageModel) -> None:
    extraction = await offline.extract_observation("I used to work at Google", "erin", None, True)
    [said] = extraction.statements
    [inferred] = extraction.inferred
    assert (inferred.subject, inferred.predicate, inferred.object) == ("Google", "employs", "erin")
    assert inferred.tense == said.tense == "past"
    assert inferred.confidence < 0.8  # the rule's 0.8, lowered as the past basis is
    moved = await offline.extract_observation("I think I moved to Porto last year", "erin", None, True)
    [located] = moved.inferred
    assert (located.predicate, located.valid_at, located.revision) == ("located_in", "2025", "change")
    assert located.confidence < moved.statements[0].confidence


async def test_hyphenated_names_keep_their_hyphens(offline: OfflineLanguageModel) -> None:
    [t] = (await offline.extract_observation("we are building a peer-to-peer network", "Sam")).statements
    assert t.object == "peer-to-peer network"


@pytest.mark.parametrize(("sentence", "obj"), [
    ("I hate meetings on Fridays", "meetings on Fridays"),
    ("I like coffee in the morning", "coffee in morning"),
    ("We use Slack at work", "Slack at work"),
    ("I use Duolingo for my Spanish practice", "Duolingo for Sam's Spanish practice"),  # what a tool is for
])
async def test_the_object_keeps_its_qualifiers(offline: OfflineLanguageModel, sentence: str, obj: str) -> None:
    [t] = (await offline.extract_observation(sentence, "Sam")).statements
    assert t.object == obj


async def test_a_date_is_when_it_holds_not_a_qualifier(offline: OfflineLanguageModel) -> None:
    found = (await offline.extract_observation("I bought a bike on Monday", "Sam")).statements
    # The purchase, and what it leaves: Sam has the bike from then on.
    assert sorted((t.predicate, t.object, t.tense, t.valid_at) for t in found) == [
        ("buys", "bike", "past", "2026-11-16"), ("has", "bike", "present", "2026-11-16")]  # the Monday before


# -- the judge: a narrower fact and an amount in another unit coexist --------------------------------------


async def test_judge_reads_qualified_objects_and_units(offline: OfflineLanguageModel) -> None:
    pairs = [
        ("user dislikes meetings on Fridays", "user likes short meetings"),  # different meetings
        ("user dislikes mornings", "user prefers morning meetings"),  # a broader feeling: both can hold
        ("budget has value 20k", "budget has value 50k"),  # one unit: the newer replaces the older
        ("server has value 64 GB of memory", "server has value 16 cores"),  # two units: both hold
        ("cafe has status closed", "cafe has status open"),  # single-valued
    ]
    judged = await offline.judge_pairs([CandidatePair(a=a, b=b) for a, b in pairs])
    assert [j.contradicts for j in judged] == [False, False, True, False, True]
