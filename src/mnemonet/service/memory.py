"""``MemoryService``: observe, claim and remember over the graph, the vector index and a language model.

Budget: exactly one language-model call per ``observe``, ``claim`` and
``remember``; the counts are in ``stats()``. Writes derive every id from the
caller's idempotency key, so a retried call lands on the same nodes and the
store turns it into a no-op.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel, Triple
from mnemonet.llm.claims import parse_canonical_claim
from mnemonet.model.api import (
    Answer,
    ClaimResult,
    ConsolidationWork,
    InferredClaim,
    LinkKind,
    ObserveResult,
    Recall,
)
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import derived_id, new_id
from mnemonet.model.records import (
    ClaimRecord,
    ObservationRecord,
    SourceSpec,
    StatementSpec,
    check_id,
    check_name,
    check_text,
)
from mnemonet.model.secrets import check_no_secrets
from mnemonet.model.views import (
    ConceptView,
    ContradictionView,
    ObservationView,
    SearchHit,
    StatementView,
    WriteResult,
)
from mnemonet.service.indexing import IndexEntry, VectorIndexer
from mnemonet.service.recall import build_recall, memory_lines
from mnemonet.service.retrieval import Retriever, SearchMode
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.vectors import VectorStore

MAX_LIMIT = 500
MAX_LOAD_IDS = 100
# Hits at or above this normalised score may serve as a claim's basis.
BASIS_MIN_SCORE = 0.5


class MemoryService:
    """The memory itself; implements ``mnemonet.model.MemoryAPI``."""

    def __init__(
        self, graph: GraphStore, vectors: VectorStore, llm: LanguageModel, embedder: Embedder, settings: Settings
    ) -> None:
        self.graph = graph
        self.vectors = vectors
        self.llm = llm
        self.embedder = embedder
        self.settings = settings
        self.indexer = VectorIndexer(vectors, embedder, settings)
        self.retriever = Retriever(graph, vectors, embedder, settings)
        self.llm_calls: Counter[str] = Counter()

    async def close(self) -> None:
        await self.vectors.close()
        await self.graph.close()

    # -- writes --------------------------------------------------------------

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ObserveResult:
        """Record raw text, with the concepts and statements the language model extracts from it."""
        text = self._check_input(text, "text")
        source_spec = SourceSpec(name=check_name(source, "source"), kind="user")
        obs_id = derived_id("obs", idempotency_key) if idempotency_key else new_id("obs")
        extraction = await self._llm("observe", self.llm.extract_observation(text, source_spec.name))
        statements = [
            _statement(derived_id("st", obs_id, str(i)), t) for i, t in enumerate(extraction.statements)
        ]
        record = ObservationRecord(
            id=obs_id, text=text, source=source_spec, concepts=tuple(extraction.concepts),
            statements=tuple(statements), topics=tuple(extraction.topics), metadata=metadata or {},
            created_at=_now_ms(),
        )
        result = await self.graph.write_observation(record)
        stored = await self.graph.statements_from_observation(obs_id)
        await self._index_observation(record, stored, result.concept_ids)
        return ObserveResult(
            observation_id=obs_id, created=result.created, statements=stored,
            concepts=[c.name for c in extraction.concepts],
        )

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None,
    ) -> ClaimResult:
        """Assert a statement; its basis and the statements it contradicts are found by search."""
        text = self._check_input(text, "text")
        source_spec = SourceSpec(name=check_name(source, "source"), kind="agent")
        statement_id = derived_id("st", idempotency_key) if idempotency_key else new_id("st")
        parsed = await self._llm("claim", self.llm.parse_claim(text, source_spec.name))
        triple = parsed.triple
        if triple.predicate == "contradicts":
            return await self._claim_contradiction(triple, text, source_spec)
        derived_from = list(basis or []) or await self._find_basis(_sentence(triple))
        record = ClaimRecord(
            statement=_statement(statement_id, triple), source=source_spec, text=text,
            concepts=tuple(parsed.concepts), derived_from=tuple(dict.fromkeys(derived_from)),
        )
        result = await self.graph.write_claim(record)
        views = await self.graph.get_statements([statement_id])
        view = views[0] if views else None
        if view is not None:
            await self._index_statements([view])
        return ClaimResult(
            statement_id=statement_id, created=result.created, statement=view, derived_from=list(record.derived_from)
        )

    async def _claim_contradiction(self, triple: Triple, text: str, source: SourceSpec) -> ClaimResult:
        """"A contradicts B" links the two statements it names (found by search) with ``CONTRADICTS``."""
        a, b = await self._find_statement(triple.subject), await self._find_statement(triple.object)
        if a is None or b is None:
            missing = triple.subject if a is None else triple.object
            raise InvalidInput(f"text: no statement in memory matches {missing!r}")
        if a.id == b.id:
            raise InvalidInput(f"text: both sides name the same statement {a.id}")
        created = await self.graph.link_statements("CONTRADICTS", a.id, b.id, text, source)
        return ClaimResult(statement_id=a.id, created=created, statement=a, contradicts=[a.id, b.id])

    # -- worker agents ---------------------------------------------------------

    async def record_inference(self, observation_id: str, claims: list[InferredClaim], source: str) -> WriteResult:
        """Store a worker's claims about an observation and mark it done, atomically.

        Statement ids derive from (source, observation id, index), so the same
        result written twice (a retry, or two workers racing at a membership
        change) lands on the same ids and the second write is absorbed.
        Canonical claim sentences are read by rule; others cost one parse call each.
        """
        check_id(observation_id, "observation_id")
        source_spec = _worker(source)
        if not isinstance(claims, list) or len(claims) > self.settings.max_statements_per_write:
            raise InvalidInput(f"claims: must be a list of at most {self.settings.max_statements_per_write} claims")
        statements = []
        for i, c in enumerate(claims):
            if not isinstance(c, InferredClaim):
                raise InvalidInput(f"claims[{i}]: must be an InferredClaim")
            text = self._check_input(c.text, f"claims[{i}].text")
            triple = parse_canonical_claim(text)
            if triple is None:
                triple = (await self._llm("record_inference", self.llm.parse_claim(text, source_spec.name))).triple
            triple = triple.model_copy(update={"confidence": c.confidence})
            statements.append(_statement(derived_id("st", source_spec.name, observation_id, str(i)), triple))
        result = await self.graph.write_inference(observation_id, tuple(statements), source_spec)
        if result.created and statements:
            await self._index_statements(await self.graph.get_statements(result.statement_ids))
        return result

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        """Oldest observations the worker ``source`` has not processed yet."""
        return await self.graph.pending_observations(_worker(source), _limit(limit))

    async def pending_statements(self, source: str, limit: int = 100) -> list[StatementView]:
        """Oldest statements the worker ``source`` has not marked processed yet."""
        return await self.graph.pending_statements(_worker(source), _limit(limit))

    async def mark_processed(self, source: str, ids: list[str]) -> int:
        """Mark statements processed by the worker ``source``; repeating it is a no-op."""
        if not isinstance(ids, list) or len(ids) > MAX_LIMIT:
            raise InvalidInput(f"ids: must be a list of at most {MAX_LIMIT} ids")
        return await self.graph.mark_statements_processed(_worker(source), ids)

    async def link_statements(self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str) -> bool:
        """SUPERSEDES or CONTRADICTS between existing statements.

        False when the link exists (either way round for CONTRADICTS).
        """
        return await self.graph.link_statements(kind, from_id, to_id, reason, _worker(source))

    async def pending_consolidation(self, source: str, min_new: int, limit: int = 10) -> list[ConsolidationWork]:
        """Concepts with at least ``min_new`` statements no summary by ``source`` rests on yet, with those
        statements (oldest first, at most ``llm_max_summary_statements``) and the newest summary."""
        worker = _worker(source)
        out = []
        for concept_id, name, fresh in await self.graph.consolidation_candidates(worker, min_new, _limit(limit)):
            views = await self.graph.get_statements(fresh[: self.settings.llm_max_summary_statements])
            views.sort(key=lambda v: (v.created_at, v.id))
            previous = await self.graph.latest_summary(worker, concept_id)
            out.append(ConsolidationWork(concept_id=concept_id, concept=name, statements=views, previous=previous))
        return out

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        """Store a summary about a concept, DERIVED_FROM its basis, and embed it as kind ``summary``.

        Its id derives from (source, concept, basis), so a retry or a racing twin is absorbed.
        """
        worker = _worker(source)
        text = check_text(text, "text", self.settings.llm_summary_max_chars)
        if not isinstance(derived_from, list) or not derived_from or len(derived_from) > MAX_LIMIT:
            raise InvalidInput(f"derived_from: must list 1 to {MAX_LIMIT} statement ids")
        statement_id = derived_id("st", worker.name, check_id(concept_id, "concept_id"), *sorted(set(derived_from)))
        result = await self.graph.write_summary(statement_id, concept_id, text, derived_from, worker)
        if result.created:
            entry = IndexEntry(statement_id, "summary", text, _now_ms(), {"source": worker.name})
            await self.indexer.index_quietly([entry])
        return result

    # -- reads ---------------------------------------------------------------

    async def recall(self, query: str) -> Recall:
        """The structured memory behind ``remember``: current statements, what they replaced, open conflicts."""
        query = self._check_input(query, "query", secrets=False)
        hits = await self.retriever.search(query, k=self.settings.search_k)
        return await build_recall(self.graph, query, hits)

    async def remember(self, query: str) -> Answer:
        """Answer a question from memory, citing what the answer rests on."""
        recall = await self.recall(query)
        lines = memory_lines(recall, self.settings.remember_context_chars)
        written = await self._llm("remember", self.llm.answer(recall.query, lines))
        known = {line_id for line_id, _ in lines}
        return Answer(
            query=recall.query, text=written.text, cited=[c for c in written.cited if c in known],
            recall=recall, provider=self.llm.name,
        )

    async def infer(self, observation_text: str) -> list[InferredClaim]:
        text = self._check_input(observation_text, "observation_text")
        triples = await self._llm("infer", self.llm.infer_claims(text))
        return [InferredClaim(text=_sentence(t), confidence=t.confidence) for t in triples]

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        query = self._check_input(query, "query", secrets=False)
        return await self.retriever.search(query, k, kinds, since, mode)

    async def load(self, ids: list[str]) -> list[dict[str, Any]]:
        """Full items with provenance, for ids from ``search``."""
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidInput("ids: must be a list of strings")
        if len(ids) > MAX_LOAD_IDS:
            raise InvalidInput(f"ids: at most {MAX_LOAD_IDS} ids per call")
        statements = {s.id: s for s in await self.graph.get_statements(ids)}
        observations = {o.id: o for o in await self.graph.get_observations(ids)}
        items: list[dict[str, Any]] = []
        for item_id in ids:
            if item_id in statements:
                items.append({"kind": "statement", **statements[item_id].model_dump()})
            elif item_id in observations:
                items.append({"kind": "observation", **observations[item_id].model_dump()})
            else:
                node = await self.graph.get_node(item_id)
                if node is not None:
                    items.append({"kind": str(node.get("label", "node")).lower(), **node})
        return items

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]:
        return await self.graph.recent_observations(_limit(limit))

    async def get_recent_statements(self, limit: int = 20) -> list[StatementView]:
        return await self.graph.recent_statements(_limit(limit))

    async def get_unresolved_contradictions(self, limit: int = 20) -> list[ContradictionView]:
        return await self.graph.unresolved_contradictions(_limit(limit))

    async def get_concepts(self, limit: int = 100) -> list[ConceptView]:
        return await self.graph.concepts(_limit(limit))

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]:
        """Statements about a concept, superseded ones included (callers mark them)."""
        name = check_name(name, "name")
        return await self.graph.statements_about(name, _limit(limit), include_superseded=True)

    async def stats(self) -> dict[str, Any]:
        return {
            "graph": await self.graph.counts(),
            "vectors": await self.vectors.count(),
            "vector_index_failures": self.indexer.failures,
            "llm_provider": self.llm.name,
            "llm_calls": dict(self.llm_calls),
            "llm_usage": self.llm.usage(),
            "embedder": self.embedder.model,
        }

    async def clear(self) -> None:
        """Admin only: erase the graph and the vector index."""
        await self.graph.clear()
        await self.vectors.clear()

    async def sync_vectors(self, limit: int = MAX_LIMIT) -> int:
        """Embed recent graph items that have no vector (after a failed index write or a restart)."""
        observations = await self.graph.recent_observations(_limit(limit))
        statements = await self.graph.recent_statements(_limit(limit))
        entries = [_observation_entry(o) for o in observations] + [_statement_entry(s) for s in statements]
        return await self.indexer.index(entries)

    # -- helpers -------------------------------------------------------------

    def _check_input(self, value: object, field: str, *, secrets: bool = True) -> str:
        text = check_text(value, field, self.settings.max_text_chars)
        if secrets:
            check_no_secrets(text, field)
        return text

    async def _llm(self, purpose: str, call: Any) -> Any:
        self.llm_calls[purpose] += 1
        return await call

    async def _find_statement(self, sentence: str) -> StatementView | None:
        hits = await self.retriever.search(sentence, k=1, kinds=["statement"], mode="hybrid")
        if not hits:
            return None
        views = await self.graph.get_statements([hits[0].id])
        return views[0] if views else None

    async def _find_basis(self, sentence: str) -> list[str]:
        hits = await self.retriever.search(sentence, k=3, kinds=["observation", "statement"], mode="hybrid")
        return [h.id for h in hits if h.score >= BASIS_MIN_SCORE]

    async def _index_observation(
        self, record: ObservationRecord, statements: list[StatementView], concept_ids: list[str]
    ) -> None:
        entries = [
            _observation_entry(
                ObservationView(
                    id=record.id, text=record.text, created_at=record.created_at or _now_ms(),
                    source=record.source.name, metadata=record.metadata,
                )
            )
        ]
        entries += [_statement_entry(s) for s in statements]
        entries += [
            IndexEntry(c.id, "concept", c.name, c.created_at)
            for c in await self.graph.get_concepts(concept_ids)
        ]
        await self.indexer.index_quietly(entries)

    async def _index_statements(self, statements: list[StatementView]) -> None:
        await self.indexer.index_quietly([_statement_entry(s) for s in statements])


def _statement(statement_id: str, t: Triple) -> StatementSpec:
    return StatementSpec(
        id=statement_id, subject=t.subject, predicate=t.predicate, object=t.object,
        confidence=t.confidence, negated=t.negated,
    )


def _sentence(t: Triple) -> str:
    return f"{t.subject} {'not ' if t.negated else ''}{t.predicate.replace('_', ' ')} {t.object}"


def _statement_entry(s: StatementView) -> IndexEntry:
    return IndexEntry(s.id, "statement", s.sentence(), s.created_at, {"source": s.source or ""})


def _observation_entry(o: ObservationView) -> IndexEntry:
    # Indexed as "<source>: <text>": who said it matters to questions (measured in bench/README.md,
    # the speaker prefix doubles dense recall@10 on LoCoMo).
    text = f"{o.source}: {o.text}" if o.source else o.text
    return IndexEntry(o.id, "observation", text, o.created_at, {"source": o.source or "", **o.metadata})


def _worker(source: str) -> SourceSpec:
    return SourceSpec(name=check_name(source, "source"), kind="agent")


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit: must be an integer between 1 and {MAX_LIMIT}")
    return limit


def _now_ms() -> int:
    return int(time.time() * 1000)
