"""A turn right after what answers that says it replaces it, in words no rule placed (``answer._replaced_next``)."""

from __future__ import annotations

import pytest

from mnemonet.model.api import Recall
from mnemonet.model.records import Revision
from mnemonet.model.views import ObservationView, StatementView
from mnemonet.settings import Settings
from mnemonet.truth.answer import compose
from mnemonet.truth.relevance import leaving_out
from mnemonet.truth.vocabulary import default_vocabulary


def _obs(id_: str, text: str, at: int, source: str = "user") -> ObservationView:
    return ObservationView(id=id_, text=text, source=source, created_at=at)


def _st(id_: str, subject: str, predicate: str, obj: str, origin: str, at: int, source: str = "user",
        revision: Revision | None = None) -> StatementView:
    return StatementView(id=id_, subject=subject, predicate=predicate, object=obj, confidence=0.9, created_at=at,
                         source=source, derived_from=[origin], revision=revision)


def _lead(query: str, said: list[ObservationView], statements: list[StatementView], asker: str = "user") -> str:
    recall = Recall(query=query, statements=statements, observations=said)
    return compose(recall, 5, default_vocabulary(), Settings(), asker=asker).lead


def test_a_change_said_next_in_other_words_replaces_what_answered() -> None:
    said = [_obs("obs-1", "my brother Haruto works as a sous chef at a ramen place in Leeds", 1),
            _obs("obs-2", "guess what, Haruto quit the kitchen and he's driving deliveries for a bakery now", 2)]
    statements = [_st("st-1", "Haruto", "works_as", "sous chef at ramen place in Leeds", "obs-1", 1),
                  _st("st-2", "Haruto", "drives", "deliveries", "obs-2", 2, revision="change")]
    lead = _lead("what does Haruto do for work?", said, statements)
    assert "bakery" in lead and "sous chef" not in lead


def test_a_correction_nothing_was_drawn_from_replaces_what_answered() -> None:
    said = [_obs("obs-1", "my dentist appointment is with Dr Okafor", 1),
            _obs("obs-2", "scratch that, it's Dr Okonkwo, I always mix them up", 2)]
    statements = [_st("st-1", "user's dentist appointment", "is_with", "Dr Okafor", "obs-1", 1)]
    assert "Okonkwo" in _lead("who is my dentist appointment with?", said, statements)


def test_in_a_conversation_anyone_may_replace_a_plan() -> None:
    said = [_obs("obs-1", "Sunday lunch is at ours this week", 1, source="mum"),
            _obs("obs-2", "oven's packed in, so lunch will have to be at Auntie Precious's instead", 2, source="dad")]
    statements = [_st("st-1", "sunday lunch", "located_in", "mum", "obs-1", 1, source="mum")]
    assert "Precious" in _lead("where is Sunday lunch this week?", said, statements)


def test_a_change_the_rules_placed_in_another_slot_replaces_nothing() -> None:
    said = [_obs("obs-1", "I live in Paris", 1), _obs("obs-2", "I work at Google now", 2)]
    statements = [_st("st-1", "user", "lives_in", "Paris", "obs-1", 1),
                  _st("st-2", "user", "works_at", "Google", "obs-2", 2, revision="change")]
    assert "Paris" in _lead("where do I live?", said, statements)


def test_an_addition_replaces_nothing() -> None:
    said = [_obs("obs-1", "I speak Portuguese with my mum", 1),
            _obs("obs-2", "and I'm picking up Korean now as well", 2)]
    statements = [_st("st-1", "user", "speaks", "Portuguese", "obs-1", 1)]
    assert "Portuguese" in _lead("what languages do I speak?", said, statements)


def test_asked_of_oneself_another_speaker_s_change_replaces_nothing() -> None:
    said = [_obs("obs-1", "I live in Paris", 1, source="alice"), _obs("obs-2", "I'm in Rome now", 2, source="bob")]
    statements = [_st("st-1", "alice", "lives_in", "Paris", "obs-1", 1, source="alice")]
    assert "Paris" in _lead("where do I live?", said, statements, asker="alice")


def test_a_change_said_long_after_replaces_nothing() -> None:
    said = [_obs("obs-1", "my dentist appointment is with Dr Okafor", 1),
            *(_obs(f"obs-{n}", f"note {n}: buy bread and milk", n) for n in range(2, 6)),
            _obs("obs-6", "scratch that, it's Dr Okonkwo", 6)]
    statements = [_st("st-1", "user's dentist appointment", "is_with", "Dr Okafor", "obs-1", 1)]
    assert "Okafor" in _lead("who is my dentist appointment with?", said, statements)


@pytest.mark.parametrize(("turns", "question", "agreed", "proposed"), [
    ([("olu", "let's meet at The Crown at 7 on Friday"),
      ("grace", "The Crown's shut for refurb, how about the Red Lion?"),
      ("olu", "Red Lion works"), ("ravi", "fine by me, see you all at the Red Lion")],
     "where are we meeting on Friday?", "Red Lion", "Crown"),
    ([("amara", "Friday dinner at Nando's, 7:30?"), ("felix", "works for me"),
      ("joon", "can we push to 8:15? I don't finish till 8"), ("amara", "fine by me, 8:15 it is")],
     "what time is Friday dinner?", "8:15", "7:30"),
])
def test_in_a_conversation_what_two_agree_on_replaces_what_was_proposed(
    turns: list[tuple[str, str]], question: str, agreed: str, proposed: str,
) -> None:
    said = [_obs(f"obs-{n}", text, n, source=source) for n, (source, text) in enumerate(turns, start=1)]
    lead = _lead(question, said, [])
    assert agreed in lead and proposed not in lead


def test_repeating_what_was_proposed_first_replaces_nothing() -> None:
    said = [_obs("obs-1", "let's meet at The Crown at 7 on Friday", 1, source="olu"),
            _obs("obs-2", "The Crown at 7 works for me", 2, source="grace"),
            _obs("obs-3", "see you at The Crown then", 3, source="ravi")]
    assert "olu said" in _lead("where are we meeting on Friday?", said, [])


def test_the_replacing_words_are_quoted_without_the_clause_naming_what_they_replace() -> None:
    said = [_obs("obs-1", "quiz night is at The Red Lion", 1),
            _obs("obs-2", "wait no, I got that wrong, it's The Black Horse, the Red Lion was last month", 2)]
    statements = [_st("st-1", "quiz night", "located_in", "Red Lion", "obs-1", 1)]
    lead = _lead("where is quiz night?", said, statements)
    assert "Black Horse" in lead and "Red Lion" not in lead


@pytest.mark.parametrize(("text", "left"), [
    ("wait no, I got that wrong, it's The Black Horse, the Red Lion was last month",
     "wait no, I got that wrong, it's The Black Horse"),
    ("the Red Lion was last month. It is the Black Horse now", "It is the Black Horse now"),
    ("moved from the Red Lion to the Black Horse", "moved from the Red Lion to the Black Horse"),  # one clause: kept
    ("see you at the Black Horse", "see you at the Black Horse"),  # nothing to leave out
])
def test_leaving_out_keeps_the_longest_run_of_clauses_not_naming_the_values(text: str, left: str) -> None:
    assert leaving_out(text, [frozenset({"red", "lion"}), frozenset({"7"})]) == left


def test_a_turn_confirming_the_replacing_one_leaves_it_leading() -> None:
    said = [_obs("obs-1", "book club is at my place on Saturday", 1, source="aroha"),
            _obs("obs-2", "I'll bring snacks", 2, source="tevita"),
            _obs("obs-3", "Aroha's kitchen flooded, so book club is at the Riverside library instead", 3,
                 source="tevita"),
            _obs("obs-4", "yep, sorry all, see you at the library", 4, source="aroha")]
    assert "Riverside" in _lead("where's book club on Saturday?", said, [])


def test_a_change_taken_back_replaces_nothing() -> None:
    said = [_obs("obs-1", "I work at Yandex.", 1, source="ivan"), _obs("obs-2", "I've joined JetBrains.", 2,
                                                                         source="ivan")]
    kept = _st("st-1", "ivan", "works_at", "Yandex", "obs-1", 1, source="ivan")
    joined = _st("st-2", "ivan", "joins", "JetBrains", "obs-2", 2, source="ivan", revision="change")
    recall = Recall(query="where does Ivan work?", statements=[kept], observations=said,
                    withdrawn=[joined.model_copy(update={"retracted_by": ["ret-1"]})])
    lead = compose(recall, 5, default_vocabulary(), Settings(), asker="ivan").lead
    assert "Yandex" in lead and "JetBrains" not in lead


def test_a_change_in_a_relation_found_only_by_meaning_still_replaces() -> None:
    vocabulary = default_vocabulary().with_relations({"goes_with": "works_at"})
    assert vocabulary.known("goes_with") and not vocabulary.declared("goes_with") and vocabulary.declared("works_at")
    said = [_obs("obs-1", "I use Spotify for music", 1), _obs("obs-2", "cancelled it, went with Tidal instead", 2)]
    statements = [_st("st-1", "user", "uses", "Spotify for music", "obs-1", 1),
                  _st("st-2", "user", "goes_with", "Tidal", "obs-2", 2, revision="change")]
    recall = Recall(query="what do I use for music?", statements=statements, observations=said)
    lead = compose(recall, 5, vocabulary, Settings(), asker="user").lead
    assert "Tidal" in lead and "Spotify" not in lead


def test_a_turn_saying_the_thing_ended_replaces_its_state() -> None:
    said = [_obs("obs-1", "ticket 4821 about the login bug is open", 1),
            _obs("obs-2", "4821 closed, fix shipped in v2.3", 2, source="support-agent")]
    statements = [_st("st-1", "ticket 4821", "has_status", "open", "obs-1", 1)]
    lead = _lead("is ticket 4821 still open?", said, statements)
    assert "closed" in lead and not lead.startswith("Yes")


def test_an_end_of_something_else_replaces_nothing() -> None:
    said = [_obs("obs-1", "Zainab's allergic to penicillin", 1), _obs("obs-2", "the boiler broke again", 2)]
    statements = [_st("st-1", "Zainab", "allergic_to", "penicillin", "obs-1", 1)]
    assert "penicillin" in _lead("what is Zainab allergic to?", said, statements)


@pytest.mark.parametrize(("second", "replaced"), [
    ("kwame", True),  # its speaker's "cancelled that" ends what they booked
    ("zara", False),  # another's "that" may be anything
])
def test_an_end_said_of_what_its_speaker_spoke_of_replaces_it(second: str, replaced: bool) -> None:
    said = [_obs("obs-1", "booked us a lane at Hollywood Bowl for Saturday", 1, source="kwame"),
            _obs("obs-2", "the weather looks grim this weekend", 2, source="zara"),
            _obs("obs-3", "ugh. ok cancelled that, rebooked at Tenpin in Croydon, same time", 3, source=second)]
    lead = _lead("where are we bowling on Saturday?", said, [])
    assert ("Tenpin" in lead) is replaced and ("Hollywood" in lead) is not replaced


@pytest.mark.parametrize(("speakers", "answers"), [
    (("haruto", "leila"), True),  # a conversation: a member's "let's" is the group's
    (("haruto", "haruto"), False),  # one speaker's "we" alone may be another group
])
def test_asked_of_us_a_member_of_a_conversation_speaks_for_the_group(speakers: tuple[str, str], answers: bool) -> None:
    said = [_obs("obs-1", "let's meet at the clock tower at noon", 1, source=speakers[0]),
            _obs("obs-2", "fine, I'll bring the map", 2, source=speakers[1])]
    assert ("clock tower" in _lead("where are we meeting?", said, [])) is answers


@pytest.mark.parametrize(("second", "replaced"), [
    # the old value said to be over: the turn is about the slot, wherever the rules placed the new value
    ("ok I did it. resigned from Soylent. I've been at Hooli for two weeks now, ML team", True),
    ("I've been at Hooli for two weeks now, ML team, still at Soylent on Fridays", False),  # the old one stands
])
def test_a_turn_saying_the_old_value_is_over_replaces_it_from_another_slot(second: str, replaced: bool) -> None:
    said = [_obs("obs-1", "Soylent made me an offer and I took it, so I'm at Soylent now", 1), _obs("obs-2", second, 2)]
    statements = [_st("st-1", "user", "works_at", "Soylent", "obs-1", 1, revision="change"),
                  _st("st-2", "user", "located_in", "Hooli", "obs-2", 2, revision="change"),
                  _st("st-3", "user", "resigns_from" if replaced else "works_at", "Soylent", "obs-2", 2)
                  .model_copy(update={"tense": "past" if replaced else "present"})]
    lead = _lead("where do I work?", said, statements)
    assert ("Hooli" in lead) is replaced


@pytest.mark.parametrize(("asked", "slot", "replaced"), [
    ("where's our team's office now?", "is_on", True),  # a place for a place, of a slot no rule knows
    ("where do I work?", "works_at", False),  # a declared slot: a move is another one (home, not work)
])
def test_a_move_answers_where_a_place_is_asked_of_a_slot_no_rule_knows(asked: str, slot: str, replaced: bool) -> None:
    said = [_obs("obs-1", "our team's office is on the 4th floor of the Kingsway building", 1),
            _obs("obs-2", "heads up, we've relocated to the old warehouse on Dock Road", 2)]
    statements = [_st("st-1", "user's team's office" if slot == "is_on" else "user", slot, "Kingsway building",
                      "obs-1", 1),
                  _st("st-2", "user", "lives_in", "old warehouse on Dock Road", "obs-2", 2, revision="change")]
    lead = _lead(asked, said, statements)
    assert ("Dock Road" in lead) is replaced and ("Kingsway" in lead) is not replaced


@pytest.mark.parametrize(("asked", "verdict"), [
    ("is Ines the project lead?", "No."),  # asked of the value replaced
    ("is Hugo the project lead?", None),  # the words that lead are no statement: no yes of them
])
def test_asked_yes_or_no_of_a_value_words_replaced_the_answer_is_no(asked: str, verdict: str | None) -> None:
    said = [_obs("obs-1", "the project lead is Ines", 1), _obs("obs-2", "Hugo took over as project lead now", 2)]
    statements = [_st("st-1", "project lead", "is_a", "Ines", "obs-1", 1)]
    recall = Recall(query=asked, statements=statements, observations=said)
    lead = compose(recall, 5, default_vocabulary(), Settings()).text().partition("\n")[0]
    assert "Hugo" in lead and lead.startswith("No.") is (verdict == "No.")
