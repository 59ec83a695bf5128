"""The offline reading in worker processes (``offline_parse_processes``), so a machine with more cores reads faster.

In the node, one thread parses (``nlp``): one core's worth at most, and its
Python work shares the interpreter lock with the node's event loop. With
``offline_parse_processes`` N > 0 the whole reading of a text (the lead-in
cut, spaCy's parse, the mapping to triples) runs in one of N worker
processes, each with its own pipeline (loaded once, when the pool starts:
~60 MB and a second or two each). Texts queued while every worker is busy go
to the next free one together, through ``nlp.pipe`` (the batching ``nlp``
does in the node); what comes back is the triples, plain data.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date

from mnemonet.llm.base import Triple


def _load() -> None:
    from mnemonet.llm.offline import nlp

    nlp.pipeline()


def _read_batch(items: list[tuple[str, str, date]]) -> list[list[Triple]]:
    """In a worker: each (text, speaker, day) read into its triples, the texts parsed together."""
    from mnemonet.llm.offline import nlp
    from mnemonet.llm.offline.extract import extract_triples, reading_of, with_elided_subjects

    pipeline = nlp.pipeline()
    readings = [reading_of(text) for text, _, _ in items]
    docs = list(pipeline.pipe([r.body for r in readings], batch_size=len(items)))
    for i, doc in enumerate(docs):
        said = with_elided_subjects(doc)
        if said is not None:  # as the node reads: chat that left its "I" out is read again with the "I" said
            readings[i] = replace(readings[i], body=said)
            docs[i] = pipeline(said)
    return [extract_triples(doc, reading, speaker, day)
            for doc, reading, (_, speaker, day) in zip(docs, readings, items, strict=True)]


@dataclass
class _Waiting:
    item: tuple[str, str, date]
    future: asyncio.Future[list[Triple]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class ReadingPool:
    """N worker processes reading texts; at most one batch in each at a time."""

    def __init__(self, processes: int, max_batch: int) -> None:
        # spawn: a forked child would inherit the node's threads and sockets mid-flight.
        self._pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"), initializer=_load)
        self._processes = processes
        self._slots = asyncio.Semaphore(processes)
        self._max_batch = max_batch
        self._waiting: list[_Waiting] = []

    async def warm_up(self) -> None:
        """Start every worker (each loads its pipeline) before the first text needs one."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._pool, _load) for _ in range(self._processes)))

    async def read(self, text: str, speaker: str, day: date) -> list[Triple]:
        """The triples of ``text`` (first person ``speaker``, dates from ``day``), read in a worker."""
        waiting = _Waiting((text, speaker, day))
        self._waiting.append(waiting)
        async with self._slots:  # a free worker: take what queued meanwhile, this text among it unless taken
            batch, self._waiting = self._waiting[: self._max_batch], self._waiting[self._max_batch:]
            if batch:
                await self._send(batch)
        return await waiting.future

    async def _send(self, batch: list[_Waiting]) -> None:
        try:
            results = await asyncio.get_running_loop().run_in_executor(
                self._pool, _read_batch, [w.item for w in batch])
        except Exception as exc:  # a text that breaks the batch is read again alone, so it fails its caller only
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
                return
            for one in batch:
                await self._send([one])
            return
        for w, triples in zip(batch, results, strict=True):
            if not w.future.done():
                w.future.set_result(triples)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
