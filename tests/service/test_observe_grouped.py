"""Concurrent observes through the group commit: one round trip, each caller its own outcome."""

from __future__ import annotations

import asyncio

import pytest

from mnemonet.model.idempotency import IdempotencyConflict
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

WRITES = 6


@pytest.fixture
def service_settings(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str) -> Settings:
    # A group goes when WRITES are queued; the wait only bounds it (it is never waited out here).
    return Settings(llm="offline", graph_backend="falkordb", falkordb_port=falkordb_server.port,
                    graph_name=unique_name, database_url=postgres_url,
                    graph_group_commit_max=WRITES, graph_group_commit_wait=Settings().graph_query_timeout)


async def test_a_conflict_in_a_group_fails_only_its_caller(service: MemoryService) -> None:
    """Two first writes of one key with different texts race into the same group: the one queued first is
    written, the other is its caller's IdempotencyConflict, and the group's other writes are all written."""
    texts = [("Bob lives in Paris", "race"), ("Bob lives in Rome", "race")]
    texts += [(f"Carol visited city {i}", f"other-{i}") for i in range(WRITES - 2)]
    results = await asyncio.gather(
        *(service.observe(text, source="alice", idempotency_key=key, defer_extraction=True) for text, key in texts),
        return_exceptions=True,
    )
    assert (service.graph.write_groups.groups, service.graph.write_groups.writes) == (1, WRITES)
    race = results[:2]
    assert sum(isinstance(r, IdempotencyConflict) for r in race) == 1
    [won] = [r for r in race if not isinstance(r, BaseException)]
    assert won.created
    assert all(not isinstance(r, BaseException) and r.created for r in results[2:])
    [stored] = await service.graph.get_observations([won.observation_id])
    assert stored.text == texts[race.index(won)][0]
    assert (await service.stats())["graph"]["Observation"] == WRITES - 1
