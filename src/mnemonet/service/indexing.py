"""Keeps the vector index in step with the graph.

The graph is the record of truth: a vector write that fails after the graph
commit loses nothing, because ``sync`` later finds graph items without a
vector (``VectorStore.ids_missing``) and embeds them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemonet.embed.base import Embedder
from mnemonet.store.vector_types import VectorItem
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexEntry:
    """One graph item to embed: its id, kind, text, time and metadata."""

    id: str
    kind: str
    text: str
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)


class VectorIndexer:
    """Embeds graph items that have no vector yet and writes them in one batch."""

    def __init__(self, vectors: VectorStore, embedder: Embedder) -> None:
        self.vectors = vectors
        self.embedder = embedder
        self.failures = 0

    async def index(self, entries: Sequence[IndexEntry]) -> int:
        """Embed and store the entries that lack a vector; returns how many were written."""
        if not entries:
            return 0
        unique = {e.id: e for e in entries}
        missing = set(await self.vectors.ids_missing(list(unique)))
        todo = [e for e in unique.values() if e.id in missing]
        if not todo:
            return 0
        vectors = await self.embedder.embed([e.text for e in todo], kind="passage")
        items = [
            VectorItem(
                id=e.id, kind=e.kind, text=e.text, model=self.embedder.model, vector=v,
                created_at=e.created_at, metadata=e.metadata,
            )
            for e, v in zip(todo, vectors, strict=True)
        ]
        return await self.vectors.upsert(items)

    async def index_quietly(self, entries: Sequence[IndexEntry]) -> int:
        """Like ``index`` but a failure is logged and counted, never raised.

        Used right after a graph commit: the write is already acknowledged
        and ``sync`` repairs the index later.
        """
        try:
            return await self.index(entries)
        except Exception as exc:  # provider or database down: the graph write stands
            self.failures += 1
            log.warning("vector.index_failed count=%d error=%s", len(entries), exc)
            return 0
