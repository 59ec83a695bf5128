"""``MemoryService``: observe, claim and remember over the graph, the vector index and a language model.

Budget: exactly one language-model call per ``observe`` and ``claim``, at most
one per ``remember`` (none when memory holds nothing to answer with); the
counts are in ``stats()``. Writes derive every id from the
caller's idempotency key, so a retried call lands on the same nodes and the
store turns it into a no-op.

The service is a façade: each method hands the call to the module of its job,
where its full contract is documented. The jobs share one ``ServiceContext``
(``context.py``: the stores, providers, settings and counters) and the small
helpers of ``common.py``; none imports another (``tests/test_layers.py``):

- ``ingest``: ``observe``, ``import_file``, ``complete_extraction``: observations and their extraction;
- ``claims``: ``claim``: its basis, supersession said in words, "A contradicts B";
- ``reads``: ``recall``, ``remember``, ``search``, ``load`` and the ``get_*`` listings;
- ``briefing``: ``brief``, what a new agent session should know;
- ``erasure``: ``retract``, ``forget``, ``tombstones``, ``clear``, ``sync_vectors`` (the ``erasing`` lock, and
  the write gate of ``write_gate`` that every write passes: in its job as its source, a worker's here);
- ``workers``: what the worker agents call: ``infer``, ``record_inference``, ``pending_*``,
  ``mark_processed``, ``link_statements``, ``predicate_profile``, ``record_predicate``, ``record_summary``;
- ``operations``: ``health``, ``stats``, ``revoke_token``, ``revoked_tokens``, ``record_audit``, ``audit_log``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import (
    Answer,
    ClaimResult,
    ConsolidationWork,
    ForgetReport,
    ImportReport,
    InferredClaim,
    LinkKind,
    ObserveResult,
    PredicateProfile,
    Recall,
    RetractResult,
)
from mnemonet.model.brief import SessionBrief
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.model.views import (
    AuditView,
    ConceptView,
    ContradictionView,
    ObservationView,
    SearchHit,
    StatementView,
    TombstoneView,
    WriteResult,
)
from mnemonet.service.briefing import Briefing
from mnemonet.service.claims import Claims
from mnemonet.service.common import MAX_LIMIT
from mnemonet.service.context import ServiceContext
from mnemonet.service.derivations import Derivations
from mnemonet.service.erasure import Erasure
from mnemonet.service.indexing import VectorIndexer
from mnemonet.service.ingest import Ingest
from mnemonet.service.operations import Operations
from mnemonet.service.reads import Reads
from mnemonet.service.retrieval import Retriever, SearchMode
from mnemonet.service.usage import UsageRecorder
from mnemonet.service.workers import Workers
from mnemonet.service.write_gate import WriteGate
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.jobs import Coordination
from mnemonet.store.vectors import VectorStore
from mnemonet.truth.vocabulary import Vocabulary


class MemoryService:
    """The memory itself; implements ``mnemonet.model.MemoryAPI``.

    Each method's docstring is its summary; the full one is on the method of the job module it calls.
    """

    def __init__(
        self, graph: GraphStore, vectors: VectorStore, llm: LanguageModel, embedder: Embedder, settings: Settings,
        space: str = DEFAULT_SPACE, coordination: Coordination | None = None,
    ) -> None:
        self._ctx = ServiceContext(graph, vectors, llm, embedder, settings, space, coordination)
        # The spaces shared into this one, (name, memory) each: set by ``SpacedMemory``; read-only here.
        self.shared_spaces: Callable[[], Awaitable[list[tuple[str, MemoryService]]]] | None = None
        self._ingest = Ingest(self._ctx)
        self._claims = Claims(self._ctx)
        self._reads = Reads(self._ctx, self._shared)
        self._briefing = Briefing(self._ctx)
        derivations = Derivations(self._ctx)
        self._erasure = Erasure(self._ctx, derivations)
        self._workers = Workers(self._ctx, derivations)
        self._operations = Operations(self._ctx, self._ingest.infers_with_extraction)

    async def _shared(self) -> list[tuple[str, ServiceContext]]:
        """The spaces shared into this one, each by its context: a read here runs on that space's stores."""
        spaces = await self.shared_spaces() if self.shared_spaces is not None else []
        return [(name, memory._ctx) for name, memory in spaces]

    # -- what the rest of the node reads (and sets) -------------------------------

    @property
    def space(self) -> str:
        return self._ctx.space

    @property
    def graph(self) -> GraphStore:
        return self._ctx.graph

    @property
    def vectors(self) -> VectorStore:
        return self._ctx.vectors

    @property
    def llm(self) -> LanguageModel:
        """The language model; a node without one hands the service a proxy to an llm peer."""
        return self._ctx.llm

    @llm.setter
    def llm(self, llm: LanguageModel) -> None:
        self._ctx.llm = llm

    @property
    def embedder(self) -> Embedder:
        return self._ctx.embedder

    @property
    def settings(self) -> Settings:
        return self._ctx.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self._ctx.settings = settings

    @property
    def vocabulary(self) -> Vocabulary:
        """The relation vocabulary the answers and summaries read conflicts by (the validation worker's)."""
        return self._ctx.vocabulary

    @property
    def coordination(self) -> Coordination | None:
        """The job ledger and index queue shared with the other store nodes over this database, if any."""
        return self._ctx.coordination

    @property
    def indexer(self) -> VectorIndexer:
        return self._ctx.indexer

    @property
    def retriever(self) -> Retriever:
        return self._ctx.retriever

    @property
    def usage(self) -> UsageRecorder:
        return self._ctx.usage

    @property
    def llm_calls(self) -> Counter[str]:
        """Language-model calls by purpose (``stats()['llm_calls']``)."""
        return self._ctx.llm_calls

    @property
    def inference_runs(self) -> Callable[[], bool]:
        """Whether an inference worker runs over this memory (``infer_with_extraction: auto``); the node sets it."""
        return self._ctx.inference_runs

    @inference_runs.setter
    def inference_runs(self, runs: Callable[[], bool]) -> None:
        self._ctx.inference_runs = runs

    @property
    def erasing(self) -> asyncio.Lock:
        """Held by erasures and by every write to the vector index (``erasure``), which exclude each other."""
        return self._ctx.erasing

    @property
    def writes(self) -> WriteGate:
        """The writes under way by source, and the erasures that exclude them (``write_gate``)."""
        return self._ctx.writes

    async def close(self) -> None:
        await self.indexer.close()
        await self.usage.close()
        await self.vectors.close()
        await self.graph.close()

    # -- writes (ingest, claims) -----------------------------------------------------

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, defer_extraction: bool = False, writer: str = "",
    ) -> ObserveResult:
        """Record raw text, then the concepts and statements the language model extracts from it."""
        return await self._ingest.observe(text, source, idempotency_key=idempotency_key, metadata=metadata,
                                          defer_extraction=defer_extraction, writer=writer)

    async def import_file(
        self, content: str, format: Literal["jsonl", "locomo", "chat"] = "jsonl", *, text_field: str = "text",
        source_field: str = "source", default_source: str = "import", as_source: str | None = None,
        defer_extraction: bool = False, writer: str = "",
    ) -> ImportReport:
        """Observe every line of a file's text under its import key; each line's outcome (``service/importer``)."""
        return await self._ingest.import_file(
            content, format, text_field=text_field, source_field=source_field, default_source=default_source,
            as_source=as_source, defer_extraction=defer_extraction, writer=writer)

    async def complete_extraction(self, observation_id: str) -> ObserveResult:
        """Extract an observation whose extraction is pending (the inference worker calls this)."""
        return await self._ingest.complete_extraction(observation_id)

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None, writer: str = "",
    ) -> ClaimResult:
        """Assert a statement; its basis is found by search among items sharing a concept with it."""
        return await self._claims.claim(text, source, idempotency_key=idempotency_key, basis=basis, writer=writer)

    # -- worker agents (workers) -------------------------------------------------------

    async def pending_extractions(self, limit: int = 100) -> list[ObservationView]:
        """Oldest observations waiting for their extraction, past the inline grace period."""
        return await self._workers.pending_extractions(limit)

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        """Oldest observations the worker ``source`` has not processed yet."""
        return await self._workers.pending_observations(source, limit)

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        """Claims the language model infers from a text (nothing is stored)."""
        return await self._workers.infer(observation_text, source)

    # A worker's claims, summaries and links rest on others' items, so they pass the write gate as derived
    # writes: any erasure waits for those under way, and they wait for it (``write_gate``).

    async def record_inference(self, observation_id: str, claims: list[InferredClaim], source: str) -> WriteResult:
        """Store a worker's claims about an observation and mark it done, atomically."""
        async with self._ctx.deriving():
            return await self._workers.record_inference(observation_id, claims, source)

    async def pending_statements(self, source: str, limit: int = 100) -> list[StatementView]:
        """Oldest statements the worker ``source`` has not marked processed yet."""
        return await self._workers.pending_statements(source, limit)

    async def mark_processed(self, source: str, ids: list[str]) -> int:
        """Mark statements processed by the worker ``source``; repeating it is a no-op."""
        return await self._workers.mark_processed(source, ids)

    async def link_statements(self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str) -> bool:
        """SUPERSEDES or CONTRADICTS between existing statements."""
        async with self._ctx.deriving():
            return await self._workers.link_statements(kind, from_id, to_id, reason, source)

    async def predicate_profile(self, predicate: str, exclude: list[str]) -> PredicateProfile:
        """A predicate's remembered cardinality and how many subjects have one or several current values."""
        return await self._workers.predicate_profile(predicate, exclude)

    async def record_predicate(self, predicate: str, cardinality: str, decided_by: str) -> PredicateProfile:
        """Remember a predicate's cardinality (the first decision stands)."""
        return await self._workers.record_predicate(predicate, cardinality, decided_by)

    async def pending_consolidation(self, source: str, min_new: int, limit: int = 10) -> list[ConsolidationWork]:
        """Concepts due a summary by ``source``, each with the statements and open conflicts a summary may state."""
        return await self._workers.pending_consolidation(source, min_new, limit)

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        """Store a summary about a concept, superseding the source's current one, and embed it as ``summary``."""
        async with self._ctx.deriving():
            return await self._workers.record_summary(concept_id, text, derived_from, source)

    # -- taking back and erasing (erasure) -----------------------------------------------

    async def retract(self, id: str, reason: str, source: str = "user", any_source: bool = False) -> RetractResult:
        """Take a statement or an observation back: append a retraction by ``source``, delete nothing; only its
        own items unless ``any_source`` (an admin of the space: ``check_may_retract``)."""
        return await self._erasure.retract(id, reason, source, any_source)

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local"
    ) -> ForgetReport:
        """Admin only: erase an observation, or all a source wrote, and everything derived only from it."""
        return await self._erasure.forget(observation_id, source, by)

    async def tombstones(self, limit: int = 50) -> list[TombstoneView]:
        """Admin only: the tombstones of erasures, newest first."""
        return await self._erasure.tombstones(limit)

    async def clear(self) -> None:
        """Admin only: erase the graph (but token revocations and the audit log) and the vector index."""
        await self._erasure.clear()

    async def sync_vectors(self, limit: int = MAX_LIMIT) -> int:
        """Index recent graph items that have no row (after a failed index write or a restart)."""
        return await self._erasure.sync_vectors(limit)

    # -- reads (reads) ----------------------------------------------------------------------

    async def recall(self, query: str) -> Recall:
        """The structured memory behind ``remember``: current statements, what they replaced, open conflicts."""
        return await self._reads.recall(query)

    async def remember(self, query: str, source: str | None = None) -> Answer:
        """Answer a question from memory: the current answer first, then evidence, changes and conflicts."""
        return await self._reads.remember(query, source)

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        """The ``k`` best hits here and in the spaces shared into this one, each with its use count."""
        return await self._reads.search(query, k, kinds, since, mode)

    async def load(self, ids: list[str]) -> list[dict[str, Any]]:
        """Full items with provenance, for ids from ``search``."""
        return await self._reads.load(ids)

    async def brief(self, subject: str | None = None, since: int | None = None,
                    budget: int | None = None) -> SessionBrief:
        """What a new agent session should know about ``subject`` (or the team), within a token budget."""
        return await self._briefing.brief(subject, since, budget)

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]:
        """The newest observations."""
        return await self._reads.get_recent_observations(limit)

    async def get_recent_statements(self, limit: int = 20) -> list[StatementView]:
        """The newest statements."""
        return await self._reads.get_recent_statements(limit)

    async def get_unresolved_contradictions(self, limit: int = 20) -> list[ContradictionView]:
        """Contradictions no later statement has settled."""
        return await self._reads.get_unresolved_contradictions(limit)

    async def get_concepts(self, limit: int = 100) -> list[ConceptView]:
        """Concepts in memory."""
        return await self._reads.get_concepts(limit)

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]:
        """Statements about a concept, superseded ones included (callers mark them)."""
        return await self._reads.get_concept_statements(name, limit)

    # -- operations ---------------------------------------------------------------------------

    async def health(self, timeout: float) -> dict[str, dict[str, Any]]:
        """Each database's state from one real round trip: ``ok`` (with its time) or ``failing`` (with why)."""
        return await self._operations.health(timeout)

    async def stats(self) -> dict[str, Any]:
        """Counts of what memory holds, its backlog, and the language-model and embedder in use."""
        return await self._operations.stats()

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Admin only: record a client token as revoked (nodes read the list back); False if it was already."""
        return await self._operations.revoke_token(token_id, by)

    async def revoked_tokens(self) -> list[str]:
        """Ids of revoked client tokens, newest first (at most ``token_revocations_max``)."""
        return await self._operations.revoked_tokens()

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str,
                           spaces: list[str] | None = None) -> None:
        """Append an audit record of a client's write or admin call (the node that served it writes it)."""
        await self._operations.record_audit(who, method, node, outcome, detail, spaces)

    async def audit_log(self, limit: int = 50, *, spaces: list[str] | None = None) -> list[AuditView]:
        """Admin only: audit records, newest first (with ``spaces``, those of calls within them)."""
        return await self._operations.audit_log(limit, spaces)
