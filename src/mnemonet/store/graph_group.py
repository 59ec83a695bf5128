"""Group commit: concurrent per-observation writes share one round trip and one fsync.

Embedded FalkorDB runs with ``appendfsync always`` so an acknowledged write
survives ``kill -9``; the fsync is most of a small write's time (one
observation of 5 statements: 626 statements/s fsynced on every write against
1,123 once a second, bench/README.md "Graph store writes"). Writes queued
here go to the engine together (``GraphDriver.write_many``: one MULTI/EXEC on
FalkorDB, so one append-only-file entry and one fsync), and each caller is
answered only when the group that holds its write has returned, fsynced: the
same durability promise as one write at a time.

Each write stays its own statement, run in arrival order and atomic on its
own: it sees the writes queued before it exactly as if they had been sent
one by one, so idempotency (an id already written writes nothing) and
conflicts are decided per write, and one write's failure is its caller's
alone. A write waits at most ``wait`` seconds for company, and none once
``max_size`` are queued; writes arriving while a group is in the engine form
the next group, which goes as soon as that one returns.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from mnemonet.store.dialects.base import GraphDriver, WriteOutcome


@dataclass
class _Queued:
    cypher: str
    params: dict[str, Any]
    future: asyncio.Future[WriteOutcome]


class WriteGroup:
    """Queues writes to one driver and sends them in groups of at most ``max_size`` (1: one by one)."""

    def __init__(self, driver: GraphDriver, *, max_size: int, wait: float) -> None:
        if max_size < 1 or wait < 0:
            raise ValueError("max_size must be at least 1 and wait not negative")
        self._driver = driver
        self._max_size = max_size
        self._wait = wait
        self._queued: list[_Queued] = []
        self._timer: asyncio.TimerHandle | None = None
        self._busy = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.groups = 0  # round trips made, for tests and the bench
        self.writes = 0  # writes they carried

    async def write(self, cypher: str, params: dict[str, Any]) -> WriteOutcome:
        """Run one write in the next group; its own outcome, or its own ``GraphStoreError`` raised."""
        if self._max_size == 1:
            self.groups += 1
            self.writes += 1
            return await self._driver.write(cypher, params)
        loop = asyncio.get_running_loop()
        queued = _Queued(cypher, params, loop.create_future())
        self._queued.append(queued)
        if not self._busy:
            if len(self._queued) >= self._max_size or self._wait == 0:
                self._flush()
            elif self._timer is None:
                self._timer = loop.call_later(self._wait, self._flush)
        return await queued.future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        group = [q for q in self._queued[:self._max_size] if not q.future.cancelled()]
        del self._queued[:self._max_size]
        if not group:
            if self._queued:
                self._flush()
            return
        self._busy = True
        task = asyncio.get_running_loop().create_task(self._run(group))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, group: list[_Queued]) -> None:
        try:
            self.groups += 1
            self.writes += len(group)
            outcomes = await self._driver.write_many([(q.cypher, q.params) for q in group])
        except asyncio.CancelledError:  # shutting down: no caller is left waiting forever
            for q in group:
                q.future.cancel()
            raise
        except Exception as exc:  # the round trip itself failed: nothing in it was acknowledged
            for q in group:
                if not q.future.done():
                    q.future.set_exception(exc)
        else:
            for q, outcome in zip(group, outcomes, strict=True):
                if q.future.done():  # its caller gave up; the write stands (a retry finds it written)
                    continue
                if isinstance(outcome, WriteOutcome):
                    q.future.set_result(outcome)
                else:
                    q.future.set_exception(outcome)
        finally:
            self._busy = False
            if self._queued:  # what gathered meanwhile has waited long enough: it goes now
                self._flush()
