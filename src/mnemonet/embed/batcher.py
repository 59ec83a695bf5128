"""Merges the embedding calls of concurrent writes into one call to the provider.

On the loaded 2-core build machine the packaged embedder does 32 chat
turns in one call 9.7x faster than one call each, 1.9x faster than in calls
of 8 (bench/embed_batching.py, bench/README.md "Ingest"). Eight clients each
observing one turn should therefore cost one call, not eight.

A call waits at most ``embed_batch_wait`` seconds for company, and never
while the provider is idle and enough texts are queued; while a batch is in
the provider, new calls gather for the next one. Each caller's texts are
checked alone first, so one bad input fails only its own caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.embed.validation import validate_texts


@dataclass
class _Waiting:
    texts: list[str]
    future: asyncio.Future[list[list[float]]]


@dataclass
class _Queue:
    waiting: list[_Waiting] = field(default_factory=list)
    size: int = 0
    timer: asyncio.TimerHandle | None = None
    busy: bool = False


class BatchingEmbedder:
    """``Embedder`` that batches concurrent calls of the same kind into one call to ``inner``."""

    def __init__(self, inner: Embedder, *, max_wait: float, max_batch: int, max_texts: int, max_chars: int) -> None:
        self.inner = inner
        self._max_wait = max_wait
        self._max_batch = max_batch
        self._max_texts = max_texts
        self._max_chars = max_chars
        self._queues: dict[EmbedKind, _Queue] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.calls = 0  # calls made to ``inner``, for tests and stats

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def query_takes_all_cores(self) -> bool:
        return self.inner.query_takes_all_cores

    async def warm_up(self) -> None:
        """Load the wrapped embedder's engine now, if it loads one (``LocalProviders.warm_up``)."""
        warm = getattr(self.inner, "warm_up", None)
        if callable(warm):
            await warm()

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        """Vectors for ``texts`` in order, computed in one provider call with other callers' texts."""
        items = validate_texts(texts, kind, max_texts=self._max_texts, max_chars=self._max_chars)
        if len(items) >= self._max_batch:  # big enough alone: no reason to wait for company
            self.calls += 1
            return await self.inner.embed(items, kind)
        queue = self._queues.setdefault(kind, _Queue())
        waiting = _Waiting(items, asyncio.get_running_loop().create_future())
        queue.waiting.append(waiting)
        queue.size += len(items)
        if not queue.busy:
            if queue.size >= self._max_batch:
                self._flush(kind)
            elif queue.timer is None:
                queue.timer = asyncio.get_running_loop().call_later(self._max_wait, self._flush, kind)
        return await waiting.future

    def _flush(self, kind: EmbedKind) -> None:
        """Send what is queued for ``kind`` (up to ``max_batch`` texts, whole callers) as one call."""
        queue = self._queues[kind]
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        batch: list[_Waiting] = []
        count = 0
        while queue.waiting and (not batch or count + len(queue.waiting[0].texts) <= self._max_batch):
            w = queue.waiting.pop(0)
            queue.size -= len(w.texts)
            if not w.future.cancelled():  # its caller gave up: embed nothing for it
                batch.append(w)
                count += len(w.texts)
        if not batch:
            return
        queue.busy = True
        task = asyncio.get_running_loop().create_task(self._run(kind, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, kind: EmbedKind, batch: list[_Waiting]) -> None:
        queue = self._queues[kind]
        try:
            self.calls += 1
            vectors = await self.inner.embed([t for w in batch for t in w.texts], kind)
        except asyncio.CancelledError:  # shutting down: the callers are not left waiting forever
            for w in batch:
                w.future.cancel()
            raise
        except Exception as exc:  # the provider failed: every caller of this batch sees why
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
        else:
            start = 0
            for w in batch:
                if not w.future.done():
                    w.future.set_result(vectors[start:start + len(w.texts)])
                start += len(w.texts)
        finally:
            queue.busy = False
            # What gathered while the provider worked goes at once: it has already waited.
            if queue.waiting:
                self._flush(kind)
