"""Counting search hits' uses off the read path: noted in memory, written in one batch per interval.

``note`` never waits: it adds to a counter and, if no write is scheduled,
schedules one ``usage_flush_interval`` later. A failed write puts its counts
back, so a use is never lost to a database hiccup (only to a crash within one
interval, or to the ``usage_pending_max`` cap); a count never lands twice,
because the counter is swapped out before the write. A count of an item
erased meanwhile is dropped by the write itself, which counts only ids that
still have a row (``vector_usage.add_uses``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Iterable

from mnemonet.settings import Settings
from mnemonet.store import vector_usage
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)


class UsageRecorder:
    """Batches use counts of search hits into ``vector_usage``."""

    def __init__(self, vectors: VectorStore, settings: Settings) -> None:
        self._vectors = vectors
        self._settings = settings
        self._pending: Counter[str] = Counter()
        self._last: int = 0
        self._task: asyncio.Task[None] | None = None
        self.writes = 0  # batches written, for tests and stats

    def note(self, ids: Iterable[str]) -> None:
        """Count one use of each id now; the write follows within ``usage_flush_interval``."""
        self._pending.update(dict.fromkeys(ids, 1))
        self._last = int(time.time() * 1000)
        while len(self._pending) > self._settings.usage_pending_max:
            self._pending.pop(next(iter(self._pending)))
        if self._pending and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(self._settings.usage_flush_interval)
        await self.flush()

    async def flush(self) -> None:
        """Write what is pending now, in one statement; on failure the counts wait for the next write."""
        batch, self._pending = self._pending, Counter()
        if not batch:
            return
        try:
            await vector_usage.add_uses(self._vectors, batch, self._last)
        except asyncio.CancelledError:
            self._pending.update(batch)  # close() writes it
            raise
        except Exception:  # a use count is worth a retry, never a failed search; CancelledError propagates
            log.warning("usage: %d counts not written; kept for the next write", len(batch), exc_info=True)
            self._pending.update(batch)
            return
        self.writes += 1

    async def close(self) -> None:
        """Write what is pending and stop the scheduled write."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()
