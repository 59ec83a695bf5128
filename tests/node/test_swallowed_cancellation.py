"""A loop whose driver swallows a cancellation still stops (a store node's stop hung under load).

A store node's index-takeover loop kept logging "index takeover failed: GraphUnavailable" every second
after its stop began, and the stop waited for it for ever: the FalkorDB client had turned the loop's
``CancelledError`` into a connection error, which the loop caught as one more failed pass. The driver
here does the same, deterministically: whatever cancels it, it raises its own error instead.
"""

from __future__ import annotations

import asyncio

from mnemonet.node.vector_sync import VectorSync


class _SwallowingStore:
    """A store whose calls turn a cancellation into a connection error, as a retrying driver may."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = asyncio.Event()

    async def take_over_index(self) -> int:
        self.calls += 1
        self.entered.set()
        try:
            await asyncio.Event().wait()  # a connection attempt that never completes
        except asyncio.CancelledError:
            raise ConnectionError("cannot connect") from None
        return 0

    async def sync_vectors(self, limit: int) -> int:
        return await self.take_over_index()


class _Providers:
    def __init__(self, store: _SwallowingStore) -> None:
        self.store_ready = asyncio.Event()
        self.store_ready.set()
        self._store = store

    def ready(self, capability: str) -> object | None:
        return self._store


async def test_the_takeover_loop_stops_though_its_driver_swallows_the_cancellation() -> None:
    store = _SwallowingStore()
    sync = VectorSync(_Providers(store), interval=0.01, limit=10, takeover_interval=0.01)
    for loop in (sync.run_takeover, sync.run):
        store.entered.clear()
        task = asyncio.create_task(loop())
        await asyncio.wait_for(store.entered.wait(), 10)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert task in done, f"{loop.__name__} kept running after its cancellation was swallowed"
        assert task.cancelled()
