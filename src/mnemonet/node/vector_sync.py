"""A store node's vector sync: embeds graph items that have no vector yet, when the store opens and then periodically.

The graph is the record of truth and a write is acknowledged once the
graph has committed it; a vector write that fails after that (embedder or
PostgreSQL down, or the node crashing in between) leaves the item without a
vector. Each pass asks the memory service to index the newest items still
lacking one (``MemoryService.sync_vectors``), so the index converges; with
other store nodes over the same databases, one of them makes each pass.

With the shared index queue, a second, faster loop takes over the queued
rows of a store node that died (their lease ran out) every
``index_takeover_interval`` (``SpacedMemory.take_over_index``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from mnemonet.model.cancellation import raise_if_cancelled

log = logging.getLogger(__name__)


class StoreSource(Protocol):
    """Where the sync finds the store, without ever building it."""

    store_ready: asyncio.Event

    def ready(self, capability: str) -> object | None:
        """The provider if it is built (or was given), else None."""
        ...


class VectorSync:
    """Runs ``sync_vectors`` on the local store: first when it opens, then every ``interval`` seconds."""

    def __init__(self, providers: StoreSource, interval: float, limit: int, takeover_interval: float = 1.0) -> None:
        self._providers = providers
        self._interval = interval
        self._limit = limit
        self._takeover_interval = takeover_interval
        self.passes = 0
        self.indexed = 0
        self.failures = 0
        self.taken_over = 0  # queued rows of dead store nodes this node indexed

    async def run(self) -> None:
        """Loop until cancelled; returns at once when turned off (interval 0)."""
        if self._interval <= 0:
            return
        # Waiting, not building: a node whose store is never used starts no database for this.
        await self._providers.store_ready.wait()
        while True:
            await self.pass_once()
            await asyncio.sleep(self._interval)

    async def run_takeover(self) -> None:
        """Loop until cancelled: take over lapsed queue rows (a store without the shared queue has none)."""
        await self._providers.store_ready.wait()
        while True:
            take = getattr(self._providers.ready("store"), "take_over_index", None)
            if take is not None:
                try:
                    self.taken_over += int(await take())
                except Exception as exc:  # database down: the next look retries
                    raise_if_cancelled()
                    log.warning("index takeover failed: %s: %s", type(exc).__name__, exc)
            await asyncio.sleep(self._takeover_interval)

    async def pass_once(self) -> int:
        """One pass; returns how many items it indexed (a failure is logged and retried next pass)."""
        sync = getattr(self._providers.ready("store"), "sync_vectors", None)
        if sync is None:
            return 0  # no store open, or one without a vector index
        try:
            indexed = int(await sync(self._limit))
        except Exception as exc:  # embedder or database down: the next pass retries
            raise_if_cancelled()
            self.failures += 1
            log.warning("vector sync failed: %s: %s", type(exc).__name__, exc)
            return 0
        self.passes += 1
        self.indexed += indexed
        if indexed:
            log.info("vector sync indexed %d items that lacked a vector", indexed)
        return indexed

    def stats(self) -> dict[str, Any]:
        """Counters for ``/health`` and ``/metrics``."""
        return {"passes": self.passes, "indexed": self.indexed, "failures": self.failures,
                "taken_over": self.taken_over}
