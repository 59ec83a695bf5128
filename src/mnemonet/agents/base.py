"""``WorkerAgent``: the loop every worker shares.

A worker reads its backlog from the graph (what its source has not done
yet), keeps the items it owns (rendezvous hashing over the live workers of
its capability), and processes them in batches with bounded concurrency;
a worker that does its items one by one (inference, consolidation) runs up to
``worker_concurrency`` of them at once, since each is independent and mostly
waits on a language model.
It wakes on write events and also polls on an interval, so missed events,
restarts and a dead peer's items are all caught up by the next pass; nothing
about progress is kept in process memory. Each pass works in one memory
space (its ``api`` bound to it): a worker never links items across spaces.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from mnemonet.agents.ownership import Ownership
from mnemonet.model.api import WorkerMemory
from mnemonet.model.cancellation import raise_if_cancelled
from mnemonet.model.errors import Unavailable
from mnemonet.model.spaces import InSpace
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Listener = Callable[[dict[str, Any]], Any]
Subscribe = Callable[[Listener], Callable[[], None]]

# "waiting": items no peer could serve yet (no capable peer, or busy); they stay pending, unlike "failed".
COUNTERS = ("passes", "seen", "processed", "skipped", "failed", "waiting", "claims_made", "llm_calls")


class WorkerAgent(ABC, Generic[Item]):
    """Events + polling, ownership, batches, counters; subclasses say what is pending and how to do it.

    Counters: ``seen`` pending items read, ``skipped`` those owned by another
    worker (both per pass), ``processed`` items done here, ``failed`` items
    whose processing raised (they stay pending and are retried next pass),
    ``claims_made`` statements or links written, ``llm_calls`` language-model calls.
    """

    name: ClassVar[str]
    source: ClassVar[str]
    wakes_on: ClassVar[frozenset[str]] = frozenset({"observation", "claim"})
    extra_counters: ClassVar[tuple[str, ...]] = ()  # a worker's own counters, shown from zero

    def __init__(self, api: WorkerMemory, settings: Settings, ownership: Ownership,
                 subscribe: Subscribe | None = None) -> None:
        self.api = api  # during a pass: bound to the space the pass works in
        self._api = api
        self.settings = settings
        self.ownership = ownership
        self.counters: Counter[str] = Counter(dict.fromkeys(COUNTERS + self.extra_counters, 0))
        self.last_event = 0.0  # monotonic time of the last write event seen
        self._subscribe = subscribe
        self._unsubscribe: Callable[[], None] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._slots = asyncio.Semaphore(max(1, settings.worker_concurrency))  # batches in flight
        # Items in flight across batches (the default process_batch): a pass of a few items uses every slot,
        # where a batch's items one after the other waited out one model call each (bench/README.md).
        self._item_slots = asyncio.Semaphore(max(1, settings.worker_concurrency))

    # -- what a subclass provides ----------------------------------------------

    @abstractmethod
    async def pending(self, limit: int) -> Sequence[Item]:
        """Up to ``limit`` items this worker's source has not done yet, oldest first."""

    @abstractmethod
    def item_id(self, item: Item) -> str:
        """The id ownership is decided on."""

    async def process_batch(self, batch: Sequence[Item]) -> None:
        """Process a batch; the default runs its items at once, at most ``worker_concurrency`` of this worker's
        items in flight, each failure counted apart."""
        await asyncio.gather(*(self._one(item) for item in batch))

    async def _one(self, item: Item) -> None:
        async with self._item_slots:
            try:
                await self.process_item(item)
            except asyncio.CancelledError:
                raise
            except Unavailable as exc:
                self._waiting(1, exc)
            except Exception as exc:
                self.counters["failed"] += 1
                error = f"{type(exc).__name__}: {exc}"
                log.warning("worker %s: item %s failed: %s", self.name, self.item_id(item), error,
                            extra={"worker": self.name, "item": self.item_id(item), "error": error})
            else:
                self.counters["processed"] += 1

    def _waiting(self, items: int, exc: Unavailable) -> None:
        """No peer could serve these items now (none with the capability, or all busy): a wait, not a failure of
        the items, which stay pending for a later pass."""
        self.counters["waiting"] += items
        log.info("worker %s: %d item(s) wait: %s", self.name, items, exc,
                 extra={"worker": self.name, "items": items, "error": f"{type(exc).__name__}: {exc}"})

    async def process_item(self, item: Item) -> None:
        """Process one item (used by the default ``process_batch``)."""
        raise NotImplementedError

    def due(self) -> bool:
        """Whether a pass should run now (consolidation waits for quiet)."""
        return True

    # -- the loop ----------------------------------------------------------------

    async def start(self) -> None:
        """Subscribe to write events and start the loop (its first pass catches up at once)."""
        if self._task is not None:
            raise RuntimeError(f"{self.name} worker already started")
        if self._subscribe is not None:
            self._unsubscribe = self._subscribe(self.notify)
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name=f"worker-{self.name}")
        log.info("worker %s started as %s", self.name, self.ownership.self_id,
                 extra={"worker": self.name, "owner_id": self.ownership.self_id})

    async def stop(self) -> None:
        """Stop the loop; an interrupted batch stays pending and is redone by whoever owns it."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # Bounded: a loop whose cancellation something below it spent must not hold its node's stop.
            done, _ = await asyncio.wait({task}, timeout=self.settings.shutdown_timeout)
            if not done:
                log.warning("worker %s did not stop when cancelled", self.name, extra={"worker": self.name})

    def notify(self, event: dict[str, Any]) -> None:
        """Event listener: a write of a kind this worker cares about wakes it."""
        if event.get("type") in self.wakes_on:
            self.last_event = time.monotonic()
            self._wake.set()

    def stats(self) -> dict[str, Any]:
        """Counters for ``/health`` and ``stats``."""
        return {"worker": self.name, "source": self.source, **self.counters}

    async def _run(self) -> None:
        while True:
            try:
                # Not ``asyncio.wait_for``: on Python 3.11 it returns the wake-up when a stop's cancellation
                # meets it in the same loop step, and the loop would never see that stop.
                async with asyncio.timeout(self.settings.worker_poll_interval):
                    await self._wake.wait()
                await asyncio.sleep(self.settings.worker_event_debounce)  # let a burst of writes land
            except TimeoutError:
                pass
            self._wake.clear()
            if not self.due():
                continue
            try:
                await self.run_passes()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store unreachable, say: try again next interval
                raise_if_cancelled()
                error = f"{type(exc).__name__}: {exc}"
                log.warning("worker %s: pass failed: %s", self.name, error, extra={"worker": self.name, "error": error})

    async def drain(self) -> int:
        """Everything pending done now (one-shot runs, tests, benches): the passes, then ``finish``."""
        return await self.run_passes() + await self.finish()

    async def finish(self) -> int:
        """Work a subclass holds back across passes, done now; the number of items it completed."""
        return 0

    async def run_passes(self) -> int:
        """In every memory space, run passes while a full page brought progress; returns items processed."""
        list_spaces = getattr(self._api, "spaces", None)
        if list_spaces is None:  # a memory without spaces (a bare MemoryService): its one space
            return await self._drain_space()
        total = 0
        try:
            for view in await list_spaces():
                self.api = InSpace(self._api, view.name)
                total += await self._drain_space()
        finally:
            self.api = self._api
        return total

    async def _drain_space(self) -> int:
        total = 0
        while True:
            read, handled = await self.run_once()
            total += handled
            if handled == 0 or read < self.settings.worker_fetch_limit:
                return total

    async def run_once(self) -> tuple[int, int]:
        """One pass: read the backlog, keep owned items, process them in batches; (read, processed)."""
        self.counters["passes"] += 1
        items = list(await self.pending(self.settings.worker_fetch_limit))
        mine = [item for item in items if self.ownership.owns(self.item_id(item))]
        self.counters["seen"] += len(items)
        self.counters["skipped"] += len(items) - len(mine)
        if not mine:
            return len(items), 0
        size = max(1, self.settings.worker_batch_size)
        batches = [mine[i:i + size] for i in range(0, len(mine), size)]
        started = time.monotonic()
        before = self.counters["processed"], self.counters["failed"]
        await asyncio.gather(*(self._bounded(batch) for batch in batches))
        processed = self.counters["processed"] - before[0]
        log.info("worker %s: pass read %d, owned %d, processed %d", self.name, len(items), len(mine), processed, extra={
            "worker": self.name, "read": len(items), "owned": len(mine), "processed": processed,
            "failed": self.counters["failed"] - before[1], "seconds": round(time.monotonic() - started, 3),
        })
        return len(items), processed

    async def _bounded(self, batch: Sequence[Item]) -> None:
        async with self._slots:
            try:
                await self.process_batch(batch)
            except asyncio.CancelledError:
                raise
            except Unavailable as exc:
                self._waiting(len(batch), exc)
            except Exception as exc:
                self.counters["failed"] += len(batch)
                error = f"{type(exc).__name__}: {exc}"
                log.warning("worker %s: batch of %d failed: %s", self.name, len(batch), error,
                            extra={"worker": self.name, "items": len(batch), "error": error})
