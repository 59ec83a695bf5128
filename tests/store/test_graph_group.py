"""Group commit on the real embedded FalkorDB: concurrent writes share a round trip, each keeps its own outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec
from mnemonet.settings import Settings
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore
from mnemonet.store.graph_errors import GraphStoreError
from mnemonet.store.graph_group import WriteGroup

# Every record names "user": a concept each write of a group gets-or-creates, so a group whose writes did
# not see each other's would make it twice.
# A wait (the default is none), so that writes queued in one pass of the event loop go as one group.
SETTINGS = Settings(graph_group_commit_max=32, graph_group_commit_wait=0.002)


def _record(i: int, text: str | None = None) -> ObservationRecord:
    return ObservationRecord(
        id=f"o{i}", text=text or f"observation {i}", source=SourceSpec(name="alice"),
        statements=(StatementSpec(id=f"s{i}", subject="user", predicate="visited", object=f"city {i}"),),
    )


@pytest.fixture
async def store(falkordb_server: EmbeddedFalkorDB, unique_name: str) -> AsyncIterator[GraphStore]:
    graph = GraphStore(FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name,
                                    password=falkordb_server.password), SETTINGS)
    await graph.ensure_indexes()
    yield graph
    await graph.close()


async def test_concurrent_writes_share_round_trips(store: GraphStore) -> None:
    results = await asyncio.gather(*(store.write_observation(_record(i)) for i in range(40)))
    assert all(r.created for r in results)
    counts = await store.counts()
    assert (counts["Observation"], counts["Statement"], counts["Concept"]) == (40, 40, 41)
    # All 40 calls queue in one pass of the event loop, before the wait's timer can fire: a full group of
    # graph_group_commit_max (32) goes at once, the other 8 gather while it is in the engine.
    assert (store.write_groups.groups, store.write_groups.writes) == (2, 40)


async def test_a_retry_in_the_same_group_is_written_once(store: GraphStore) -> None:
    first, again, other = await asyncio.gather(
        store.write_observation(_record(1)), store.write_observation(_record(1)), store.write_observation(_record(2)),
    )
    assert store.write_groups.groups == 1  # all three in one round trip
    assert (first.created, again.created, other.created) == (True, False, True)
    assert not (await store.write_observation(_record(1))).created  # and a retry after it
    counts = await store.counts()
    assert (counts["Observation"], counts["Statement"], counts["DERIVED_FROM"]) == (2, 2, 2)


async def test_a_failing_write_fails_alone(falkordb_server: EmbeddedFalkorDB, unique_name: str) -> None:
    """A write the engine refuses midway is rolled back and raised to its caller; its group-mates commit."""
    driver = FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name, password=falkordb_server.password)
    group = WriteGroup(driver, max_size=8, wait=0.002)
    create = "CREATE (p:Probe {id: $id}) RETURN p.id AS id"
    failing = "CREATE (p:Probe {id: $id}) SET p.bad = $bad RETURN p.id AS id"  # a map is no property value
    try:
        outcomes = await asyncio.gather(
            group.write(create, {"id": "a"}), group.write(failing, {"id": "b", "bad": {"a": 1}}),
            group.write(create, {"id": "c"}),
            return_exceptions=True,
        )
        assert group.groups == 1
        assert [o.rows for o in outcomes[::2] if not isinstance(o, BaseException)] == [[{"id": "a"}], [{"id": "c"}]]
        assert isinstance(outcomes[1], GraphStoreError)
        rows = await driver.read("MATCH (p:Probe) RETURN p.id AS id ORDER BY id", {})
        assert rows == [{"id": "a"}, {"id": "c"}]  # b's node was rolled back with its statement
    finally:
        await driver.drop()
        await driver.close()


async def test_group_commit_off_writes_one_by_one(falkordb_server: EmbeddedFalkorDB, unique_name: str) -> None:
    graph = GraphStore(FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name,
                                    password=falkordb_server.password), Settings(graph_group_commit_max=1))
    try:
        await graph.ensure_indexes()
        await asyncio.gather(*(graph.write_observation(_record(i)) for i in range(5)))
        assert (graph.write_groups.groups, graph.write_groups.writes) == (5, 5)
        assert (await graph.counts())["Concept"] == 6
    finally:
        await graph.close()
