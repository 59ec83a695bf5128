"""GraphStore contract: what every backend must do (embedded FalkorDB always, Neo4j when configured)."""

from __future__ import annotations

import asyncio

import pytest

from mnemonet.model import (
    ClaimRecord,
    ConceptComponent,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    StatementLink,
    StatementSpec,
)
from mnemonet.model.errors import InvalidInput
from mnemonet.store.graph import GraphStore
from mnemonet.store.graph_errors import UnknownReference

ALICE = SourceSpec(name="alice")
WORKER = SourceSpec(name="inference", kind="agent")


def st(
    id: str, subject: str, predicate: str, obj: str, confidence: float = 1.0, negated: bool = False
) -> StatementSpec:
    return StatementSpec(id=id, subject=subject, predicate=predicate, object=obj, confidence=confidence,
                         negated=negated)


def obs(id: str, *statements: StatementSpec, concepts: tuple[ConceptSpec, ...] = (), text: str = "some text",
        created_at: int | None = None) -> ObservationRecord:
    return ObservationRecord(id=id, text=text, source=ALICE, statements=statements, concepts=concepts,
                             created_at=created_at)


def claim(id: str, subject: str, predicate: str, obj: str, **links: object) -> ClaimRecord:
    return ClaimRecord(statement=st(id, subject, predicate, obj), source=WORKER, **links)


async def test_observation_write_is_idempotent(graph_store: GraphStore) -> None:
    record = obs("o1", st("s1", "user", "likes", "tea"), st("s2", "user", "drinks", "tea"),
                 text="the user likes tea", created_at=1000)
    first = await graph_store.write_observation(record)
    before = await graph_store.counts()
    again = await graph_store.write_observation(record)
    assert (first.created, again.created) == (True, False)
    assert await graph_store.counts() == before
    assert before["Observation"] == 1 and before["Statement"] == 2 and before["Concept"] == 2
    assert before["DERIVED_FROM"] == 2 and before["ASSERTED_BY"] == 2 and before["RECORDED_BY"] == 1
    assert before["MENTIONS"] == 2 and before["Source"] == 1
    [view] = await graph_store.get_observations(["o1"])
    assert (view.text, view.source, view.created_at) == ("the user likes tea", "alice", 1000)


async def test_empty_observation_and_metadata_round_trip(graph_store: GraphStore) -> None:
    record = ObservationRecord(id="o-empty", text='quote " back \\ new\nline ü', source=ALICE,
                               topics=("diet",), metadata={"channel": "chat"})
    assert (await graph_store.write_observation(record)).created
    [view] = await graph_store.get_observations(["o-empty"])
    assert view.text == record.text and view.topics == ["diet"] and view.metadata == {"channel": "chat"}
    assert await graph_store.statements_from_observation("o-empty") == []


async def test_statement_id_reused_by_another_observation_is_not_touched(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    await graph_store.write_observation(obs("o2", st("s1", "user", "hates", "tea"), st("s2", "user", "likes", "cake")))
    [s1] = await graph_store.get_statements(["s1"])
    assert (s1.predicate, s1.derived_from) == ("likes", ["o1"])
    assert [s.id for s in await graph_store.statements_from_observation("o2")] == ["s2"]


async def test_extracted_from_names_each_statements_own_observation(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea"), st("s2", "user", "drinks", "tea"),
                                            text="the user likes tea", created_at=1000))
    await graph_store.write_observation(obs("o2", st("s3", "user", "likes", "cake"), created_at=2000).model_copy(
        update={"metadata": {"session": "d1"}, "topics": ("cake",)}))
    await graph_store.write_claim(claim("c1", "user", "prefers", "tea", derived_from=["o1", "s1"]))
    found = await graph_store.extracted_from(["s1", "s3", "c1", "unknown"])
    # The later claim about o1 was not extracted from it.
    assert sorted(found) == ["s1", "s3"]
    assert (found["s1"].id, found["s1"].text, found["s1"].source, found["s1"].created_at) == (
        "o1", "the user likes tea", "alice", 1000)
    assert (found["s3"].id, found["s3"].created_at, found["s3"].metadata) == ("o2", 2000, {"session": "d1"})
    assert found["s3"].topics == []  # not read: search, its caller, reads none
    assert await graph_store.extracted_from([]) == {}
    with pytest.raises(ValueError, match="statement_ids"):
        await graph_store.extracted_from("s1")  # type: ignore[arg-type]


async def test_claim_is_idempotent_and_links_its_basis(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    record = claim("c1", "user", "prefers", "tea", derived_from=["o1", "s1"])
    assert (await graph_store.write_claim(record)).created
    before = await graph_store.counts()
    assert not (await graph_store.write_claim(record)).created
    assert await graph_store.counts() == before
    [view] = await graph_store.get_statements(["c1"])
    assert sorted(view.derived_from) == ["o1", "s1"] and view.source == "inference"
    found = await graph_store.statements_by_source("Inference", ["o1"])
    assert [s.id for s in found] == ["c1"]
    assert await graph_store.statements_by_source("someone else", ["o1"]) == []


async def test_claim_with_missing_reference_writes_nothing(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    before = await graph_store.counts()
    with pytest.raises(UnknownReference, match="claim.derived_from.*nope"):
        await graph_store.write_claim(claim("c1", "user", "loves", "coffee", derived_from=["o1", "nope"]))
    with pytest.raises(UnknownReference, match="claim.supersedes.*gone"):
        await graph_store.write_claim(claim("c2", "user", "loves", "coffee",
                                            supersedes=[StatementLink(target_id="gone")]))
    assert await graph_store.counts() == before
    assert await graph_store.get_node("c1") is None


async def test_contradictions_are_never_duplicated(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea"), st("s2", "user", "likes",
        "coffee")))
    assert await graph_store.link_statements("CONTRADICTS", "s1", "s2", "one drink", WORKER)
    assert not await graph_store.link_statements("CONTRADICTS", "s1", "s2", "again", WORKER)
    assert not await graph_store.link_statements("CONTRADICTS", "s2", "s1", "reversed", WORKER)
    # A claim contradicting s1 adds its own edge; linking it again either way adds none.
    await graph_store.write_claim(claim("c1", "user", "hates", "tea", contradicts=[StatementLink(target_id="s1")]))
    assert not await graph_store.link_statements("CONTRADICTS", "s1", "c1", "rerun", WORKER)
    assert (await graph_store.counts())["CONTRADICTS"] == 2
    open_pairs = {frozenset((c.a.id, c.b.id)) for c in await graph_store.unresolved_contradictions()}
    assert open_pairs == {frozenset(("s1", "s2")), frozenset(("s1", "c1"))}
    # Those touching given statements, from either side, each once.
    touching = await graph_store.unresolved_contradictions_of(["s2", "c1", "s1"])
    assert len(touching) == 2 and {frozenset((c.a.id, c.b.id)) for c in touching} == open_pairs
    assert [frozenset((c.a.id, c.b.id)) for c in await graph_store.unresolved_contradictions_of(["c1"])] == [
        frozenset(("s1", "c1"))]
    assert await graph_store.unresolved_contradictions_of([]) == []


async def test_concurrent_contradiction_links_make_one_edge(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea"), st("s2", "user", "likes",
        "coffee")))
    results = await asyncio.gather(*(
        graph_store.link_statements("CONTRADICTS", *pair, "race", WORKER)
        for pair in [("s1", "s2"), ("s2", "s1")] * 4
    ))
    assert sum(results) == 1 and (await graph_store.counts())["CONTRADICTS"] == 1


async def test_link_to_missing_statement_and_bad_kind(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    with pytest.raises(UnknownReference, match="to_id.*missing"):
        await graph_store.link_statements("SUPERSEDES", "s1", "missing", "", WORKER)
    with pytest.raises(ValueError, match="kind"):
        await graph_store.link_statements("REPLACES", "s1", "s1", "", WORKER)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="to_id"):
        await graph_store.link_statements("SUPERSEDES", "s1", "s1", "", WORKER)
    assert (await graph_store.counts())["SUPERSEDES"] == 0


async def test_superseded_statements_are_excluded(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea", 0.9), created_at=1000))
    await graph_store.write_observation(obs("o2", st("s2", "user", "likes", "coffee", 0.9), created_at=2000))
    await graph_store.write_observation(obs("o3", st("s3", "user", "likes", "milk", 0.5), created_at=3000))
    await graph_store.write_observation(obs("o4", st("s4", "user", "hates", "water", 0.3), created_at=500))
    await graph_store.write_claim(claim("c1", "user", "likes", "juice", supersedes=[StatementLink(target_id="s1")]))
    assert await graph_store.link_statements("CONTRADICTS", "s3", "s4", "drinks", WORKER)
    assert await graph_store.link_statements("SUPERSEDES", "s3", "s4", "newer", WORKER)
    about = await graph_store.statements_about("User")
    # Confidence first (c1 is 1.0), then recency among equal confidence (s2 before s1).
    assert [s.id for s in about] == ["c1", "s2", "s3"]
    everything = await graph_store.statements_about("user", include_superseded=True)
    assert [s.id for s in everything] == ["c1", "s2", "s1", "s3", "s4"]
    s1 = next(s for s in everything if s.id == "s1")
    assert s1.superseded_by == ["c1"] and s1.subject == "user" and s1.source == "alice"
    # s3 supersedes s4, so their contradiction is resolved.
    assert await graph_store.unresolved_contradictions() == []
    assert await graph_store.unresolved_contradictions_of(["s3", "s4"]) == []
    assert [s.id for s in await graph_store.statements_about("user", limit=1)] == ["c1"]


async def test_shared_concept_neighbours_count_links_and_skip_hubs(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "Dana", "owns", "greyhound")))
    await graph_store.write_observation(obs("o2", st("s2", "Dana", "lives in", "Lisbon")))
    await graph_store.write_observation(obs("o3", st("s3", "Dana", "likes", "tea")))
    await graph_store.write_claim(claim("c1", "Dana", "lives in", "Porto", supersedes=[StatementLink(target_id="s3")]))
    # Degrees: greyhound 2 (o1 MENTIONS, s1 ABOUT); Dana 7 (3 MENTIONS, 4 statements ABOUT).
    rows = await graph_store.shared_concept_neighbours(["s1"], max_degree=7, limit=10, per_seed=20)
    assert [(r["concept"], r["degree"], r["id"], r["kind"]) for r in rows] == [
        ("greyhound", 2, "o1", "observation"),
        ("Dana", 7, "c1", "statement"), ("Dana", 7, "o1", "observation"), ("Dana", 7, "o2", "observation"),
        ("Dana", 7, "o3", "observation"), ("Dana", 7, "s2", "statement"),
    ], "the seed itself and the superseded s3 are left out"
    hub_skipped = await graph_store.shared_concept_neighbours(["s1"], max_degree=6, limit=10, per_seed=20)
    assert [(r["concept"], r["id"]) for r in hub_skipped] == [("greyhound", "o1")]


async def test_concepts_reused_case_insensitively_and_through_aliases(graph_store: GraphStore) -> None:
    morning = ConceptSpec(name="Morning meetings", aliases=("AM meetings",))
    await graph_store.write_observation(obs("o1", st("s1", "user", "dislikes",
        "morning MEETINGS."), concepts=(morning,)))
    await graph_store.write_observation(obs("o2", st("s2", "Bob", "runs", "AM meetings")))
    await graph_store.write_observation(obs("o3", concepts=(ConceptSpec(name="am meetings", aliases=("Standups",)),)))
    names = [c.name for c in await graph_store.concepts()]
    assert sorted(names) == ["Bob", "Morning meetings", "user"]
    [concept] = [c for c in await graph_store.concepts() if c.name == "Morning meetings"]
    assert concept.aliases == ["AM meetings", "Standups"]
    assert {s.id for s in await graph_store.statements_about("standups")} == {"s1", "s2"}
    assert {s.object for s in await graph_store.statements_about("AM Meetings")} == {"Morning meetings"}


async def test_inferred_claims_take_the_concepts_their_extraction_names(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "morning")))
    mornings = ConceptSpec(name="mornings", aliases=("morning",))
    unused = ConceptSpec(name="afternoon")  # names none of the claims' concepts: not written here
    result = await graph_store.write_inference("o1", (st("s2", "user", "likes", "mornings", negated=True),), WORKER,
                                               (mornings, unused))
    assert result.created
    [claim] = await graph_store.get_statements(["s2"])
    assert (claim.object, claim.source, claim.derived_from) == ("morning", "inference", ["o1"])
    assert sorted(c.name for c in await graph_store.concepts()) == ["morning", "user"]
    again = await graph_store.write_inference("o1", (st("s2", "user", "likes", "mornings", negated=True),), WORKER)
    assert again.created is False  # done once per worker


async def test_extraction_given_the_time_it_was_said_skips_the_read_and_still_refuses_a_missing_one(
    graph_store: GraphStore,
) -> None:
    raw = ObservationRecord(id="o1", text="I like tea", source=ALICE, created_at=1000, extraction_pending=True)
    await graph_store.write_observation(raw)
    written = await graph_store.write_extraction("o1", (), (st("s1", "alice", "likes", "tea"),), said_at=1000)
    assert written.created and await graph_store.extraction_state("o1") == "done"
    [statement] = await graph_store.statements_from_observation("o1")
    assert (statement.created_at, statement.source) == (1000, "alice")
    again = await graph_store.write_extraction("o1", (), (st("s1", "alice", "likes", "tea"),), said_at=1000)
    assert again.created is False  # done once
    with pytest.raises(UnknownReference):
        await graph_store.write_extraction("o-missing", (), (st("s2", "alice", "likes", "tea"),), said_at=1000)
    assert await graph_store.get_statements(["s2"]) == []


@pytest.mark.parametrize("retracted_first", [False, True])
async def test_an_extraction_returns_its_statements_as_they_read_back(graph_store: GraphStore,
                                                                      retracted_first: bool) -> None:
    await graph_store.write_observation(obs("o0", concepts=(ConceptSpec(name="Morning meetings",
                                                                        aliases=("AM meetings",)),)))
    raw = ObservationRecord(id="o1", text="I dislike AM meetings", source=ALICE, created_at=1000,
                            extraction_pending=True)
    await graph_store.write_observation(raw)
    if retracted_first:
        assert await graph_store.retract("r1", "o1", "observation", "typo", "alice")
    statements = (st("s1", "alice", "dislikes", "AM meetings"), st("s2", "alice", "has", "tea", 0.6, True),
                  st("s3", "alice", "likes", "Alice"))
    written = await graph_store.write_extraction("o1", (), statements, said_at=1000)
    assert written.created and [s.object for s in written.statements if s.id == "s1"] == ["Morning meetings"]
    assert written.statements == await graph_store.statements_from_observation("o1")
    assert all(s.derived_from_retracted is retracted_first for s in written.statements)
    again = await graph_store.write_extraction("o1", (), statements)
    assert (again.created, again.statements) == (False, [])


async def test_reads_by_id_of_no_ids_find_nothing_without_asking_and_still_check_their_argument(
    graph_store: GraphStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_read(cypher: str, params: dict[str, object]) -> list[dict[str, object]]:
        raise AssertionError(f"a read of no ids went to the engine: {cypher[:60]}")

    monkeypatch.setattr(graph_store.driver, "read", no_read)
    assert await graph_store.get_concepts([]) == []
    assert await graph_store.get_observations([]) == []
    assert await graph_store.get_statements([]) == []
    with pytest.raises(InvalidInput):
        await graph_store.get_concepts("cpt-1")  # type: ignore[arg-type]


async def test_concurrent_writers_share_one_concept(graph_store: GraphStore) -> None:
    await asyncio.gather(*(
        graph_store.write_observation(obs(f"o{i}", st(f"s{i}", "Tea", "is", "hot")))
        for i in range(8)
    ))
    counts = await graph_store.counts()
    assert counts["Concept"] == 2 and counts["Statement"] == 8 and counts["Source"] == 1


async def test_decomposition_and_negation(graph_store: GraphStore) -> None:
    spec = ConceptSpec(name="Morning meetings", kind="event", components=(
        ConceptComponent(name="meetings", relation="head_noun"),
        ConceptComponent(name="morning", relation="modifier"),
    ))
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "morning meetings", negated=True),
                                            concepts=(spec,)))
    parts = await graph_store.concept_decomposition("morning meetings")
    assert [(p.relation, p.concept.name) for p in parts] == [("head_noun", "meetings"), ("modifier", "morning")]
    [s1] = await graph_store.statements_from_observation("o1")
    assert s1.negated is True and s1.sentence() == "user not likes Morning meetings"
    node = await graph_store.get_node("s1")
    assert node is not None and node["label"] == "Statement" and node["negated"] is True
    [event] = [c for c in await graph_store.concepts() if c.name == "Morning meetings"]
    assert event.kind == "event"
    # Writing the same decomposition again adds no edge.
    await graph_store.write_observation(obs("o2", concepts=(spec,)))
    assert (await graph_store.counts())["RELATED_TO"] == 2


async def test_recent_reads_and_get_node(graph_store: GraphStore) -> None:
    for i in range(3):
        await graph_store.write_observation(obs(f"o{i}", st(f"s{i}", "user", "visited", f"city {i}"),
                                                created_at=1000 * (i + 1)))
    assert [o.id for o in await graph_store.recent_observations(limit=2)] == ["o2", "o1"]
    assert [o.id for o in await graph_store.recent_observations(since=2000)] == ["o2", "o1"]
    recent = await graph_store.recent_statements(limit=2)
    assert [(s.id, s.subject, s.object, s.source) for s in recent] == [
        ("s2", "user", "city 2", "alice"), ("s1", "user", "city 1", "alice")]
    assert (await graph_store.get_node("o0") or {})["label"] == "Observation"
    assert await graph_store.get_node("nothing") is None
    with pytest.raises(ValueError, match="limit"):
        await graph_store.recent_statements(limit=0)


async def test_counts_and_clear(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    counts = await graph_store.counts()
    assert counts["Statement"] == 1 and counts["ABOUT_SUBJECT"] == 1 and counts["SUPERSEDES"] == 0
    await graph_store.clear()
    assert set((await graph_store.counts()).values()) == {0}
    assert (await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))).created


async def test_read_query_runs_reads_with_params(graph_store: GraphStore) -> None:
    await graph_store.write_observation(obs("o1", st("s1", "user", "likes", "tea")))
    rows = await graph_store.read_query(
        "MATCH (s:Statement {id: $id}) /* CREATE in a comment */ RETURN s.predicate AS p, 'DELETE me' AS t",
        {"id": "s1"},
    )
    assert rows == [{"p": "likes", "t": "DELETE me"}]
    labels = await graph_store.read_query("CALL db.labels() YIELD label RETURN label ORDER BY label")
    assert {"Statement", "Concept"} <= {r["label"] for r in labels}
