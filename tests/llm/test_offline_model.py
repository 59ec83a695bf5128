"""The offline rule-based translator: a table of sentences, the claim round trip, and the other rules."""

from __future__ import annotations

import pytest

from mnemonet.llm import CandidatePair, LanguageModel, LanguageModelError, OfflineLanguageModel, Triple, render_claim
from mnemonet.settings import Settings

T = tuple[str, str, str, bool]

TABLE: list[tuple[str, list[T]]] = [
    ("I prefer morning meetings", [("user", "prefers", "morning meetings", False)]),
    ("actually I hate mornings, afternoon is better",
     [("user", "dislikes", "mornings", False), ("user", "prefers", "afternoon", False)]),
    ("I don't like coffee", [("user", "likes", "coffee", True)]),
    ("I do not like spicy food", [("user", "likes", "spicy food", True)]),
    ("I like tea", [("user", "likes", "tea", False)]),
    ("I love jazz", [("user", "loves", "jazz", False)]),
    ("I enjoy hiking", [("user", "enjoys", "hiking", False)]),
    ("I dislike crowded trains", [("user", "dislikes", "crowded trains", False)]),
    ("I want a new laptop", [("user", "wants", "new laptop", False)]),
    ("I need more sleep", [("user", "needs", "more sleep", False)]),
    ("I use Neovim", [("user", "uses", "Neovim", False)]),
    ("I work at Acme", [("user", "works_at", "Acme", False)]),
    ("I work on the billing service", [("user", "works_on", "billing service", False)]),
    ("Alice works at Acme", [("Alice", "works_at", "Acme", False)]),
    ("Bob lives in Berlin", [("Bob", "lives_in", "Berlin", False)]),
    ("I live in Paris, France", [("user", "lives_in", "Paris, France", False)]),
    ("My sister lives in Madrid", [("user's sister", "lives_in", "Madrid", False)]),
    ("My name is Sam", [("user", "has_name", "Sam", False)]),
    ("I am called Sam", [("user", "has_name", "Sam", False)]),
    ("Call me Sam", [("user", "has_name", "Sam", False)]),
    ("Rex is a dog", [("Rex", "is_a", "dog", False)]),
    ("Bob is not a doctor", [("Bob", "is_a", "doctor", True)]),
    ("Alice isn't a manager", [("Alice", "is_a", "manager", True)]),
    ("The sky is blue", [("sky", "has_property", "blue", False)]),
    ("Carol has a cat", [("Carol", "has", "cat", False)]),
    ("I have two kids", [("user", "has", "two kids", False)]),
    ("I don't have a car", [("user", "has", "car", True)]),
    ("Alice has no siblings", [("Alice", "has", "siblings", True)]),
    ("I no longer live in London", [("user", "lives_in", "London", True)]),
    ("I never drink coffee", [("user", "drinks", "coffee", True)]),
    ("I can't stand loud music", [("user", "dislikes", "loud music", False)]),
    ("I'm interested in machine learning", [("user", "interested_in", "machine learning", False)]),
    ("I am allergic to peanuts", [("user", "allergic_to", "peanuts", False)]),
    ("I'm from Canada", [("user", "comes_from", "Canada", False)]),
    ("I'm a big fan of football", [("user", "likes", "football", False)]),
    ("I like cats and dogs", [("user", "likes", "cats", False), ("user", "likes", "dogs", False)]),
    ("I like cats but not dogs", [("user", "likes", "cats", False), ("user", "likes", "dogs", True)]),
    ("I like tea and Alice likes coffee", [("user", "likes", "tea", False), ("Alice", "likes", "coffee", False)]),
    ("I like cats and hate dogs", [("user", "likes", "cats", False), ("user", "dislikes", "dogs", False)]),
    ("I'd rather have tea", [("user", "prefers", "tea", False)]),
    ("I prefer tea to coffee", [("user", "prefers", "tea", False)]),
    ("I really like pizza", [("user", "likes", "pizza", False)]),
    ("We use Postgres", [("user", "uses", "Postgres", False)]),
    # a name the tagger reads as a verb (its -ify) keeps its capital
    ("I use Spotify for podcasts", [("user", "uses", "Spotify for podcasts", False)]),
    # a prepositional object keeps the clause's place, as a direct one does
    ("I swim at the pool at Kelvin Hall", [("user", "swims_at", "pool at Kelvin Hall", False)]),
    # a passive without its subject is the speaker's
    ("got engaged in Lisbon", [("user", "has_property", "engaged", False)]),
    # a verb of replacing with nothing given up switches; a "to" the tagger read as a verb's is a preposition
    ("I swapped to decaf coffee", [("user", "uses", "decaf coffee", False)]),
    ("switched to soy milk last month", [("user", "uses", "soy milk", False)]),
    # a name given to the object is part of it
    ("we keep a parrot called Kiwi", [("user", "keeps", "parrot called Kiwi", False)]),
    # an opening past clause without a subject is the speaker's; what took a given-up thing's place fills
    # the slot it held, which the words do not name
    ("dropped Hinge, it's Bumble for me these days",
     [("user", "drops", "Hinge", False), ("user", "has_value", "Bumble", False)]),
    ("Dave knows me", [("Dave", "knows", "user", False)]),
    ("My favourite colour is green", [("user", "has_favourite_colour", "green", False)]),
    ("Evenings are worse", [("user", "prefers", "evenings", True)]),
    ("Alice is working on the new website", [("Alice", "works_on", "new website", False)]),
    ("I study at MIT", [("user", "studies_at", "MIT", False)]),
    ("I was born in Lagos", [("user", "born_in", "Lagos", False)]),
    ("I speak French; Alice speaks German.",
     [("user", "speaks", "French", False), ("Alice", "speaks", "German", False)]),
    ("I like tea. I hate coffee!", [("user", "likes", "tea", False), ("user", "dislikes", "coffee", False)]),
    ("What are my meeting preferences?", []),
    ("Do I like coffee?", []),
    ("He likes football", []),  # pronouns other than first person are not resolved
]


@pytest.fixture
def offline() -> OfflineLanguageModel:
    return OfflineLanguageModel(Settings())


@pytest.mark.parametrize(("sentence", "expected"), TABLE, ids=[s for s, _ in TABLE])
async def test_sentence_table(offline: OfflineLanguageModel, sentence: str, expected: list[T]) -> None:
    extraction = await offline.extract_observation(sentence, "user")
    assert [(t.subject, t.predicate, t.object, t.negated) for t in extraction.statements] == expected
    names = {c.name for c in extraction.concepts}
    assert all(t.subject in names and t.object in names for t in extraction.statements)


def test_table_is_large_enough() -> None:
    assert len(TABLE) >= 40


async def test_hedges_lower_confidence(offline: OfflineLanguageModel) -> None:
    sure = (await offline.extract_observation("I prefer tea", "user")).statements[0]
    hedged = (await offline.extract_observation("I think I prefer tea", "user")).statements[0]
    assert (sure.confidence, hedged.confidence) == (0.9, 0.7)  # the shared hedge table (llm/hedges.py)


async def test_meeting_concepts_decompose_and_link(offline: OfflineLanguageModel) -> None:
    first = await offline.extract_observation("I prefer morning meetings", "user")
    second = await offline.extract_observation("actually I hate mornings, afternoon is better", "user")
    meetings = next(c for c in first.concepts if c.name == "morning meetings")
    assert meetings.kind == "activity"
    assert [(c.name, c.relation) for c in meetings.components] == [("meeting", "head_noun"), ("morning", "modifier")]
    kinds = {c.name: (c.kind, c.aliases) for c in second.concepts}
    assert kinds == {"user": ("person", ()), "mornings": ("time", ("morning",)), "afternoon": ("time", ())}
    assert "morning" in first.topics and "afternoon" in second.topics


INFERABLE = [
    "I prefer morning meetings", "I hate mornings", "I work at Acme", "I live in Paris", "I love jazz",
    "I enjoy hiking and I like tea", "Alice works at Acme", "I was born in Lagos", "Bob is a doctor",
    "I don't like coffee", "I use Neovim", "My name is Sam", "The sky is blue", "I am allergic to peanuts",
    "I have two kids", "I work on the billing service", "I'm interested in machine learning",
]


async def test_claim_sentences_round_trip(offline: OfflineLanguageModel) -> None:
    triples: list[Triple] = []
    for text in INFERABLE:
        triples += (await offline.extract_observation(text, "user")).statements
        triples += await offline.infer_claims(text)
    triples += [Triple(subject="user", predicate="has_email", object="sam@example.com", confidence=0.75, negated=True),
                Triple(subject="Acme Corp", predicate="employs", object="user", confidence=0.123456789)]
    assert len(triples) > 25
    for triple in triples:
        parsed = await offline.parse_claim(render_claim(triple), "agent")
        # The canonical claim form carries no tense or date ("user was born in Lagos" is past): compare the rest.
        assert parsed.triple == triple.model_copy(update={"tense": "present", "valid_at": None}), render_claim(triple)


def test_canonical_claim_examples() -> None:
    assert render_claim(Triple(subject="user", predicate="prefers", object="afternoon meetings", confidence=0.8)) == \
        "user prefers afternoon meetings (confidence 0.8)"
    assert render_claim(Triple(subject="user", predicate="likes", object="mornings", negated=True)) == \
        "user does not like mornings (confidence 0.9)"


async def test_infer_claims_rules(offline: OfflineLanguageModel) -> None:
    inferred = await offline.infer_claims("I work at Acme and I hate mornings")
    got = [(t.subject, t.predicate, t.object, t.negated) for t in inferred]
    assert got == [("Acme", "employs", "user", False), ("user", "likes", "mornings", True)]
    assert await offline.infer_claims("Bob is a doctor") == []


async def test_infer_claims_read_first_person_as_the_speaker(offline: OfflineLanguageModel) -> None:
    inferred = await offline.infer_claims("I work at Acme and I live in Oslo", "alice")
    got = [(t.subject, t.predicate, t.object) for t in inferred]
    assert got == [("Acme", "employs", "alice"), ("alice", "located_in", "Oslo")]  # never "user" for alice
    with pytest.raises(ValueError, match="source"):
        await offline.infer_claims("I work at Acme", "")


async def test_parse_claim_reads_natural_and_statement_forms(offline: OfflineLanguageModel) -> None:
    natural = await offline.parse_claim("Alice works at Acme", "agent")
    assert (natural.triple.subject, natural.triple.predicate, natural.triple.object) == ("Alice", "works_at", "Acme")
    spec_form = await offline.parse_claim("user not likes mornings", "agent")
    assert (spec_form.triple.predicate, spec_form.triple.negated) == ("likes", True)
    with pytest.raises(LanguageModelError, match="could not read a statement"):
        await offline.parse_claim("hmm, interesting", "agent")


async def test_judge_pairs_rules(offline: OfflineLanguageModel) -> None:
    pairs = [
        ("user prefers morning meetings", "user prefers afternoon"),  # different times of day
        ("user prefers morning meetings", "user dislikes mornings"),  # another thing: both can hold
        ("user loves mornings", "user dislikes morning"),  # opposite feelings about one thing
        ("user likes coffee", "user does not like coffee"),  # negation
        ("user prefers tea", "user prefers coffee"),  # no shared slot the rules can see
        ("Alice lives in Paris", "Alice lives in Berlin"),  # single-valued attribute
        ("user likes coffee", "Alice does not like coffee"),  # different subjects
        ("user likes tea", "it is what it is"),  # unreadable
    ]
    judgements = await offline.judge_pairs([CandidatePair(a=a, b=b) for a, b in pairs])
    assert [j.contradicts for j in judgements] == [True, False, True, True, False, True, False, False]
    assert [j.index for j in judgements] == list(range(len(pairs)))
    assert await offline.judge_pairs([]) == []


async def test_answer_keeps_order_cites_and_filters(offline: OfflineLanguageModel) -> None:
    memory = [("st-3", "user prefers afternoon"), ("st-1", "user prefers morning meetings"),
              ("st-2", "user dislikes mornings"), ("st-9", "Alice works at Acme")]
    answer = await offline.answer("what are my meeting preferences?", memory)
    assert answer.text.startswith("From memory: user prefers afternoon [st-3].")
    assert "morning meetings [st-1]" in answer.text
    assert answer.cited == ["st-3", "st-1", "st-2"]
    empty = await offline.answer("where does Bob live?", memory)
    assert (empty.text, empty.cited) == ("Nothing in memory answers that.", [])


async def test_summarise_builds_on_previous(offline: OfflineLanguageModel) -> None:
    first = await offline.summarise("mornings", ["user dislikes mornings"], None)
    second = await offline.summarise("mornings", ["user prefers morning meetings", "user dislikes mornings"], first)
    assert first == "mornings: user dislikes mornings."
    assert second == "mornings: user dislikes mornings; user prefers morning meetings."
    small = OfflineLanguageModel(Settings(llm_summary_max_chars=30))
    assert await small.summarise("x", ["a" * 10, "b" * 10, "c" * 10], None) == f"x: {'b' * 10}; {'c' * 10}."


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.extract_observation("", "user"), "text: must not be empty"),
        (lambda m: m.extract_observation("x" * 20_001, "user"), "text: longer than 20000"),
        (lambda m: m.extract_observation(42, "user"), "text: must be a string"),
        (lambda m: m.parse_claim("user likes tea", ""), "source: must not be empty"),
        (lambda m: m.answer("q", "not a list"), "memory: must be a list"),
        (lambda m: m.answer("q", [("bad id!", "x")]), "memory.id"),
        (lambda m: m.judge_pairs([{"a": "x"}]), "pairs: every item needs"),
        (lambda m: m.summarise("c", ["ok"] * 201, None), "statements: more than 200"),
        (lambda m: m.infer_claims(None), "observation_text: must be a string"),
    ],
)
async def test_bad_input_names_the_field_and_makes_no_call(offline: OfflineLanguageModel, call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await call(offline)
    assert offline.usage()["calls"] == 0


async def test_is_a_labelled_language_model_that_counts_calls(offline: OfflineLanguageModel) -> None:
    assert isinstance(offline, LanguageModel)
    assert "offline (rule-based)" in offline.name
    await offline.extract_observation("I like tea", "user")
    await offline.answer("tea?", [])
    assert offline.usage()["calls"] == 2 and offline.usage()["requests"] == 0


async def test_answer_matches_facts_not_provenance(offline: OfflineLanguageModel) -> None:
    # Lines as MemoryService writes them: every one shares the status and provenance columns.
    tail = " | current | confidence 0.90 | from user | 2026-11-22 13:50"
    memory = [("st-4", "user not likes morning" + tail), ("st-5", "Carol works at Acme" + tail),
              ("st-6", "Carol lives in Paris" + tail), ("st-7", "user prefers afternoon" + tail)]
    answer = await offline.answer("where does Carol work?", memory)
    assert answer.cited == ["st-5", "st-6"]  # the direct match first, then what shares "Carol" with it
    preferences = await offline.answer("what are my preferences?", memory)
    assert preferences.text.startswith("From memory: user prefers afternoon [st-7].")
