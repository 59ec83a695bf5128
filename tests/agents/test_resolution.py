"""Resolution policy (pure) and predicate cardinality beyond the schema (on the real store)."""

from __future__ import annotations

from typing import Any

import pytest

from mnemonet.agents import Ownership, ValidationAgent
from mnemonet.llm import make_language_model
from mnemonet.model.views import StatementView
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.truth.currency import resolve
from mnemonet.truth.vocabulary import rule_cardinality

HOUR_MS = 3_600_000


def _st(id: str, source: str, obj: str, *, confidence: float = 0.9, at: int = 0) -> StatementView:
    return StatementView(id=id, subject="kim", predicate="lives_in", object=obj, confidence=confidence,
                         created_at=at, source=source)


@pytest.mark.parametrize(("old", "new", "trust", "winner", "reason"), [
    # same source: newer supersedes, unless less confident
    (_st("a", "alice", "Paris"), _st("b", "alice", "Rome", at=1000), {}, "b", "newer lives_in from alice"),
    (_st("a", "alice", "Paris"), _st("b", "alice", "Rome", confidence=0.5, at=1000), {}, None, "less confident"),
    # different sources, equal weight, seconds apart: open
    (_st("a", "alice", "Paris"), _st("b", "bob", "Rome", at=1000), {}, None, "equal weight"),
    # different sources, equal weight, days apart: the newer is a change
    (_st("a", "alice", "Paris"), _st("b", "bob", "Rome", at=48 * HOUR_MS), {}, "b", "newer lives_in from bob"),
    # trust decides, whichever is newer
    (_st("a", "alice", "Paris"), _st("b", "bob", "Rome", at=1000), {"alice": 2.0}, "a", "alice outweighs bob"),
    (_st("a", "alice", "Paris"), _st("b", "bob", "Rome", at=1000), {"bob": 2.0}, "b", "bob outweighs alice"),
    # confidence decides: a hedged claim loses to a confident one
    (_st("a", "alice", "Paris"), _st("b", "bob", "Rome", confidence=0.5, at=1000), {}, "a", "alice outweighs bob"),
])
def test_resolution_policy(old: StatementView, new: StatementView, trust: dict[str, float], winner: str | None,
                           reason: str) -> None:
    outcome = resolve(new, old, True, Settings(source_trust=trust))
    assert (outcome.winner.id if outcome.winner else None) == winner
    assert reason in outcome.reason
    if winner is not None:
        assert outcome.loser is not None and outcome.loser.id != winner


def _cued(st: StatementView, revision: str) -> StatementView:
    return st.model_copy(update={"revision": revision})


@pytest.mark.parametrize(("old", "new", "temporal", "trust", "winner", "reason"), [
    # same source, a fact that does not change: only a cue makes the newer a correction
    (_st("a", "alice", "Paris"), _st("b", "alice", "Rome", at=1000), False, {}, None, "nothing says which"),
    (_st("a", "alice", "Paris"), _cued(_st("b", "alice", "Rome", at=1000), "correction"), False, {}, "b",
     "alice corrects its own lives_in"),
    (_st("a", "alice", "Paris"), _cued(_st("b", "alice", "Rome", confidence=0.5, at=1000), "correction"), False,
     {}, None, "less confident"),
    # another agent, seconds later: a cue decides where recency cannot
    (_st("a", "alice", "Paris"), _cued(_st("b", "bob", "Rome", at=1000), "correction"), True, {}, "b",
     "bob corrects alice's lives_in"),
    (_st("a", "alice", "Paris"), _cued(_st("b", "bob", "Rome", at=1000), "change"), False, {}, "b",
     "bob reports a change of alice's lives_in"),
    # ... but not over a source trusted more: trust comes first
    (_st("a", "alice", "Paris"), _cued(_st("b", "bob", "Rome", at=1000), "correction"), True, {"alice": 2.0}, "a",
     "alice outweighs bob"),
    # a cue on the older side decides nothing
    (_cued(_st("a", "alice", "Paris"), "correction"), _st("b", "bob", "Rome", at=1000), True, {}, None,
     "equal weight"),
])
def test_revision_cues_in_the_policy(old: StatementView, new: StatementView, temporal: bool,
                                     trust: dict[str, float], winner: str | None, reason: str) -> None:
    outcome = resolve(new, old, temporal, Settings(source_trust=trust))
    assert (outcome.winner.id if outcome.winner else None) == winner
    assert reason in outcome.reason


def test_a_not_temporal_conflict_between_equal_sources_stays_open_however_far_apart() -> None:
    old, new = _st("a", "alice", "Paris"), _st("b", "bob", "Rome", at=48 * HOUR_MS)
    assert resolve(new, old, False, Settings()).winner is None


@pytest.mark.parametrize(("predicate", "expected"), [
    ("has_manager", "single"), ("has_email", "single"), ("works_at", "single"), ("lives_in", "single"),
    ("drives", "single"), ("likes", "multi"), ("knows", "multi"), ("visited", "multi"), ("owns", "multi"),
    ("has_child", "multi"), ("has_skill", "multi"), ("wrote", "multi"),
])
def test_offline_cardinality_rule(predicate: str, expected: str) -> None:
    assert rule_cardinality(predicate) == expected


class NoQuestions:
    """A language model that fails the test if the validator asks it anything."""

    name = "no-questions"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the validator asked the model: {name}")


async def _open_and_superseded(service: MemoryService) -> tuple[set[frozenset[str]], set[str]]:
    open_pairs = {frozenset((c.a.object, c.b.object)) for c in await service.get_unresolved_contradictions(50)}
    superseded = {s.object for s in await service.graph.recent_statements(100) if s.superseded_by}
    return open_pairs, superseded


async def test_cardinality_learned_from_the_data_without_asking(service: MemoryService, agent_settings: Settings
                                                               ) -> None:
    for i, person in enumerate(["ann", "ben", "cat"]):  # each subject drives one car: single-valued
        await service.claim(f"{person} drives_car: Car{i}", source="alice", idempotency_key=f"d{i}")
    agent = ValidationAgent(service, agent_settings, Ownership.solo("v1"), NoQuestions())
    await agent.drain()
    await service.claim("ann drives_car: Tesla", source="alice", idempotency_key="d-new")
    await agent.drain()
    open_pairs, superseded = await _open_and_superseded(service)
    assert superseded == {"Car0"}
    assert await service.graph.predicate_decision("drives_car") is None  # learned, not a remembered decision


async def test_several_values_from_one_source_teach_multi(service: MemoryService, agent_settings: Settings) -> None:
    await service.claim("dan speaks_language: French", source="alice", idempotency_key="s1")
    await service.claim("dan speaks_language: Dutch", source="alice", idempotency_key="s2")
    agent = ValidationAgent(service, agent_settings, Ownership.solo("v1"), make_language_model(agent_settings))
    await agent.drain()  # a brand-new predicate, one subject: asked (offline rule: multi), remembered
    decision = await service.graph.predicate_decision("speaks_language")
    assert decision == ("multi", "language model (offline (rule-based))")
    await service.claim("eve speaks_language: Greek", source="bob", idempotency_key="s3")
    await service.claim("eve speaks_language: Latin", source="bob", idempotency_key="s4")
    before = agent.stats()["llm_calls"]
    await agent.drain()
    assert agent.stats()["llm_calls"] == before  # asked once per predicate
    assert (await service.graph.counts())["CONTRADICTS"] == 0


async def test_values_said_together_both_hold(service: MemoryService, agent_settings: Settings) -> None:
    # "my kids are Amara and Tobi": has_kid is one-valued by its name, but one sentence gave both.
    await service.observe("my kids are Amara and Tobi", source="user")
    await service.observe("my manager is Tom. Sorry, my manager is Priya", source="user")  # a correction
    agent = ValidationAgent(service, agent_settings, Ownership.solo("v1"), make_language_model(agent_settings))
    await agent.drain()
    open_pairs, superseded = await _open_and_superseded(service)
    assert superseded == {"Tom"} and not open_pairs


async def test_my_manager_changes_supersede_and_two_sources_conflict(service: MemoryService,
                                                                    agent_settings: Settings) -> None:
    await service.claim("alice has_manager: Tom", source="alice", idempotency_key="m1")
    await service.claim("alice has_manager: Priya", source="alice", idempotency_key="m2")
    await service.claim("zoe has_manager: Tom", source="alice", idempotency_key="m3")
    await service.claim("zoe has_manager: Priya", source="bob", idempotency_key="m4")
    agent = ValidationAgent(service, agent_settings, Ownership.solo("v1"), make_language_model(agent_settings))
    await agent.drain()
    statements = await service.graph.recent_statements(20)
    [old] = [s for s in statements if s.subject == "alice" and s.object == "Tom"]
    [new] = [s for s in statements if s.subject == "alice" and s.object == "Priya"]
    assert old.superseded_by == [new.id]  # same speaker: the newer manager supersedes
    [conflict] = await service.get_unresolved_contradictions(10)  # two speakers, equal weight: open
    assert {conflict.a.source, conflict.b.source} == {"alice", "bob"} and conflict.a.subject == "zoe"
    rows = await service.graph.read_query(
        "MATCH (a:Statement)-[r:SUPERSEDES]->(b:Statement) RETURN r.reason AS reason")
    assert [r["reason"] for r in rows] == [rows[0]["reason"]] and "newer has_manager from alice" in rows[0]["reason"]


async def test_a_trusted_source_wins_a_conflict(service: MemoryService, agent_settings: Settings) -> None:
    settings = agent_settings.model_copy(update={"source_trust": {"bob": 2.0}})
    await service.claim("zoe lives in Oslo", source="bob", idempotency_key="t1")
    await service.claim("zoe lives in Lima", source="alice", idempotency_key="t2")
    agent = ValidationAgent(service, settings, Ownership.solo("v1"), make_language_model(settings))
    await agent.drain()
    open_pairs, superseded = await _open_and_superseded(service)
    assert superseded == {"Lima"} and open_pairs == set()


def _about(subject: str, source: str, obj: str, at: int) -> StatementView:
    return StatementView(id=f"{source}-{obj}", subject=subject, predicate="lives_in", object=obj, confidence=0.9,
                         created_at=at, source=source)


@pytest.mark.parametrize(("old", "new", "authority", "winner", "reason"), [
    # alice speaks for herself over bob's earlier word about her, whatever the weights and the gap in time
    (_about("Alice", "bob", "Leeds", 0), _about("alice", "alice", "York", 1000), True, "alice-York",
     "alice speaks for themselves"),
    (_about("Alice", "bob", "Leeds", 0), _about("alice", "alice", "York", 1000), False, None, "equal weight"),
    # a later word of another source about her does not outrank hers either, unless it reports a change
    (_about("alice", "alice", "York", 0), _about("Alice", "bob", "Leeds", 1000), True, "alice-York",
     "alice speaks for themselves over bob's later, unmarked statement"),
    (_about("alice", "alice", "York", 0),
     _about("Alice", "bob", "Leeds", 1000).model_copy(update={"revision": "change"}), True, "bob-Leeds",
     "bob reports a change of alice's lives_in"),
])
def test_the_subject_speaks_for_themselves(old: StatementView, new: StatementView, authority: bool,
                                           winner: str | None, reason: str) -> None:
    outcome = resolve(new, old, True, Settings(subject_authority=authority))
    assert (outcome.winner.id if outcome.winner else None) == winner
    assert reason in outcome.reason


def test_a_past_statement_ends_its_value_and_leaves_others_alone() -> None:
    from mnemonet.truth.currency import classify
    from mnemonet.truth.vocabulary import default_vocabulary

    now = StatementView(id="a", subject="sam", predicate="works_at", object="Google", confidence=0.9)
    once = now.model_copy(update={"id": "b", "tense": "past"})
    elsewhere = now.model_copy(update={"id": "c", "object": "Microsoft"})
    assert classify(once, now, default_vocabulary()).kind == "contradicts"  # "I used to work at Google"
    assert classify(once, elsewhere, default_vocabulary()).kind == "none"  # "... but now I work at Microsoft"


async def test_an_inferring_workers_own_statements_teach_no_cardinality(service: MemoryService) -> None:
    # Issue 32, seen case 4: ten inferred homes of one person (the twins of ten moves) taught "multi".
    for i, city in enumerate(["Lyon", "Nice", "Metz"]):
        await service.claim(f"alice located_at_home: {city}", source="inference-agent", idempotency_key=f"i{i}")
    assert await service.graph.predicate_values("located_at_home", []) == (0, 0)
    await service.claim("bob located_at_home: Rome", source="bob", idempotency_key="b")
    assert await service.graph.predicate_values("located_at_home", []) == (1, 0)
