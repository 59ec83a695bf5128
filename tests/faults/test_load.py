"""Load: 20 concurrent clients x 100 mixed operations through a 5-node network, over the client HTTP API.

Two store nodes share one store (as two store nodes share one database);
the store is the in-memory stand-in that honours idempotency keys the way
``MemoryService`` does, so the figures measure the network layer (HTTP API,
routing, RPC, limits); the real database under faults is in ``test_kill9.py``.
The only errors allowed are explicit "busy" replies, which the client
honours (waits ``Retry-After``) before retrying under the same key.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time

from netsupport import ADMIN_TOKEN, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.model.ids import keyed_id
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.errors import Busy

CLIENTS = 20
# The concurrency (20 clients on 5 nodes) is what finds lost or phantom writes; the length of the run only
# scaled its time (200 each took 19-23 s of the suite). Throughput figures belong in bench/rpc_overhead.py.
OPS_PER_CLIENT = 100
WRITE_SHARE = 0.5
MAX_BUSY_WAIT = 0.2  # seconds a client waits on "busy" at most here (the reply says when; tests stay fast)


async def test_twenty_clients_through_five_nodes(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    seed = await make_node({"store"}, providers={"store": store})
    nodes = [seed, await make_node({"store"}, seed=seed, providers={"store": store})]
    nodes += [await make_node({"cli"}, seed=seed) for _ in range(3)]
    await eventually(lambda: sees_all(nodes), 15.0, "five nodes see each other")

    latencies: list[float] = []
    acked: set[str] = set()
    busy = 0
    rng = random.Random(8)

    async def client(index: int) -> None:
        nonlocal busy
        async with HttpMemoryClient(nodes[index % len(nodes)].url, ADMIN_TOKEN) as api:
            for op in range(OPS_PER_CLIENT):
                key = f"c{index}-{op}"
                write = rng.random() < WRITE_SHARE
                while True:
                    started = time.perf_counter()
                    try:
                        if write:
                            result = await api.observe(f"client {index} says fact {op}", idempotency_key=key)
                            assert result.observation_id == keyed_id("obs", key, "admin")
                            acked.add(key)
                        elif op % 2:
                            await api.get_recent_observations(10)
                        else:
                            await api.recall("fact")
                    except Busy as exc:
                        busy += 1
                        await asyncio.sleep(min(exc.retry_after, MAX_BUSY_WAIT))
                        continue
                    latencies.append(time.perf_counter() - started)
                    break

    started = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(CLIENTS)))
    took = time.monotonic() - started

    ops = CLIENTS * OPS_PER_CLIENT
    assert len(latencies) == ops
    assert set(store.observations) == {keyed_id("obs", key, "admin") for key in acked}, "lost or phantom writes"
    assert store.calls.count("observe") >= len(acked)
    cuts = statistics.quantiles(latencies, n=100)
    print(f"\nload: {ops} ops ({len(acked)} writes) by {CLIENTS} clients through 5 nodes in {took:.1f}s: "
          f"{ops / took:.0f} ops/s, p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms, busy {busy}")
