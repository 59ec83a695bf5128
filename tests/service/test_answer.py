"""``remember``'s answers on the real embedded databases: lead first, short ids, changes, conflicts, degraded mode."""

from __future__ import annotations

import re

import pytest

from mnemonet.llm import make_language_model
from mnemonet.model.api import InferredClaim, Recall
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import short_id
from mnemonet.model.views import ContradictionView, ObservationView, StatementView
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.truth.answer import NOTHING, compose
from mnemonet.truth.relevance import rest_of_clause
from mnemonet.truth.vocabulary import default_vocabulary

VOCABULARY = default_vocabulary()
FULL_ID = re.compile(r"\b(?:st|obs)-[0-9a-f]{32}\b")


async def test_the_lead_is_the_current_answer_and_ids_are_short(service: MemoryService) -> None:
    await service.observe("Dana works at Acme", source="alice")
    await service.observe("Dana lives in Paris", source="alice")
    answer = await service.remember("where does Dana work?")
    lead, _, rest = answer.text.partition("\n")
    assert "Acme" in lead and "Paris" not in lead
    assert rest.startswith("Evidence:\n  - Dana works at Acme (0.90, alice, ")
    assert not FULL_ID.search(answer.text), answer.text
    assert answer.confidence == pytest.approx(0.9) and answer.cited


async def test_a_conflict_between_sources_is_named_in_the_answer(service: MemoryService) -> None:
    acme = (await service.claim("Dana works at Acme", source="alice")).statement
    globex = (await service.claim("Dana works at Globex", source="bob")).statement
    assert acme is not None and globex is not None
    await service.link_statements("CONTRADICTS", globex.id, acme.id, "one employer at a time", "validator")

    answer = await service.remember("where does Dana work?")
    lead = answer.text.partition("\n")[0]
    assert lead.startswith("Unresolved: alice says Dana works at Acme (")
    assert "bob says Dana works at Globex (" in lead
    conflicts = answer.text.partition("In conflict:\n")[2]
    assert conflicts.startswith("  - alice says Dana works at Acme") and conflicts.endswith("-- unresolved")
    # Agreement weighs confidence: two equally confident sides leave it at half.
    assert answer.confidence == pytest.approx(0.45, abs=0.01)


async def test_remember_without_a_language_model_is_degraded_not_failed(
    service: MemoryService, service_settings: Settings
) -> None:
    await service.observe("I prefer morning meetings")
    await service.observe("actually I hate mornings, afternoon is better")
    # A real provider whose server is down: nothing listens on port 9 (discard), no retries.
    down = service_settings.model_copy(update={
        "llm": "openai", "openai_base_url": "http://127.0.0.1:9/v1", "llm_max_retries": 0, "llm_timeout": 5.0})
    service.llm = make_language_model(down)

    answer = await service.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert answer.degraded and "afternoon" in lead and "morning" not in lead
    assert rest.startswith("(Degraded: no language model answered")
    assert answer.provider == "rule-based composer (degraded)" and answer.confidence > 0
    assert service.llm_calls["remember"] == 1  # it was asked, and failed


async def test_nothing_to_answer_with_costs_no_model_call(service: MemoryService) -> None:
    answer = await service.remember("where does Zoe work?")
    assert answer.text == NOTHING and answer.confidence == 0.0 and answer.cited == []
    assert service.llm_calls["remember"] == 0


def _st(id_: str, subject: str, predicate: str, obj: str, *, at: int, source: str = "user",
        confidence: float = 0.9, summary: str | None = None) -> StatementView:
    return StatementView(id=id_, subject=subject, predicate=predicate, object=obj, confidence=confidence,
                         created_at=at, source=source, summary=summary)


def test_agreement_raises_confidence_and_summaries_never_lead() -> None:
    summary = _st("st-s", "user", "has_summary", "user", at=9, source="consolidation-agent",
                  summary="user: user prefers tea; user prefers coffee.")
    tea_a = _st("st-a", "user", "prefers", "tea", at=1, confidence=0.6)
    tea_b = _st("st-b", "user", "prefers", "tea", at=2, source="bob", confidence=0.5)
    composed = compose(Recall(query="what does the user prefer?", statements=[summary, tea_a, tea_b]), 5, VOCABULARY,
                       Settings())
    assert composed.lead == "User prefers tea."
    assert composed.lead_id == "st-b"  # the newest of the group
    assert composed.confidence == pytest.approx(0.8)  # 1 - 0.4 * 0.5
    assert "st-s" not in composed.cited


def test_same_source_contradiction_reads_as_a_change_newest_first() -> None:
    old = _st("st-old", "user", "lives_in", "Paris", at=1)
    new = _st("st-new", "user", "lives_in", "Lisbon", at=2)
    recall = Recall(query="where do I live?", statements=[old, new],
                    contradictions=[ContradictionView(a=old, b=new)])
    composed = compose(recall, 5, VOCABULARY, Settings())
    assert composed.lead == "User lives in Lisbon."
    assert composed.changed and composed.changed[0][0].id == "st-old" and composed.conflicts == []


async def test_a_workers_inference_speaks_for_the_speaker_it_was_drawn_from(service: MemoryService) -> None:
    liked = await service.observe("I like sushi")
    await service.record_inference(liked.observation_id, [InferredClaim(text="user interested in sushi",
                                                                        confidence=0.7)], "inference-agent")
    [inferred] = [s for s in await service.get_recent_statements(10) if s.source == "inference-agent"]
    [unliked] = (await service.observe("I don't like sushi anymore")).statements
    await service.link_statements("CONTRADICTS", unliked.id, inferred.id, "opposite feelings", "validation-agent")

    answer = await service.remember("do I like sushi?")
    lead, _, rest = answer.text.partition("\n")
    # Not a conflict between "user" and "inference-agent": the user's own newer words replace it.
    assert "user does not like sushi" in lead.lower() and "Unresolved" not in lead and "In conflict:" not in rest
    assert f"user is interested in sushi ({short_id(inferred.id)}) -> user does not like sushi" in rest


def test_what_is_leads_before_what_is_not_in_one_observation() -> None:
    gone = _st("st-gone", "user", "lives_in", "Madrid", at=5)
    gone = gone.model_copy(update={"negated": True})
    here = _st("st-here", "user", "lives_in", "Seville", at=5)
    composed = compose(Recall(query="where do I live?", statements=[gone, here]), 5, VOCABULARY, Settings())
    assert composed.lead == "User lives in Seville."


@pytest.mark.parametrize(("said", "lead"), [
    ("left Fitness First and signed up at Third Space", "User's gym is Third Space."),
    ("left Fitness First, the fees went up", "Fitness First is cancelled."),
])
def test_a_value_that_ended_gives_way_to_the_value_said_in_its_place(said: str, lead: str) -> None:
    gym = _st("st-gym", "user", "has_gym", "Fitness First", at=1)
    ended = _st("st-end", "Fitness First", "has_status", "cancelled", at=2).model_copy(
        update={"derived_from": ["obs-2"]})
    recall = Recall(query="which gym do I go to?", statements=[gym, ended],
                    observations=[ObservationView(id="obs-2", text=said, source="user", created_at=2)])
    assert compose(recall, 5, VOCABULARY, Settings()).lead == lead


@pytest.mark.parametrize(("thing", "lead_id"), [
    ("keyboard", "st-status"),  # the same thing said shorter
    ("user's old Yamaha keyboard", "st-status"),
    ("piano", "st-selling"),  # another thing
])
def test_the_state_of_the_lead_s_thing_said_shorter_comes_first(thing: str, lead_id: str) -> None:
    selling = _st("st-selling", "user", "sells", "user's old Yamaha keyboard on Gumtree", at=1)
    status = _st("st-status", thing, "has_status", "sold", at=2)
    composed = compose(Recall(query="is my Yamaha keyboard still for sale?", statements=[selling, status]), 5,
                       VOCABULARY, Settings())
    assert composed.lead_id == lead_id


async def test_the_answer_says_you_to_the_asker(service: MemoryService) -> None:
    await service.observe("I live in Paris", source="alice")
    await service.observe("I live in Rome", source="bob")
    await service.observe("My manager is Tom", source="alice")

    answer = await service.remember("where do I live?", source="alice")
    lead, _, rest = answer.text.partition("\n")
    assert lead.startswith("From memory: you live in Paris ["), lead  # alice's "I" is alice, not bob
    assert "Rome" not in lead
    assert rest.startswith("Evidence:\n  - alice lives in Paris (0.90, alice, ")  # provenance keeps the name

    bobs = (await service.remember("where do I live?", source="bob")).text.partition("\n")[0]
    assert bobs.startswith("From memory: you live in Rome ["), bobs

    other = (await service.remember("where does alice live?", source="bob")).text.partition("\n")[0]
    assert other.startswith("From memory: alice lives in Paris ["), other  # not about the asker: the name

    plain = (await service.remember("where does alice live?")).text.partition("\n")[0]
    assert plain.startswith("From memory: alice lives in Paris ["), plain  # no asker: names as stored

    manager = (await service.remember("who is my manager?", source="alice")).text.partition("\n")[0]
    assert manager.startswith("From memory: your manager is Tom ["), manager


async def test_an_asker_that_is_not_a_name_is_refused(service: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="source"):
        await service.remember("where do I live?", source="")
    with pytest.raises(InvalidInput, match="source"):
        await service.remember("where do I live?", source="x" * 10_000)


@pytest.mark.parametrize(("question", "lead"), [
    # two statements covering the question alike ("user", "café"):
    ("which café is mine?", "User goes to café on Elm Street."),  # what holds now, not the later event
    ("which café was mine?", "User used to switch café."),  # asked about the past, the event may answer
])
def test_asked_what_holds_now_a_later_event_does_not_lead(question: str, lead: str) -> None:
    holds = _st("st-holds", "user", "goes_to", "café on Elm Street", at=1)
    event = _st("st-event", "user", "switches", "café", at=2).model_copy(update={"tense": "past"})
    composed = compose(Recall(query=question, statements=[holds, event]), 5, VOCABULARY, Settings())
    assert composed.lead == lead


def test_an_attribute_named_by_the_question_leads_before_a_later_event_naming_it_too() -> None:
    # "what is my height?" names only the subject "user's height" (a thousandth below a full cover) and
    # every word of "user grew height" (past): as good an answer, and what holds now leads.
    holds = _st("st-holds", "user's height", "has_value", "170 cm", at=1)
    event = _st("st-event", "user", "grows", "height", at=2).model_copy(update={"tense": "past"})
    composed = compose(Recall(query="what is my height?", statements=[holds, event]), 5, VOCABULARY, Settings())
    assert composed.lead_id == "st-holds"


@pytest.mark.parametrize(("question", "lead_id"), [
    ("which school does Mateo go to?", "st-goes"),  # "goes" and "go" are one verb
    ("where does Mateo go on Saturdays?", "st-goes"),  # a relation "to" a place gives a place
    ("where is Deepa working this week?", "st-from"),
    ("where does Deepa teach?", "st-at"),  # not the newer "teaches from term": a time, no place
])
def test_a_relation_ending_in_a_preposition_of_place_answers_where(question: str, lead_id: str) -> None:
    statements = [_st("st-goes", "Mateo", "goes_to", "Riverside Primary", at=1),
                  _st("st-from", "deepa", "works_from", "home", at=2),
                  _st("st-at", "deepa", "teaches_at", "Leeds", at=3),
                  _st("st-term", "deepa", "teaches_from", "term", at=4)]
    composed = compose(Recall(query=question, statements=statements), 5, VOCABULARY, Settings())
    assert composed.lead_id == lead_id


@pytest.mark.parametrize(("question", "said", "answers"), [
    ("what is Oluwaseun's job title?", ("Oluwaseun", "starts_at", "company"), False),  # no title given
    ("what is Oluwaseun's job title?", ("Oluwaseun", "is_a", "data analyst"), True),  # is_a is asked by "title"
    ("what is my locker number at the pool?", ("user", "has_locker_number", "241"), True),
    ("what is my daily step goal?", ("user's daily step goal", "has_value", "8000 steps"), True),
    # the name of someone's someone must be that someone's: a school's name is no teacher's
    ("what is Ravi's coach's name?", ("Ravi", "trains_at", "Northside Boxing Club"), False),
    ("what is Ravi's coach's name?", ("Ravi", "has_coach", "Mehmet"), True),
    # an owner of two words is an owner ("Dr Lee's"), and what is asked of them must be given
    ("what is Dr Lee's email?", ("user", "has_dentist", "Dr Lee"), False),
    # the name of a thing is a name the thing's own phrase holds ("gym in Leeds" names the city, not the gym)
    ("what's the name of the gym Ola goes to?", ("Ola", "goes_to", "gym in Leeds"), False),
    ("what's the name of the gym Ola goes to?", ("Ola", "goes_to", "Iron Works gym"), True),
    ("what's the name of the gym Ola goes to?", ("gym in Leeds", "has_member", "Ola"), False),  # the member's name
    # a number is given by a value with digits, as a name is by a capitalised one
    ("what is my booking number?", ("user's booking", "has_reference", "BK 4471"), True),
    ("what is my booking number?", ("user's booking", "has_reference", "online"), False),
    ("what's my booking number to Oslo?", ("user's booking", "has_reference", "BK 4471"), True),  # "to Oslo" qualifies
    # a version's every part names it ("v4.2" is not "v4")
    ("when does v4.2 launch?", ("v4.2", "happens_on", "Monday"), True),
])
def test_asked_for_an_attribute_an_answer_gives_it(question: str, said: tuple[str, str, str], answers: bool) -> None:
    composed = compose(Recall(query=question, statements=[_st("st-1", *said, at=1)]), 5, VOCABULARY, Settings())
    assert (composed.lead_id == "st-1") is answers


@pytest.mark.parametrize(("revision", "question", "lead_id"), [
    ("change", "who is the captain of my five-a-side team?", "st-new"),  # a new holder said as a change
    (None, "who is the captain of my five-a-side team?", "st-old"),  # a captain, maybe of another team
    ("change", "who is a captain?", "st-new"),  # not the one holder asked: a captain, by the copula
])
def test_asked_for_the_one_holder_of_a_role_a_new_holder_said_as_a_change_holds_it(
    revision: str | None, question: str, lead_id: str | None,
) -> None:
    old = _st("st-old", "Ines", "is_a", "captain of user's five-a-side team", at=1)
    new = _st("st-new", "Kwame", "is_a", "captain", at=2).model_copy(update={"revision": revision})
    composed = compose(Recall(query=question, statements=[old, new]), 5, VOCABULARY, Settings())
    assert composed.lead_id == lead_id


@pytest.mark.parametrize(("sibling", "origin", "lead_id"), [
    (("Diego", "drives_for", "DHL"), "obs-1", "st-instead"),  # what he does instead, unplaced
    (("Diego", "lives_in", "Leeds"), "obs-1", "st-ended"),  # a relation of its own: not the slot asked
    (("Diego", "drives_for", "DHL"), "obs-2", "st-ended"),  # said elsewhere
    (("Diego", "drives_for", "delivery van"), "obs-1", "st-ended"),  # no name
])
def test_an_ended_value_gives_way_to_what_the_same_words_say_instead(
    sibling: tuple[str, str, str], origin: str, lead_id: str,
) -> None:
    ended = _st("st-ended", "Diego", "works_at", "Nando's", at=2).model_copy(
        update={"negated": True, "revision": "change", "derived_from": ["obs-1"]})
    instead = _st("st-instead", *sibling, at=2).model_copy(update={"derived_from": [origin]})
    composed = compose(Recall(query="where does Diego work?", statements=[ended, instead]), 5, VOCABULARY,
                       Settings())
    assert composed.lead_id == lead_id


@pytest.mark.parametrize(("question", "said", "answers"), [
    # "for a living" asks for work, "each week" asks nothing of its own
    ("what does Anil do for a living?", ("Anil", "works_as", "electrician"), True),
    ("how far do I cycle each week?", ("user", "cycles", "60 km"), True),
    # a statement the question already says tells nothing: "my cousin Bea" does not answer what Bea does
    ("what does my cousin Bea do for work?", ("user", "has_cousin", "Bea"), False),
    ("who is my cousin?", ("user", "has_cousin", "Bea"), True),
    # who holds a role said by the copula: every word of the role in the question
    ("who leads the Atlas project?", ("Ingrid", "is_a", "project lead on Atlas"), True),
    # "why" asks for a reason, which only words giving one answer
    ("why did Anil quit?", ("Anil", "quits", "job at the depot"), False),
    ("why did Anil quit?", ("Anil", "quits", "job because of the commute"), True),
])
def test_what_a_question_asks_with_set_phrases_and_what_it_already_says(
    question: str, said: tuple[str, str, str], answers: bool,
) -> None:
    composed = compose(Recall(query=question, statements=[_st("st-1", *said, at=1)]), 5, VOCABULARY, Settings())
    assert (composed.lead_id == "st-1") is answers


@pytest.mark.parametrize(("turn", "source", "shown"), [
    ("oh and wasps too", "user", True),  # an addition nothing could be extracted from
    ("wasps as well lol", "user", True),
    ("plus wasps, found that out last summer", "user", True),
    ("we fly to Crete on Friday", "user", False),  # no addition
    ("wasps too", "bob", False),  # another speaker's turn
])
def test_the_next_turn_adding_to_the_lead_is_shown_beside_it(turn: str, source: str, shown: bool) -> None:
    lead = _st("st-lead", "user", "allergic_to", "bees", at=1).model_copy(update={"derived_from": ["obs-1"]})
    said = [ObservationView(id="obs-1", text="I'm allergic to bees", source="user", created_at=1),
            ObservationView(id="obs-2", text=turn, source=source, created_at=2)]
    composed = compose(Recall(query="what am I allergic to?", statements=[lead], observations=said), 5, VOCABULARY,
                       Settings())
    assert composed.lead_id == "st-lead"
    assert any(o.id == "obs-2" for o in composed.observations) is shown


@pytest.mark.parametrize(("between", "shown"), [
    (["weather's been grim all week"], True),  # a remark on something else in between
    (["weather's been grim", "the bus was late", "lunch was nice"], False),  # too far on
])
def test_an_addition_a_few_turns_on_is_shown_beside_the_lead(between: list[str], shown: bool) -> None:
    lead = _st("st-lead", "user", "volunteers_at", "food bank", at=1).model_copy(update={"derived_from": ["obs-1"]})
    said = [ObservationView(id="obs-1", text="I volunteer at the food bank", source="user", created_at=1),
            *(ObservationView(id=f"obs-x{i}", text=t, source="user", created_at=2 + i) for i, t in enumerate(between)),
            ObservationView(id="obs-2", text="I also help out at the animal shelter", source="user", created_at=9)]
    composed = compose(Recall(query="where do I volunteer?", statements=[lead], observations=said), 5, VOCABULARY,
                       Settings())
    assert any(o.id == "obs-2" for o in composed.observations) is shown


@pytest.mark.parametrize(("turn", "source", "shown"), [
    ("oh and she reacts badly to shellfish too", "user", True),  # an addition about the one asked of
    ("he also drives for Uber at weekends", "user", True),
    ("the boiler broke again", "user", False),  # no addition
    ("shellfish too", "bob", False),  # another speaker's turn
    ("but plasters bring her out in a rash", "user", True),  # a contrast adds a case
    ("but she's fine with penicillin now, she outgrew it", "user", False),  # a contrast saying a change
])
def test_the_next_turn_adding_to_words_that_lead_is_shown_beside_them(turn: str, source: str, shown: bool) -> None:
    said = [ObservationView(id="obs-1", text="Zainab's allergic to penicillin", source="user", created_at=1),
            ObservationView(id="obs-2", text=turn, source=source, created_at=2)]
    composed = compose(Recall(query="what is Zainab allergic to?", observations=said), 5, VOCABULARY, Settings())
    assert composed.lead_id == "obs-1"
    assert any(o.id == "obs-2" for o in composed.observations) is shown


@pytest.mark.parametrize(("shorter", "lead_id"), [
    ("yoga", "st-new"),  # the thing said shorter, by its head
    ("yoga mat", "st-old"),  # another thing
])
def test_a_thing_said_shorter_is_the_one_longer_thing_with_its_head(shorter: str, lead_id: str) -> None:
    old = _st("st-old", "tuesday yoga", "located_in", "community centre on Elm Road", at=1)
    new = _st("st-new", shorter, "located_in", "church hall on Pine Street", at=2)
    composed = compose(Recall(query="where is Tuesday yoga held?", statements=[old, new]), 5, VOCABULARY, Settings())
    assert composed.lead_id == lead_id


def test_a_name_with_or_without_its_accent_is_one_subject() -> None:
    told = _st("st-told", "Lucía", "lives_in", "Valencia", at=1, source="sam")
    own = _st("st-own", "lucia", "lives_in", "Seville", at=2, source="lucia")
    composed = compose(Recall(query="where does Lucía live?", statements=[told, own]), 5, VOCABULARY, Settings(),
                       asker="sam")
    assert composed.lead_id == "st-own"


@pytest.mark.parametrize(("others", "lead_id"), [
    ([], "st-new"),  # "Folake" is "Aunt Folake" called shorter: one slot, the newer value leads
    ([("st-other", "Folake Adeyemi", "works_at", "Zenith")], "st-old"),  # two fuller names: which one is unsure
])
def test_a_name_said_shorter_is_the_one_fuller_name_holding_it(
    others: list[tuple[str, str, str, str]], lead_id: str,
) -> None:
    old = _st("st-old", "Aunt Folake", "lives_in", "Croydon", at=1)
    new = _st("st-new", "Folake", "lives_in", "Manchester", at=2)
    more = [_st(i, subject, predicate, obj, at=0) for i, subject, predicate, obj in others]
    composed = compose(Recall(query="where does Aunt Folake live?", statements=[old, new, *more]), 5, VOCABULARY,
                       Settings())
    assert composed.lead_id == lead_id


@pytest.mark.parametrize(("question", "source", "text", "answers"), [
    ("how many reams of A4 do we have?", "stock-bot", "A4 paper count after Monday's delivery: 65 reams", True),
    ("how many reams of A4 do I have?", "stock-bot", "A4 paper count after Monday's delivery: 65 reams", False),
    ("how many reams of A4 do we have?", "bob", "we have 65 reams of A4 paper", False),  # bob's "we"
])
def test_asked_of_us_a_record_in_no_ones_voice_answers(question: str, source: str, text: str, answers: bool) -> None:
    said = [ObservationView(id="obs-1", text=text, source=source, created_at=1)]
    composed = compose(Recall(query=question, observations=said), 5, VOCABULARY, Settings())
    assert (composed.lead_id == "obs-1") is answers


@pytest.mark.parametrize(("number", "answers"), [("88213", True), ("88214", False)])
def test_words_naming_the_asker_s_thing_by_its_number_are_of_it(number: str, answers: bool) -> None:
    said = [ObservationView(id="obs-1", text=f"hi, where's my order {number}?", source="user", created_at=1),
            ObservationView(id="obs-2", text="Order 88213 has been dispatched via Royal Mail Tracked 48.",
                            source="support-bot", created_at=2)]
    composed = compose(Recall(query="which courier is delivering my order?", observations=said), 5, VOCABULARY,
                       Settings(), asker="user")
    assert (composed.lead_id == "obs-2") is answers


@pytest.mark.parametrize(("question", "text", "answers"), [
    ("what time does Bruno's flight land?", "Aiyana's flight lands at 6:40pm on Friday", False),  # hers
    ("what time does Bruno's flight land?", "Bruno's flight lands at 6:40pm on Friday", True),
    ("where is this year's team offsite?", "last year's team offsite was in Lisbon", False),  # another one
    ("what shoe size is Elena?", "Yusuf's shoe size is 44", False),  # the one named is not named
    ("what shoe size is Elena?", "Elena's shoe size is 38", True),
])
def test_words_about_another_s_thing_do_not_answer(question: str, text: str, answers: bool) -> None:
    said = [ObservationView(id="obs-1", text=text, source="user", created_at=1)]
    composed = compose(Recall(query=question, observations=said), 5, VOCABULARY, Settings())
    assert (composed.lead_id == "obs-1") is answers


def test_values_of_a_slot_said_together_lead_together_in_the_order_said() -> None:
    said = [ObservationView(id="obs-1", text="Gareth takes two sugars and oat milk", source="user", created_at=1)]
    milk, sugar = (_st(i, "Gareth", "takes", o, at=1).model_copy(update={"derived_from": ["obs-1"]})
                   for i, o in (("st-milk", "oat milk"), ("st-sugar", "two sugars")))
    other = _st("st-other", "Gareth", "takes", "the bus", at=0).model_copy(update={"derived_from": ["obs-0"]})
    composed = compose(Recall(query="how does Gareth take his coffee?", statements=[milk, sugar, other],
                              observations=said), 5, VOCABULARY, Settings())
    assert "two sugars and oat milk" in composed.lead and "bus" not in composed.lead
    # a model phrases the lead from the values together, not from the first statement alone
    assert "two sugars and oat milk" in composed.memory()[0][1]


def test_owning_a_thing_answers_what_one_has() -> None:
    owned = _st("st-owned", "user", "owns", "rabbit named Clover", at=1)
    had = _st("st-had", "user", "has", "goldfish named Bubbles", at=2)
    composed = compose(Recall(query="what pets do I have?", statements=[owned, had]), 5, VOCABULARY, Settings())
    assert {s.id for s in composed.evidence} == {"st-owned", "st-had"}


def test_who_is_answered_by_a_statement_naming_a_person_before_one_naming_none() -> None:
    named = _st("st-named", "kai", "has_physio", "Dr Osei", at=1)
    unnamed = _st("st-unnamed", "kai", "sees", "new physio", at=2)  # newer, and as many words of the question
    composed = compose(Recall(query="who is Kai's physio?", statements=[named, unnamed]), 5, VOCABULARY, Settings())
    assert composed.lead_id == "st-named"


async def test_a_yes_or_no_question_is_answered_yes_or_no_when_the_lead_settles_it(service: MemoryService) -> None:
    await service.observe("I live in Berlin", source="user")
    await service.observe("I moved to Munich last month", source="user")
    await service.observe("I speak French", source="user")
    await service.observe("I also speak a bit of Japanese", source="user")

    still = (await service.remember("do I still live in Berlin?", source="user")).text.partition("\n")[0]
    assert still.startswith("No. ") and "Munich" in still, still
    now = (await service.remember("is Munich my home now?", source="user")).text.partition("\n")[0]
    assert now.startswith("Yes. ") and "Munich" in now, now
    where = (await service.remember("where do I live?", source="user")).text.partition("\n")[0]
    assert not where.startswith(("Yes", "No")) and "Munich" in where, where
    # Two languages hold at once: whichever leads, the other is no reason to say no.
    for language in ("French", "Japanese"):
        spoken = (await service.remember(f"do I speak {language}?", source="user")).text.partition("\n")[0]
        assert not spoken.startswith("No"), spoken


async def test_asked_about_oneself_another_speakers_fact_is_no_answer(service: MemoryService) -> None:
    await service.observe("I work at Shopify", source="dev")
    await service.claim("Shopify employs dev", source="inference-agent")  # as a worker infers it

    mine = (await service.remember("do I work at Shopify?", source="eve")).text.partition("\n")[0]
    assert mine.startswith(NOTHING), mine
    theirs = (await service.remember("where does dev work?", source="eve")).text.partition("\n")[0]
    assert "Shopify" in theirs, theirs


@pytest.mark.parametrize(("question", "answers"), [
    ("what's Noor's teacher's name?", False),  # the name of her teacher: her school's name is none
    ("what's Mr Brandt's phone number?", False),  # an owner of two words, and nothing gives a number
    ("which school does Noor go to?", True),
])
async def test_a_name_or_number_asked_of_someone_is_theirs_or_nothing(
    service: MemoryService, question: str, answers: bool,
) -> None:
    await service.observe("my daughter Noor goes to Oakfield primary school", source="user")
    await service.observe("our landlord is Mr Brandt", source="user")
    lead = (await service.remember(question, source="user")).text.partition("\n")[0]
    assert lead.startswith(NOTHING) is not answers, lead


@pytest.mark.parametrize(("later", "drawn", "lead_id"), [
    ("my brother still has soy milk", ("user's brother", "has", "soy milk"), "st-1"),  # about him: understood
    ("I have it with soy milk now", ("user", "has", "it"), "obs-2"),  # about me, no answer drawn: the words lead
])
def test_the_askers_words_about_someone_else_are_understood_not_missed(
    later: str, drawn: tuple[str, str, str], lead_id: str,
) -> None:
    mine = _st("st-1", "user", "puts", "oat milk in user's tea", at=1).model_copy(update={"derived_from": ["obs-1"]})
    other = _st("st-2", *drawn, at=2).model_copy(update={"derived_from": ["obs-2"]})
    said = [ObservationView(id="obs-1", text="I put oat milk in my tea", source="user", created_at=1),
            ObservationView(id="obs-2", text=later, source="user", created_at=2)]
    composed = compose(Recall(query="what milk do I put in my tea?", statements=[mine, other], observations=said), 5,
                       VOCABULARY, Settings())
    assert composed.lead_id == lead_id


def test_a_contracted_question_word_asks_for_its_kind() -> None:
    place = _st("st-place", "offsite", "located_in", "Lisbon", at=1)
    day = _st("st-day", "offsite", "happens_on", "Friday", at=2)
    composed = compose(Recall(query="where's the offsite?", statements=[place, day]), 5, VOCABULARY, Settings())
    assert composed.lead_id == "st-place"


@pytest.mark.parametrize(("revision", "lead_id"), [("change", "st-new"), (None, "st-old")])
def test_asked_who_holds_a_thing_a_new_holder_said_as_a_change_holds_it(revision: str | None, lead_id: str) -> None:
    old = _st("st-old", "Mrs Obi", "coaches", "under-9 netball team", at=1)
    new = _st("st-new", "Priya", "coaches", "under-9s", at=2).model_copy(update={"revision": revision})
    composed = compose(Recall(query="who coaches the under-9 netball team?", statements=[old, new]), 5, VOCABULARY,
                       Settings())
    assert composed.lead_id == lead_id


@pytest.mark.parametrize(("question", "said", "leads"), [
    # words nothing was extracted from lead only if they may give what is asked
    ("what is Petra's phone number?", "Petra's new phone arrived today", False),  # no number in them
    ("what is Petra's phone number?", "Petra's new number is 0161 496 0199", True),
    ("what is Petra's position at the clinic?", "the clinic made Petra head of nursing", True),  # given, unnamed
    ("what does my cousin Bea do for work?", "my cousin is Bea", False),  # nothing the question does not say
    ("what does my cousin Bea do for work?", "my cousin Bea does payroll work at Ikea", True),
    # "how many" asks for an amount and names nothing the words must say
    ("how many days of annual leave does Nkechi have left?", "Leave balance update - Nkechi Eze: 12 days remaining",
     True),
])
def test_words_nothing_was_drawn_from_lead_only_when_they_may_answer(question: str, said: str, leads: bool) -> None:
    words = ObservationView(id="obs-1", text=said, source="user", created_at=1)
    composed = compose(Recall(query=question, statements=[], observations=[words]), 5, VOCABULARY, Settings())
    assert (composed.lead_id == "obs-1") is leads


def test_a_possessed_subject_is_asked_by_its_nouns_not_its_modifiers() -> None:
    older = _st("st-older", "user's older sister", "lives_in", "Montreal", at=1)
    younger = _st("st-younger", "user's younger sister", "lives_in", "Perth", at=2)
    composed = compose(Recall(query="where do my sisters live?", statements=[older, younger]), 5, VOCABULARY,
                       Settings())
    assert {s.id for s in composed.evidence} == {"st-older", "st-younger"}


def test_what_the_extraction_dropped_after_an_object_still_answers_from_the_words_it_was_drawn_from() -> None:
    words = ObservationView(id="obs-1", text="we use Zoom for the book club calls", source="user", created_at=1)
    zoom = _st("st-zoom", "user", "uses", "Zoom", at=1).model_copy(update={"derived_from": ["obs-1"]})
    composed = compose(Recall(query="what do we use for book club calls?", statements=[zoom], observations=[words]),
                       5, VOCABULARY, Settings())
    assert composed.lead_id == "obs-1" and "Zoom" in composed.lead


@pytest.mark.parametrize(("text", "phrase", "told"), [
    ("we use Zoom for the book club calls, it's free", "Zoom", "Zoom for the book club calls"),
    ("we use zoom for calls", "Zoom", "zoom for calls"),
    ("we use Teams", "Zoom", None),
    ("my sister Chiara works as a pharmacist", "Chiara", None),  # a clause of its own, not a qualifier
])
def test_the_rest_of_a_phrase_s_clause(text: str, phrase: str, told: str | None) -> None:
    assert rest_of_clause(text, phrase) == told
