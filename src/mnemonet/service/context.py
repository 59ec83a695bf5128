"""``ServiceContext``: what the job modules of one ``MemoryService`` share.

Its stores, providers, settings, relation vocabulary, indexer, retriever and
counters, and what every job does with them: count a language-model call,
check a caller's text, pass the write gate (``write_gate``), index the
statements it wrote.
``MemoryService`` makes one per memory space and hands it to each job
(``ingest``, ``claims``, ``reads``, ``erasure``, ``workers``, ``operations``).
The language model, the settings and ``inference_runs`` are replaced after it
is made (a node wires them, tests swap them), so a job reads them here at each
call and keeps no copy.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel
from mnemonet.model.records import check_text
from mnemonet.model.secrets import check_no_secrets
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.model.views import StatementView
from mnemonet.service.common import statement_entry
from mnemonet.service.indexing import VectorIndexer
from mnemonet.service.retrieval import Retriever
from mnemonet.service.usage import UsageRecorder
from mnemonet.service.write_gate import DERIVED, WriteGate
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.jobs import Coordination
from mnemonet.store.vectors import VectorStore
from mnemonet.truth.vocabulary import Vocabulary

T = TypeVar("T")


class ServiceContext:
    """One memory space's stores, providers, vocabulary and counters, shared by its ``MemoryService``'s jobs."""

    def __init__(
        self, graph: GraphStore, vectors: VectorStore, llm: LanguageModel, embedder: Embedder, settings: Settings,
        space: str = DEFAULT_SPACE, coordination: Coordination | None = None,
    ) -> None:
        self.space = space
        # The job ledger and index queue shared with the other store nodes over this database (None: a
        # memory on its own, as tests and benches build one).
        self.coordination = coordination
        self.graph = graph
        self.vectors = vectors
        self.llm = llm
        self.embedder = embedder
        self.settings = settings
        # The relation vocabulary the answers and summaries read conflicts by (the validation worker's).
        self.vocabulary = Vocabulary.load(settings.validation_predicates_file)
        # Erasures and the index's writes exclude each other: a row written after an erase, of an item read
        # before it, would bring the erased text back (the indexer checks under it that its items still exist).
        self.erasing = asyncio.Lock()
        self.indexer = VectorIndexer(vectors, embedder, settings,
                                     coordination.queue if coordination is not None else None,
                                     present=graph.existing_items, lock=self.erasing)
        self.retriever = Retriever(graph, vectors, embedder, settings, caught_up=self.indexer.caught_up)
        self.usage = UsageRecorder(vectors, settings)
        # The writes under way, by source, and the erasures that exclude them (``write_gate``).
        self.writes = WriteGate()
        self.llm_calls: Counter[str] = Counter()
        # Whether an inference worker runs over this memory (``infer_with_extraction: auto``): the node sets
        # it from its membership; a memory on its own knows of none.
        self.inference_runs: Callable[[], bool] = lambda: False

    async def ask(self, purpose: str, call: Awaitable[T]) -> T:
        """Await a language-model call, counted under ``purpose`` (``stats()['llm_calls']``)."""
        self.llm_calls[purpose] += 1
        return await call

    def check_input(self, value: object, field: str, *, secrets: bool = True) -> str:
        """A caller's text within ``max_text_chars``, scanned for secrets unless ``secrets`` is False."""
        text = check_text(value, field, self.settings.max_text_chars)
        if secrets:
            check_no_secrets(text, field)
        return text

    def writing(self, source: str, *, derived: bool = False) -> AbstractAsyncContextManager[None]:
        """Held while ``source`` writes: an erasure of what it wrote waits for it, or it for the erasure.
        ``derived``: the write also rests on others' items (any ``forget`` excludes it)."""
        keys = (source, DERIVED) if derived else (source,)
        return self.writes.writing(keys, self.settings.forget_write_wait)

    def deriving(self) -> AbstractAsyncContextManager[None]:
        """Held while a write rests on others' items, whoever makes it (a worker's claims, summary or link,
        a retraction): any ``forget`` waits for it, and it for any ``forget``."""
        return self.writes.writing((DERIVED,), self.settings.forget_write_wait)

    def excluding(self, sources: Collection[str] | None) -> AbstractAsyncContextManager[None]:
        """Held by an erasure: no write of ``sources`` nor derived write (``None``: no write) runs meanwhile."""
        return self.writes.excluding(sources, self.settings.forget_drain_wait)

    async def index_statements(self, statements: list[StatementView]) -> None:
        await self.indexer.submit([statement_entry(s, self.settings.index_derived_vectors) for s in statements])
