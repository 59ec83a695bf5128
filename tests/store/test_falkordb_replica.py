"""A FalkorDB replica (REPLICAOF, as shipped) serving the reads of search and answers; writes on the primary.

Two servers of the embedded wheel, the second made a replica of the first; the store reads through the
replica (``falkordb_replicas``) and acknowledges a write once the replica applied it, so a read right after
any acknowledged write, served by the replica, sees it. When the primary fails, reads go on from the
replica and writes are refused; when the replica fails, reads go to the primary.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.falkordb_replicas import Replicas
from mnemonet.store.graph_errors import GraphUnavailable

PEOPLE = ["Ana", "Bruno", "Chloe", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lena"]
PLACES = ["Acme", "Globex", "Initech", "Hooli", "Umbrella", "Stark", "Wayne", "Wonka", "Cyberdyne", "Tyrell",
          "Soylent", "Vandelay"]
WRITES = len(PEOPLE)


async def _ro_queries(server: EmbeddedFalkorDB) -> int:
    client = server.client()
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return int(stats.get("cmdstat_graph.RO_QUERY", {}).get("calls", 0))


@pytest.fixture
async def servers(test_data_dir: Path, unique_name: str) -> AsyncIterator[tuple[EmbeddedFalkorDB, EmbeddedFalkorDB]]:
    primary = EmbeddedFalkorDB(test_data_dir / f"{unique_name}-primary", password=False)
    replica = EmbeddedFalkorDB(test_data_dir / f"{unique_name}-replica", password=False)
    await primary.start()
    await replica.start()
    client = replica.client()
    try:
        await client.replicaof(primary.host, primary.port)
        for _ in range(600):  # the first full sync: seconds on a loaded machine
            if (await client.info("replication")).get("master_link_status") == "up":
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the replica never linked to its primary")
    finally:
        await client.aclose()
    yield primary, replica
    await replica.stop()
    await primary.stop()


@pytest.fixture
async def service(servers: tuple[EmbeddedFalkorDB, EmbeddedFalkorDB], postgres_url: str,
                  unique_name: str) -> AsyncIterator[MemoryService]:
    primary, replica = servers
    settings = Settings(llm="offline", falkordb_port=primary.port, falkordb_replicas=f"127.0.0.1:{replica.port}",
                        falkordb_replica_wait=0.5, graph_name=unique_name, database_url=postgres_url)
    svc = await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                     vector_schema=unique_name)
    yield svc
    await svc.close()


async def test_reads_are_served_by_the_replica_and_see_every_acknowledged_write(
    servers: tuple[EmbeddedFalkorDB, EmbeddedFalkorDB], service: MemoryService,
) -> None:
    primary, replica = servers
    on_primary, on_replica = await _ro_queries(primary), await _ro_queries(replica)
    acked = []
    for i in range(WRITES):
        result = await service.observe(f"{PEOPLE[i]} works at {PLACES[i]}.", source="ops")
        acked.append(result.observation_id)
        # A read right after the acknowledgement, on the replica: the write is there.
        assert result.observation_id in {o.id for o in await service.get_recent_observations(WRITES)}
    hits = await service.search(f"Where does {PEOPLE[7]} work?", k=5)
    assert hits and hits[0].id == acked[7]
    answer = await service.remember(f"Where does {PEOPLE[3]} work?")
    assert PLACES[3] in answer.text.partition("\n")[0]
    assert await _ro_queries(replica) - on_replica >= WRITES + 2
    assert await _ro_queries(primary) == on_primary, "a read went to the primary"


async def test_a_failed_primary_stops_writes_and_reads_go_on_from_the_replica(
    servers: tuple[EmbeddedFalkorDB, EmbeddedFalkorDB], service: MemoryService,
) -> None:
    primary, _ = servers
    written = await service.observe("Ana works at Acme.", source="ops")
    primary.kill()
    assert written.observation_id in {o.id for o in await service.get_recent_observations(5)}
    hits = await service.search("Where does Ana work?", k=5)
    assert hits and hits[0].id == written.observation_id
    assert "Acme" in (await service.remember("Where does Ana work?")).text.partition("\n")[0]
    with pytest.raises(GraphUnavailable):
        await service.observe("Bruno works at Globex.", source="ops")


async def test_a_failed_replica_sends_reads_to_the_primary_and_writes_go_on(
    servers: tuple[EmbeddedFalkorDB, EmbeddedFalkorDB], service: MemoryService,
) -> None:
    primary, replica = servers
    replica.kill()
    written = await service.observe("Chloe works at Initech.", source="ops")  # acknowledged after the wait
    on_primary = await _ro_queries(primary)
    assert written.observation_id in {o.id for o in await service.get_recent_observations(5)}
    assert await _ro_queries(primary) > on_primary  # the replica confirms nothing: the primary answers


async def test_a_hung_replica_holds_a_write_acknowledgement_no_longer_than_the_replica_wait(
    falkordb_server: EmbeddedFalkorDB,
) -> None:
    """A replica that accepts connections and never answers (a hung process, a black-holed host) costs a
    write its ``falkordb_replica_wait``, then reads move to the primary: its sockets wait no longer."""
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(-1)  # reads the command, answers nothing until the client goes away
        writer.close()

    hung = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = hung.sockets[0].getsockname()[1]
    replicas = Replicas([("127.0.0.1", port)], None, wait=0.5, poll=0.05)
    primary = falkordb_server.client()
    try:
        confirmed = await asyncio.wait_for(replicas.confirm(primary), 30.0)
        assert confirmed is False and not replicas.in_step and replicas.lagged == 1
    finally:
        await primary.aclose()
        await replicas.close()
        hung.close()
