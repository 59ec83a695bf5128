"""The validation worker on a real store: the truth table, batching of ambiguous pairs, resolution."""

from __future__ import annotations

from mnemonet.agents import InferenceAgent, Ownership, ValidationAgent
from mnemonet.llm import make_language_model
from mnemonet.model.views import StatementView
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

# (case, first claim, second claim, contradiction expected)
TRUTH_TABLE = [
    ("multi-valued, two values", "alice has_hobby: chess", "alice has_hobby: tennis", False),
    ("single-valued, two values", "bob lives in Paris", "bob lives in Berlin", True),
    ("aliased predicates", "carol is_called: Cee", "carol has_name: Caroline", True),
    ("identical statements", "dave likes tea", "dave likes tea", False),
    ("different subjects", "erin lives in Rome", "frank lives in Oslo", False),
    ("negated vs plain", "gina likes jazz", "gina does not like jazz", True),
    ("exclusivity group (object)", "hank likes opera", "hank dislikes opera", True),
    ("exclusivity group (subject)", "ivy is_married: yes", "ivy is_single: yes", True),
    # Outside the schema: no data yet, so the model is asked once (offline: has_* is single-valued).
    ("unknown predicate, different objects", "jack has_coach: Tom", "jack has_coach: Priya", True),
    ("cross-source, single-valued", "kim lives in Paris", "kim lives in Rome", True),
]
# Who says each claim (the rest: the default claim source, "agent").
SOURCES = {"cross-source, single-valued": ("alice", "bob")}


class RerunValidator(ValidationAgent):
    """A second validator that has done nothing yet, so it re-examines every statement."""

    source = "validation-rerun"


async def _contradiction_pairs(service: MemoryService) -> list[frozenset[str]]:
    rows = await service.graph.read_query(
        "MATCH (a:Statement)-[:CONTRADICTS]->(b:Statement) RETURN a.sentence AS a, b.sentence AS b")
    return [frozenset((r["a"], r["b"])) for r in rows]


async def test_truth_table(service: MemoryService, agent_settings: Settings) -> None:
    views: dict[str, tuple[StatementView, StatementView]] = {}
    for case, first, second, _ in TRUTH_TABLE:
        source_a, source_b = SOURCES.get(case, ("agent", "agent"))
        a = await service.claim(first, source=source_a, idempotency_key=f"{case}/1")
        b = await service.claim(second, source=source_b, idempotency_key=f"{case}/2")
        assert a.statement is not None and b.statement is not None
        views[case] = (a.statement, b.statement)
    llm = make_language_model(agent_settings)
    agent = ValidationAgent(service, agent_settings, Ownership.solo("v1"), llm)

    assert await agent.drain() == 2 * len(TRUTH_TABLE)

    found = await _contradiction_pairs(service)
    for case, _, _, expected in TRUTH_TABLE:
        first_view, second_view = views[case]
        pair = frozenset((first_view.sentence(), second_view.sentence()))
        assert (pair in found) is expected, case
    assert len(found) == sum(expected for *_, expected in TRUTH_TABLE)  # each written once
    # Every case is decided by rule, but for one question: has_coach's cardinality, then remembered.
    assert agent.stats()["llm_calls"] == 1
    assert await service.graph.predicate_decision("has_coach") == ("single", "language model (offline (rule-based))")
    # Same source, same confidence, a newer value of the same attribute: the newer supersedes.
    superseded = {s.id for s in await service.graph.recent_statements(100) if s.superseded_by}
    assert superseded == {views[c][0].id for c in ("single-valued, two values", "aliased predicates",
                                                   "negated vs plain", "unknown predicate, different objects")}
    # Two sources of equal trust and confidence, seconds apart: the conflict stays open.
    kim_paris, kim_rome = views["cross-source, single-valued"]
    assert kim_paris is not None and kim_rome is not None
    open_pairs = {frozenset((c.a.id, c.b.id)) for c in await service.get_unresolved_contradictions(50)}
    assert frozenset((kim_paris.id, kim_rome.id)) in open_pairs

    # Rerun, by a fresh validator that re-examines everything: no duplicate.
    rerun = RerunValidator(service, agent_settings, Ownership.solo("v2"), llm)
    assert await rerun.drain() == 2 * len(TRUTH_TABLE)
    assert sorted(map(sorted, await _contradiction_pairs(service))) == sorted(map(sorted, found))
    assert rerun.stats()["claims_made"] == 0
    assert rerun.stats()["llm_calls"] == 0  # has_coach's cardinality is remembered in the graph
    assert (await service.graph.counts())["SUPERSEDES"] == 4


async def test_meeting_preferences_ambiguous_pairs_go_to_the_model_in_one_call(
    service: MemoryService, agent_settings: Settings
) -> None:
    await service.observe("I prefer morning meetings")
    await service.observe("actually I hate mornings, afternoon is better")
    llm = make_language_model(agent_settings)
    await InferenceAgent(service, agent_settings, Ownership.solo("i1")).drain()
    validator = ValidationAgent(service, agent_settings, Ownership.solo("v1"), llm)

    await validator.drain()

    assert validator.stats()["llm_calls"] == 1  # all ambiguous pairs of the batch judged together
    statements = {s.sentence(): s for s in await service.graph.recent_statements(50)}
    morning, afternoon = statements["user prefers morning meetings"], statements["user prefers afternoon"]
    dislike = statements["user dislikes morning"]
    # Disliking mornings and preferring morning meetings can both hold: a broader feeling about another
    # thing neither contradicts nor retires the narrower one (issue 32, item 6).
    assert dislike.id not in morning.contradicted_by
    # "actually ..." marks the afternoon preference as a correction of the same topic: it supersedes.
    assert morning.superseded_by == [afternoon.id]
    answer = await service.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert "afternoon" in lead and "morning" not in lead
    assert "user prefers morning meetings" in rest.partition("Changed:")[2]
