"""Keeps the vector index in step with the graph.

The graph is the record of truth: a vector write that fails after the graph
commit loses nothing, because ``sync`` later finds graph items without a
vector (``VectorStore.ids_missing``) and embeds them.

An observation costs one embedding: its own text, in the context of the turn
before it (whose vector is reused), while the statements and concepts it
yields are keyword-only rows found through it (``index_derived_vectors``).
By default it is indexed behind the write (``index_in_background``): the
writer goes on while the embedder works on many writes' texts at once, and a
read first waits for the writes acknowledged before it (``caught_up``).

With several store nodes over one PostgreSQL (``index_queue`` shared), the rows
waiting are also recorded in the shared queue before the write is acknowledged
(``store/index_queue.py``): a read on any node waits for every node's, and the
rows of a node that died are indexed by another (``index_taken``), once.

Every write to the index (either way) runs under the erasure lock and writes only the rows
of items still in the graph: an entry queued, or handed in by a write still
under way, when its item was erased is dropped, never written back (issue 31,
row 3: rows indexed behind the write outlived the erasure). An erasure also
``cancel``s the queued entries of what it erases, so their text never reaches
the embedder.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemonet.embed.base import Embedder
from mnemonet.settings import Settings
from mnemonet.store.index_queue import IndexQueue, QueuedRow
from mnemonet.store.vector_context import preceding_turns
from mnemonet.store.vector_types import VectorItem, contextual_vector
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexEntry:
    """One graph item to index: its id, kind, text, time and metadata.

    ``vector`` False: a keyword-only row (found by its words and through the graph, never embedded).
    """

    id: str
    kind: str
    text: str
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: bool = True


class VectorIndexer:
    """Embeds graph items that have no vector yet and writes them in one batch.

    An observation of a session (metadata ``search_session_key``) is embedded
    in the context of the turns just before it (``index_context_turns``): a
    reply such as "salads and sandwiches" says nothing of the question it
    answers, and a contextual vector finds it from that question. The context's
    vector is usually the one the turn before got moments ago, so it costs no
    second embedding (``contextual_vector``). Only the vector sees the context;
    keyword search and hits show the observation's own text.

    ``present``: which of some ids the graph still holds (``GraphStore.existing_items``); ``lock``: the
    erasure lock (``ServiceContext.erasing``), held by every write to the index and by every erasure.
    """

    def __init__(
        self, vectors: VectorStore, embedder: Embedder, settings: Settings, queue: IndexQueue | None = None, *,
        present: Callable[[list[str]], Awaitable[set[str]]], lock: asyncio.Lock,
    ) -> None:
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings
        # The shared queue (index_queue shared): other nodes wait for, and take over, what this one holds.
        self.queue = queue
        self._present = present
        self._lock = lock
        self.failures = 0
        self.taken_over = 0  # rows of another node (its lease ran out) this one indexed
        self.reads_unsettled = 0  # reads that gave up waiting (index_read_wait) and went on without queued rows
        self.lost = 0  # rows this one queued that another node took over before this one got to them
        self.repeats = 0  # rows this one embedded that another node wrote meanwhile: work done twice
        # Vectors of texts embedded lately, by text: a turn's context is the turn just before it.
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        # Written behind (index_in_background): entries waiting, oldest first (None: cancelled, leaving in
        # its turn so ``caught_up`` counts stay in order), and how many are in a call now.
        self._queue: OrderedDict[str, IndexEntry | None] = OrderedDict()
        self._in_call = 0
        self._submitted = 0  # entries ever queued
        self._done = 0  # of those, indexed or failed (they leave the queue in order)
        self._progress = asyncio.Condition()
        self._drain: asyncio.Task[None] | None = None
        self._renewal: asyncio.Task[None] | None = None

    @property
    def backlog(self) -> int:
        """Entries submitted and not indexed yet."""
        return len(self._queue) + self._in_call

    async def pending(self) -> int:
        """Rows written and not indexed yet: this node's, or with the shared queue every store node's."""
        return self.backlog if self.queue is None else max(self.backlog, await self.queue.count())

    async def submit(self, entries: Sequence[IndexEntry]) -> None:
        """Index what a write just added: behind the write (``index_in_background``), or now.

        Behind: queued, and indexed many at a time in one embedder call while the writer goes on; the
        caller waits only while ``index_backlog_max`` entries wait (a sustained writer is held to the
        embedder's pace). Either way a failure is logged and counted, and ``sync`` repairs it.
        """
        if not self.settings.index_in_background:
            await self.index_quietly(entries)
            return
        if self.backlog >= self.settings.index_backlog_max:
            async with self._progress:
                await self._progress.wait_for(lambda: self.backlog < self.settings.index_backlog_max)
        if self.queue is not None:
            try:  # before the write is acknowledged: a read on any node then waits for these rows
                await self.queue.put([_queued(e) for e in entries])
            except Exception as exc:  # PostgreSQL down: this node still indexes them; others cannot wait for them
                self.failures += 1
                log.warning("vector.queue_failed count=%d error=%s", len(entries), exc)
        self._enqueue(entries)

    def _enqueue(self, entries: Sequence[IndexEntry]) -> None:
        for e in entries:
            if e.id not in self._queue:
                self._queue[e.id] = e
                self._submitted += 1
            elif self._queue[e.id] is None:  # cancelled, and written again since (a retry after its erasure)
                self._queue[e.id] = e
        if self._queue and (self._drain is None or self._drain.done()):
            self._drain = asyncio.get_running_loop().create_task(self._drain_queue(), name="vector-index-drain")

    async def take_over(self) -> int:
        """Take over queued rows of this space whose lease ran out (their node died or stalled past
        ``index_lease``) and index them here, behind the writes of this node; how many were taken."""
        room = min(self.settings.index_takeover_batch, self.settings.index_backlog_max - self.backlog)
        if self.queue is None or room <= 0:
            return 0
        rows = await self.queue.take_over(room)
        self.taken_over += len(rows)
        self._enqueue([IndexEntry(id=r.id, kind=r.kind, text=r.text, created_at=r.created_at, metadata=r.metadata,
                                  vector=r.vector) for r in rows])
        return len(rows)

    async def caught_up(self) -> None:
        """Return once what was submitted before this call is indexed: a read sees the writes it follows.

        With the shared queue, the writes of every store node over this database: the read waits until no
        row up to the queue's newest is left. Bounded by ``index_read_wait``: past it the read goes on
        without what is still queued (found again when it is indexed).
        """
        if self.settings.index_read_wait == 0:
            return
        try:
            async with asyncio.timeout(self.settings.index_read_wait):
                await self._settled()
        except TimeoutError:
            self.reads_unsettled += 1
            log.warning("vector.read_unsettled waited=%.1fs backlog=%d", self.settings.index_read_wait, self.backlog)

    async def drained(self) -> None:
        """Return once everything submitted so far is indexed (or has failed): before an erase, and at close.

        With the shared queue, also every other node's rows of this space (an erase must not be followed
        by another node's row of what it erased).
        """
        await self._settled()

    async def _settled(self) -> None:
        target = self._submitted
        if self._done < target:
            async with self._progress:
                await self._progress.wait_for(lambda: self._done >= target)
        if self.queue is not None:
            await self._poll_queue(self.queue, self.queue.settled)

    async def others_settled(self) -> None:
        """Return once the rows other store nodes hold for this space now are indexed (or gone).

        An erasure waits for them holding the erasure lock: another node's writes to the index do not take
        this node's lock, and a row of one in its embedder call would outlive the erase. This node's own
        queued entries it ``cancel``s instead (a dead node's rows, taken over here, become its own).
        """
        if self.queue is not None:
            await self._poll_queue(self.queue, self.queue.settled_elsewhere)

    async def _poll_queue(self, queue: IndexQueue, settled: Callable[[int], Awaitable[bool]]) -> None:
        """Wait until ``settled`` says ``queue``'s rows up to its present high-water mark are done."""
        mark = await queue.high_water()
        if mark is None:
            return
        # Polled: the rows are another node's, and PostgreSQL tells no one when a row goes.
        while True:
            if await settled(mark):
                return
            await asyncio.sleep(self.settings.index_queue_poll)

    def cancel(self, ids: Collection[str] | None = None) -> list[str]:
        """Drop the queued entries of ``ids`` (None: every queued entry) unindexed; returns their ids.

        An erasure calls it holding the erasure lock: an entry is then either queued (cancelled here) or
        indexed (its row erased), never in a call between the two.
        """
        wanted = list(self._queue) if ids is None else [i for i in ids if i in self._queue]
        cancelled = [i for i in wanted if self._queue[i] is not None]
        for i in cancelled:
            self._queue[i] = None
        return cancelled

    def forget_recent(self) -> None:
        """Drop the recent vectors kept by text (an erase leaves no copy of an erased text in memory)."""
        self._recent.clear()

    async def close(self) -> None:
        """Index what waits before the stores close, so a clean stop leaves no item without its row."""
        target = self._submitted
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= target)

    async def _drain_queue(self) -> None:
        """Index queued entries, up to ``index_background_batch`` a call, until none is left.

        No lingering: what arrives while the embedder works goes in the next call, so calls grow with
        the load on their own. With the shared queue, the leases of what waits are renewed meanwhile.
        """
        if self.queue is not None and (self._renewal is None or self._renewal.done()):
            self._renewal = asyncio.get_running_loop().create_task(self._renew(self.queue), name="vector-index-renewal")
        try:
            while self._queue:
                # Taken from the queue under the lock, so an erasure never runs while a batch is out of it.
                async with self._lock:
                    taken = [self._queue.popitem(last=False) for _ in range(min(len(self._queue),
                                                                                self.settings.index_background_batch))]
                    self._in_call = len(taken)
                    try:
                        await self._index_held([e for _, e in taken if e is not None],
                                               [i for i, e in taken if e is None])
                    finally:
                        self._in_call = 0
                        self._done += len(taken)
                        async with self._progress:
                            self._progress.notify_all()
        finally:
            if self._renewal is not None:
                self._renewal.cancel()

    async def _renew(self, queue: IndexQueue) -> None:
        """Keep the leases on this node's queued rows while it works through them (a third of a lease apart)."""
        while True:
            await asyncio.sleep(self.settings.index_lease / 3)
            try:
                await queue.renew()
            except Exception as exc:  # PostgreSQL away: the next renewal tries again
                log.warning("vector.queue_renew_failed error=%s", exc)

    async def _index_held(self, batch: list[IndexEntry], cancelled: list[str]) -> None:
        """Index ``batch`` (the caller holds the erasure lock): with the shared queue, only what this node
        still holds, then clear it, and the ``cancelled`` entries' rows, from the queue."""
        if self.queue is None:
            await self._quietly(batch, self._index)
            return
        ids = [e.id for e in batch]
        try:
            held = await self.queue.hold(ids) if ids else set()
        except Exception as exc:  # no queue to ask: index them (a row written twice is written once)
            log.warning("vector.queue_hold_failed error=%s", exc)
            held = set(ids)
        self.lost += len(ids) - len(held)
        try:
            await self._quietly([e for e in batch if e.id in held], self._index)
        finally:
            await self._dequeue(sorted(held | set(cancelled)))

    async def _dequeue(self, ids: list[str]) -> None:
        if self.queue is None or not ids:
            return
        try:  # indexed or failed: a failure is the vector sync's to repair, as without the queue
            await self.queue.done(ids)
        except Exception as exc:  # left held; when the lease runs out another node indexes what is missing
            log.warning("vector.queue_done_failed count=%d error=%s", len(ids), exc)

    async def index(self, entries: Sequence[IndexEntry]) -> int:
        """Embed and store the entries that have no row yet and whose items the graph still holds, under
        the erasure lock; returns how many were written."""
        if not entries:
            return 0
        async with self._lock:
            return await self._index(entries)

    async def _index(self, entries: Sequence[IndexEntry]) -> int:
        if not entries:
            return 0
        unique = {e.id: e for e in entries}
        present = await self._present(list(unique))  # an item erased since it was handed in has no row to get
        missing = set(await self.vectors.ids_missing([i for i in unique if i in present])) if present else set()
        todo = [e for e in unique.values() if e.id in missing]
        if not todo:
            return 0
        contexts = await self._contexts([e for e in todo if e.vector])
        embedded = await self._embedded([e.text for e in todo if e.vector] + list(contexts.values()))
        items = [self._item(e, contexts.get(e.id, ""), embedded) for e in todo]
        written = await self.vectors.upsert(items)
        self.repeats += len(items) - written
        return written

    async def sync(self, entries: Sequence[IndexEntry]) -> int:
        """``index`` the entries that have no row, but those waiting in the shared queue: the node that
        holds them indexes them (or another takes them over), so a sync pass embeds nothing twice."""
        if self.queue is not None and entries:
            waiting = await self.queue.waiting([e.id for e in entries])
            entries = [e for e in entries if e.id not in waiting]
        return await self.index(entries)

    def _item(self, e: IndexEntry, context: str, embedded: dict[str, np.ndarray]) -> VectorItem:
        if not e.vector:
            return VectorItem(id=e.id, kind=e.kind, text=e.text, model="", vector=None, created_at=e.created_at,
                              metadata=e.metadata)
        vector = contextual_vector(embedded[e.text], embedded.get(context), len(e.text), len(context))
        return VectorItem(id=e.id, kind=e.kind, text=e.text, model=self.embedder.model, vector=vector,
                          created_at=e.created_at, metadata=e.metadata, context=context)

    async def _embedded(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each text's passage vector: from the recent ones, the others in one embedder call."""
        out = {t: self._recent[t] for t in texts if t in self._recent}
        todo = list(dict.fromkeys(t for t in texts if t not in out))
        if todo:
            for text, made in zip(todo, await self.embedder.embed(todo, kind="passage"), strict=True):
                out[text] = np.asarray(made, dtype=np.float32)
        for text, vector in out.items():
            self._recent[text] = vector
            self._recent.move_to_end(text)
        while len(self._recent) > self.settings.index_recent_vectors:
            self._recent.popitem(last=False)
        return out

    async def _contexts(self, entries: Sequence[IndexEntry]) -> dict[str, str]:
        """The context each observation of a session is embedded in: the end of the turns before it.

        At most ``index_context_chars``; with one turn (``index_context_turns``) that is the turn before
        as it was indexed, so its vector is usually a recent one. The turns before are read from the
        index and from ``entries`` themselves (a turn indexed in the same call as the one before it).
        """
        s = self.settings
        key = s.search_session_key
        seeds = [
            (e.id, e.metadata[key], e.created_at) for e in entries
            if e.kind == "observation" and isinstance(e.metadata.get(key), str)
        ]
        if s.index_context_turns == 0 or s.index_context_chars == 0 or not seeds:
            return {}
        span_ms = int(s.search_session_span * 1000)
        before = await preceding_turns(self.vectors, seeds, key, s.index_context_turns, span_ms)
        contexts = {}
        for seed_id, session, at in seeds:
            alongside = [(e.created_at, e.id, e.text) for e in entries
                         if e.kind == "observation" and e.metadata.get(key) == session
                         and at - span_ms <= e.created_at < at]
            turns = sorted({*before.get(seed_id, []), *alongside})[-s.index_context_turns:]
            context = _tail("\n".join(text for _, _, text in turns), s.index_context_chars)
            if context:
                contexts[seed_id] = context
        return contexts

    async def index_quietly(self, entries: Sequence[IndexEntry]) -> int:
        """Like ``index`` but a failure is logged and counted, never raised.

        Used right after a graph commit: the write is already acknowledged
        and ``sync`` repairs the index later.
        """
        return await self._quietly(entries, self.index)

    async def _quietly(self, entries: Sequence[IndexEntry], index: Callable[[Sequence[IndexEntry]], Awaitable[int]]
                       ) -> int:
        try:
            return await index(entries)
        except Exception as exc:  # provider or database down: the graph write stands
            self.failures += 1
            log.warning("vector.index_failed count=%d error=%s", len(entries), exc)
            return 0


def _queued(e: IndexEntry) -> QueuedRow:
    return QueuedRow(id=e.id, kind=e.kind, text=e.text, created_at=e.created_at, metadata=e.metadata, vector=e.vector)


def _tail(text: str, max_chars: int) -> str:
    """The last ``max_chars`` of ``text``, starting at a word."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 0:
        return ""
    start = len(text) - max_chars
    cut = text[start:]
    if not (text[start - 1].isspace() or cut[0].isspace()):  # began mid-word: drop the fragment
        parts = cut.split(None, 1)
        cut = parts[1] if len(parts) > 1 else cut
    return cut.lstrip()
