"""RPC overhead: one MemoryAPI read served in-process vs. through a peer over a WebSocket link.

Two real nodes on loopback in this process (one event loop, so the remote
figures include both ends' CPU): a store node holding a small in-memory
store, and a caller without the store capability. The same read,
``get_recent_observations(limit=20)``, is timed through ``node.client`` on the
store node (served locally) and on the caller (routed to the store node),
with 1 and 64 concurrent callers.

    PYTHONPATH=src python bench/rpc_overhead.py [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from mnemonet.model.views import ObservationView
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.client import P2PMemoryClient
from mnemonet.settings import Settings


class ReadOnlyStore:
    """Answers the one read being measured from memory, so the figures are the network's cost."""

    def __init__(self, n: int = 20) -> None:
        self._items = [ObservationView(id=f"obs-{i}", text=f"observation number {i} about the bench", source="bench")
                       for i in range(n)]

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]:
        return self._items[:limit]


async def _measure(client: P2PMemoryClient, requests: int, concurrency: int) -> tuple[float, float, float]:
    latencies: list[float] = []
    per_caller = max(1, requests // concurrency)

    async def caller() -> None:
        for _ in range(per_caller):
            start = time.perf_counter()
            await client.get_recent_observations(limit=20)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / elapsed, statistics.median(latencies) * 1000, p99 * 1000


async def main(requests: int) -> None:
    # The per-peer rate limit would refuse the caller's flood: the bench measures the path, not the guard.
    base: dict[str, Any] = dict(host="127.0.0.1", port=0, cluster_key="bench-key", request_timeout=30.0,
                                peer_rate_limit=1e9, peer_rate_burst=1_000_000)
    store = PeerNode(Settings(**base), {"store"}, {"store": ReadOnlyStore()})
    await store.start()
    caller = PeerNode(Settings(**base, bootstrap=store.url), {"cli"})
    await caller.start()
    try:
        while store.node_id not in caller.transport.neighbours():  # noqa: ASYNC110 - no event for a new link
            await asyncio.sleep(0.05)
        await _measure(caller.client, 200, 8)  # warm up both paths
        await _measure(store.client, 200, 8)
        print(f"get_recent_observations(limit=20), {requests} requests per row, Python {sys.version.split()[0]}")
        print(f"{'path':<22}{'callers':>8}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
        rows = {}
        for concurrency in (1, 64):
            for label, node in (("in-process", store), ("peer over WebSocket", caller)):
                rate, p50, p99 = await _measure(node.client, requests, concurrency)
                rows[(label, concurrency)] = rate
                print(f"{label:<22}{concurrency:>8}{rate:>10.0f}{p50:>9.3f}{p99:>9.3f}")
        for concurrency in (1, 64):
            ratio = rows[("in-process", concurrency)] / rows[("peer over WebSocket", concurrency)]
            print(f"throughput ratio in-process / peer, {concurrency} caller(s): {ratio:.1f}x")
    finally:
        await caller.stop()
        await store.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per measured row")
    asyncio.run(main(parser.parse_args().requests))
