"""A worker stops when asked, even when the stop meets a wake-up in the same moment.

CI once hung for its whole 600 s budget in ``victim.kill()``: a worker woken by a write event in the
same loop step as its stop kept running. Python 3.11's ``asyncio.wait_for`` returns the awaited
result when the cancellation arrives just after it completed, so the cancellation was spent and the
loop went round again, for ever. Here the two meet deterministically: the event is set and the task
cancelled before the loop runs either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from mnemonet.agents import Ownership
from mnemonet.agents.base import WorkerAgent
from mnemonet.settings import Settings


class _IdleWorker(WorkerAgent[str]):
    """A worker with nothing pending: only its loop is under test."""

    name = "idle"
    source = "idle-test"

    def __init__(self, settings: Settings) -> None:
        super().__init__(api=object(), settings=settings, ownership=Ownership.solo("w"))  # type: ignore[arg-type]
        self.passed = asyncio.Event()

    async def pending(self, limit: int) -> Sequence[str]:
        self.passed.set()
        return []

    def item_id(self, item: str) -> str:
        return item


async def test_a_stop_that_meets_a_wake_up_still_stops_the_worker() -> None:
    settings = Settings(llm="offline", worker_poll_interval=30.0, worker_event_debounce=0.0)
    worker = _IdleWorker(settings)
    await worker.start()
    loop = next(task for task in asyncio.all_tasks() if task.get_name() == "worker-idle")
    await asyncio.wait_for(worker.passed.wait(), 10.0)  # the catch-up pass ran: next the loop waits to be woken
    for _ in range(3):
        await asyncio.sleep(0)  # into its wait for the wake event
    worker.notify({"type": "observation"})  # the wake-up and the stop in one loop step
    await worker.stop()
    assert loop.done(), "the worker kept running after stop() (its cancellation was spent on the wake-up)"
