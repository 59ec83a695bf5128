"""Inference workers on both sides of a partition (transport-level cut, nodes in this process).

The scenario and what it asserts are in ``partition_scenario.py``; this
module runs it on in-process nodes partitioned by the ``Partition``
injector. ``test_partition_netns.py`` runs it on separate processes in Linux
network namespaces.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from faultsupport import Partition
from ledger import Ledger, observation_text, read_ledger
from netsupport import NodeFactory, fast_settings
from partition_scenario import PartitionedNetwork, View, WorkerCounters, run_scenario

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.node.peer_node import PeerNode
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings

# request_timeout: on two loaded cores a record_inference (claims embedded on the event loop that
# five nodes share) can take seconds; a call that times out is retried on the other store node.
TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.1, worker_batch_size=10,
              push_pull_interval=1.0, request_timeout=10.0)
WRITERS = 8


@pytest.fixture
async def shared_store(falkordb_server, postgres_url: str, unique_name: str
                       ) -> AsyncIterator[tuple[MemoryService, MemoryService]]:
    """Two store nodes' services over this test's one graph and vector schema (one model and embedder)."""
    # The workers' split of a backlog is what is tested: with the default (auto) the stores would infer each
    # claim in the extraction call, and the workers would have nothing to split.
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url, infer_with_extraction="off")
    llm, embedder = make_language_model(settings), make_embedder(settings)
    first = await build_memory_service(settings, llm, embedder, vector_schema=unique_name)
    second = await build_memory_service(settings, llm, embedder, vector_schema=unique_name)
    yield first, second
    await first.close()
    await second.close()


def _retried_writes(node: PeerNode) -> int:
    """``record_inference`` calls this node retried on another store node (timeout, link lost)."""
    return int(sum(sample.value for metric in node.metrics.failovers.collect() for sample in metric.samples
                   if sample.name.endswith("_total") and sample.labels.get("method") == "record_inference"))


class InProcessNetwork:
    """``PartitionedNetwork`` over nodes of this process and the transport-level ``Partition``."""

    def __init__(self, sides: tuple[list[PeerNode], list[PeerNode]], partition: Partition,
                 service: MemoryService) -> None:
        self._sides = sides
        self._nodes = {node.node_id: node for node in sides[0] + sides[1]}
        self._partition = partition
        self._service = service
        self.side_a = [n.node_id for n in sides[0]]
        self.side_b = [n.node_id for n in sides[1]]

    async def views(self) -> dict[str, View]:
        return {node_id: {m.node_id: (m.state.value, m.incarnation) for m in node.membership.members(include_dead=True)}
                for node_id, node in self._nodes.items()}

    async def counters(self) -> dict[str, WorkerCounters]:
        out = {}
        for node_id, node in self._nodes.items():
            for stats in node.worker_stats():
                out[node_id] = WorkerCounters(passes=stats["passes"], processed=stats["processed"],
                                              repeats=stats["duplicates_absorbed"], llm_calls=stats["llm_calls"],
                                              retried_writes=_retried_writes(node))
        return out

    async def write(self, side: int, keys: range) -> None:
        store = self._sides[side][0]
        slots = asyncio.Semaphore(WRITERS)

        async def one(i: int) -> None:
            async with slots:
                await store.client.observe(observation_text(i), idempotency_key=f"obs-{i}")

        await asyncio.gather(*(one(i) for i in keys))

    async def ledger(self) -> Ledger:
        return await read_ledger(self._service.graph.read_query)

    async def cut(self) -> None:
        self._partition.split(*self._sides)

    async def heal(self) -> None:
        self._partition.heal()


async def test_inference_on_both_sides_of_a_transport_partition_processes_each_observation_once(
    shared_store: tuple[MemoryService, MemoryService], make_node: NodeFactory, partition: Partition
) -> None:
    # shared_store is set up first so it closes after the nodes: none of them reads a closed store.
    service_a, service_b = shared_store
    store_a = await make_node({"store", "llm", "embed"}, providers={"store": service_a}, **TIMERS)
    side_a = [store_a, *[await make_node({"inference"}, seed=store_a, **TIMERS) for _ in range(2)]]
    side_b = [await make_node({"store", "llm", "embed"}, seed=store_a, providers={"store": service_b}, **TIMERS),
              await make_node({"inference"}, seed=store_a, **TIMERS)]
    net: PartitionedNetwork = InProcessNetwork((side_a, side_b), partition, service_a)

    figures = await run_scenario(net, fast_settings(**TIMERS))

    print(f"\npartition with agents (transport cut): {figures.line()}")
    assert partition.dropped > 0
