"""The meeting scenario across separate nodes on real sockets: store+llm+embed, inference, validation, a client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from netsupport import NodeFactory, eventually, sees_all

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

WORKER_TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.05)


@pytest.fixture
async def store_service(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str
) -> AsyncIterator[MemoryService]:
    """The store node's MemoryService, in this test's own graph and vector schema."""
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url)
    service = await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                         vector_schema=unique_name)
    yield service
    await service.close()


async def test_meeting_preferences_change_across_nodes(make_node: NodeFactory, store_service: MemoryService) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **WORKER_TIMERS)
    inference = await make_node({"inference"}, seed=store, **WORKER_TIMERS)
    validation = await make_node({"validation"}, seed=store, **WORKER_TIMERS)
    client = await make_node({"cli"}, seed=store, **WORKER_TIMERS)
    nodes = [store, inference, validation, client]
    await eventually(lambda: sees_all(nodes), 5.0, "all four nodes joined")

    await client.client.observe("I prefer morning meetings")
    await client.client.observe("actually I hate mornings, afternoon is better")

    def resolved() -> bool:
        stats = {w["worker"]: w for n in (inference, validation) for w in n.worker_stats()}
        return stats["validation"]["supersessions"] >= 1 and stats["inference"]["processed"] == 2

    await eventually(resolved, 20.0, "inference and validation workers did their part")
    statements = {s.sentence(): s for s in await client.client.get_recent_statements(limit=50)}
    morning, afternoon = statements["user prefers morning meetings"], statements["user prefers afternoon"]
    disliked = statements["user dislikes morning"]  # "mornings" met the existing "morning" concept
    inferred = statements["user not likes morning"]
    assert inferred.source == "inference-agent" and inferred.derived_from  # written by the inference node
    assert morning.superseded_by == [afternoon.id]  # the supersession, in favour of afternoon
    assert disliked.id in morning.contradicted_by  # the contradiction
    health = {w["worker"]: w for w in validation.health()["workers"]}
    assert health["validation"]["llm_calls"] == 1 and health["validation"]["failed"] == 0

    answer = await client.client.remember("what are my meeting preferences?")
    current, _, earlier = answer.text.partition("Earlier (changed since)")
    assert "afternoon" in current and "morning meetings" in earlier
    # Worker counters also show in the stats of the node that runs them.
    assert (await inference.client.stats())["workers"][0]["claims_made"] == 1
