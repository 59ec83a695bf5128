"""Keeps the vector index in step with the graph.

The graph is the record of truth: a vector write that fails after the graph
commit loses nothing, because ``sync`` later finds graph items without a
vector (``VectorStore.ids_missing``) and embeds them.

What an observation yields (statements, new concepts) can wait (``defer``):
embedded after ``observe`` answers, in the next observation's call or, when
none comes soon, many observations' worth in one call
(``index_in_background``). On LoCoMo turns an observation yields ~1.6
statements and ~2.5 new concepts, 31% of the tokens it has embedded; deferring
them measured 1.1-1.6x at 8 concurrent writers in three loaded runs, slower
in two others and at one writer in all (bench/README.md "Ingest"), so it is
off by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemonet.embed.base import Embedder
from mnemonet.settings import Settings
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
    """

    def __init__(self, vectors: VectorStore, embedder: Embedder, settings: Settings) -> None:
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings
        self.failures = 0
        # Vectors of texts embedded lately, by text: a turn's context is the turn just before it.
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        # Waiting to be embedded, oldest first, each with when it was deferred (loop time).
        self._deferred: dict[str, tuple[IndexEntry, float]] = {}
        self._taken: dict[str, IndexEntry] = {}  # in an embedding call now (the drain's or carried by another)
        self._settled = asyncio.Event()  # nothing taken
        self._settled.set()
        self._drain: asyncio.Task[None] | None = None
        self._go = asyncio.Event()  # a full batch waits, or a caller wants everything now
        self._flush = False  # drained() asked: no more lingering

    @property
    def backlog(self) -> int:
        """Deferred entries not embedded yet."""
        return len(self._deferred) + len(self._taken)

    def defer(self, entries: Sequence[IndexEntry]) -> None:
        """Embed ``entries`` soon, off the caller's path, in a call shared with other work.

        They ride along with the next ``index_quietly(..., carry=True)`` (an observation's own
        vector); if none comes within ``index_background_wait`` seconds, or
        ``index_background_batch`` entries wait, a call of their own goes. Like ``index_quietly``:
        a failure is counted and ``sync`` repairs it.
        """
        now = asyncio.get_running_loop().time()
        for e in entries:
            if e.id not in self._taken:
                self._deferred.setdefault(e.id, (e, now))
        if len(self._deferred) >= self.settings.index_background_batch:
            self._go.set()
        if self._deferred and (self._drain is None or self._drain.done()):
            self._drain = asyncio.get_running_loop().create_task(self._drain_deferred(), name="vector-index-drain")

    async def drained(self) -> None:
        """Embed what is deferred now, and return once it is embedded (or has failed), carried calls included."""
        self._flush = True
        self._go.set()
        try:
            while (self._drain is not None and not self._drain.done()) or self._taken:
                if self._drain is not None and not self._drain.done():
                    await asyncio.shield(self._drain)
                else:
                    await self._settled.wait()
        finally:
            self._flush = False

    async def close(self) -> None:
        """Embed what is deferred before the stores close, so a clean stop leaves no item without a vector."""
        await self.drained()

    async def _drain_deferred(self) -> None:
        s = self.settings
        loop = asyncio.get_running_loop()
        while self._deferred:
            if not self._go.is_set():
                # Lingering for a call to ride along with: under load an engine call costs far more
                # than the short texts in it (bench/README.md "Ingest").
                _, since = next(iter(self._deferred.values()))
                delay = since + s.index_background_wait - loop.time()
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._go.wait(), delay)
                    continue  # carried away meanwhile, or due now, or a full batch
            await self._index_taken([], s.index_background_batch)
            if not self._flush and len(self._deferred) < s.index_background_batch:
                self._go.clear()

    async def _index_taken(self, entries: Sequence[IndexEntry], room: int) -> int:
        """``entries`` and up to ``room`` of the oldest deferred ones in one call; failures counted."""
        taken = [self._deferred.pop(i)[0] for i in list(self._deferred)[:max(0, room)]]
        for e in taken:
            self._taken[e.id] = e
        self._settled.clear()
        try:
            return await self.index_quietly([*entries, *taken])
        finally:  # out of the backlog once tried: a failure is counted and left to sync
            for e in taken:
                self._taken.pop(e.id, None)
            if not self._taken:
                self._settled.set()

    async def index(self, entries: Sequence[IndexEntry]) -> int:
        """Embed and store the entries that have no row yet; returns how many were written."""
        if not entries:
            return 0
        unique = {e.id: e for e in entries}
        missing = set(await self.vectors.ids_missing(list(unique)))
        todo = [e for e in unique.values() if e.id in missing]
        if not todo:
            return 0
        contexts = await self._contexts([e for e in todo if e.vector])
        embedded = await self._embedded([e.text for e in todo if e.vector] + list(contexts.values()))
        items = [self._item(e, contexts.get(e.id, ""), embedded) for e in todo]
        return await self.vectors.upsert(items)

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
        """The context each observation of a session is embedded with: the end of the turns before it.

        At most ``index_context_chars``; with one turn (``index_context_turns``) that is the turn before
        as it was indexed, so its vector is usually a recent one.

        A turn written in the same batch as its predecessor (a ``sync`` after failures) finds no context.
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
        contexts = {i: _tail("\n".join(texts), s.index_context_chars) for i, texts in before.items()}
        return {i: c for i, c in contexts.items() if c}

    async def index_quietly(self, entries: Sequence[IndexEntry], *, carry: bool = False) -> int:
        """Like ``index`` but a failure is logged and counted, never raised.

        Used right after a graph commit: the write is already acknowledged
        and ``sync`` repairs the index later. ``carry``: deferred entries fill
        the call (up to ``index_background_batch`` texts in all).
        """
        if carry and self._deferred:
            return await self._index_taken(entries, self.settings.index_background_batch - len(entries))
        try:
            return await self.index(entries)
        except Exception as exc:  # provider or database down: the graph write stands
            self.failures += 1
            log.warning("vector.index_failed count=%d error=%s", len(entries), exc)
            return 0


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
