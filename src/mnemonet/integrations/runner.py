"""One event loop on a thread of its own, for adapters whose framework calls them both sync and async.

``HttpMemoryClient`` holds an ``httpx.AsyncClient``, which belongs to the loop it was made on. Frameworks
such as LangGraph call a store from plain functions and from coroutines on loops of their own; the
adapter keeps its client on this loop and hands every call to it: ``run`` blocks a sync caller,
``arun`` awaits without blocking the caller's loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one event loop until ``close``."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` on the loop and wait for its result (from any thread but the loop's own)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop: await arun instead")
        return asyncio.run_coroutine_threadsafe(make(), self._loop).result()

    async def arun(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` on the loop; the caller's loop goes on meanwhile."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), self._loop))

    def close(self, last: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        """Run ``last()`` (closing what lives on the loop), then stop the loop and its thread."""
        if not self._loop.is_running():
            return
        if last is not None:
            self.run(last)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
