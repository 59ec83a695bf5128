"""``MemoryService``: observe, claim and remember over the graph, the vector index and a language model.

Budget: exactly one language-model call per ``observe`` and ``claim``, at most
one per ``remember`` (none when memory holds nothing to answer with); the
counts are in ``stats()``. Writes derive every id from the
caller's idempotency key, so a retried call lands on the same nodes and the
store turns it into a no-op.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel, Triple
from mnemonet.llm.claims import Supersession, parse_canonical_claim, split_supersession
from mnemonet.llm.errors import LanguageModelError, LanguageModelUnavailable
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
from mnemonet.model.errors import InvalidInput, Timeout, Unavailable
from mnemonet.model.idempotency import IdempotencyConflict
from mnemonet.model.ids import OBSERVATION_PREFIX, derived_id, is_observation_id, new_id
from mnemonet.model.records import (
    CONSOLIDATION_SOURCE,
    INFERENCE_SOURCE,
    VALIDATION_SOURCE,
    ClaimRecord,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    StatementLink,
    StatementSpec,
    check_id,
    check_name,
    check_text,
    normalise_name,
)
from mnemonet.model.secrets import check_no_secrets
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
from mnemonet.service.importer import import_text
from mnemonet.service.indexing import IndexEntry, VectorIndexer
from mnemonet.service.recall import build_recall
from mnemonet.service.retrieval import Retriever, SearchMode
from mnemonet.service.usage import UsageRecorder
from mnemonet.settings import Settings
from mnemonet.store import vector_erase, vector_usage
from mnemonet.store.graph import GraphStore
from mnemonet.store.graph_errors import UnknownReference
from mnemonet.store.vectors import VectorStore
from mnemonet.truth.answer import accept_phrasing, compose, contradicted_origins, speakers_of
from mnemonet.truth.currency import settle
from mnemonet.truth.vocabulary import Vocabulary

log = logging.getLogger(__name__)

MAX_LIMIT = 500
# A short id as ``short_id`` prints it: retract accepts it when it names one item.
_SHORT_ID = re.compile(r"^(st|obs)-[0-9a-f]{8}$")
MAX_LOAD_IDS = 100
_FULL_ID_HEX = 32  # a full id is ``<kind>-<32 hex digits>`` (model/ids.py)
# Hits at or above this normalised score may serve as a claim's basis.
BASIS_MIN_SCORE = 0.5


async def _round_trip(check: Callable[[], Awaitable[None]], timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            await check()
    except TimeoutError:
        return {"status": "failing", "error": f"no answer within {timeout}s"}
    except Exception as exc:  # whatever broke, /health reports it rather than failing itself
        return {"status": "failing", "error": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "ms": round((time.monotonic() - started) * 1000, 1)}


class MemoryService:
    """The memory itself; implements ``mnemonet.model.MemoryAPI``."""

    def __init__(
        self, graph: GraphStore, vectors: VectorStore, llm: LanguageModel, embedder: Embedder, settings: Settings,
        space: str = DEFAULT_SPACE,
    ) -> None:
        self.space = space
        # Keyed ids of another space derive from the space too, so an id names one item on the whole
        # network (events, audit records, the dashboard); the default space's are as before spaces.
        self._id_scope: tuple[str, ...] = () if space == DEFAULT_SPACE else (space,)
        self.graph = graph
        self.vectors = vectors
        self.llm = llm
        self.embedder = embedder
        self.settings = settings
        # The relation vocabulary the answers and summaries read conflicts by (the validation worker's).
        self.vocabulary = Vocabulary.load(settings.validation_predicates_file)
        self.indexer = VectorIndexer(vectors, embedder, settings)
        self.retriever = Retriever(graph, vectors, embedder, settings, caught_up=self.indexer.caught_up)
        self.usage = UsageRecorder(vectors, settings)
        self.llm_calls: Counter[str] = Counter()
        # Whether an inference worker runs over this memory (``infer_with_extraction: auto``): the node sets
        # it from its membership; a memory on its own knows of none.
        self.inference_runs: Callable[[], bool] = lambda: False
        # The spaces shared into this one, (name, memory) each: set by ``SpacedMemory``; read-only here.
        self.shared_spaces: Callable[[], Awaitable[list[tuple[str, MemoryService]]]] | None = None
        # Erasures and syncs of the vector index exclude each other: a sync that read graph items before
        # they were erased would write their rows back after the erase.
        self.erasing = asyncio.Lock()

    async def close(self) -> None:
        await self.indexer.close()
        await self.usage.close()
        await self.vectors.close()
        await self.graph.close()

    async def health(self, timeout: float) -> dict[str, dict[str, Any]]:
        """Each database's state from one real round trip: ``ok`` (with its time) or ``failing`` (with why)."""
        checks = {"graph": self.graph.ping, "vectors": self.vectors.ping}
        results = await asyncio.gather(*(_round_trip(check, timeout) for check in checks.values()))
        return dict(zip(checks, results, strict=True))

    # -- writes --------------------------------------------------------------

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, defer_extraction: bool = False,
    ) -> ObserveResult:
        """Record raw text, then the concepts and statements the language model extracts from it.

        The observation is committed first, so it is kept and acknowledged even when no model
        answers; its extraction is then ``pending`` and done once by the inference worker when
        a model is back. A retry of a pending observation tries the extraction again.
        ``defer_extraction``: return once the observation is recorded, its extraction left
        pending for the inference worker (no model call inline; a bulk import's pace).
        """
        if not isinstance(defer_extraction, bool):
            raise InvalidInput("defer_extraction: must be true or false")
        text = self._check_input(text, "text")
        source_spec = _source(source, "user")
        metadata = _checked_metadata(metadata)
        obs_id = (derived_id(OBSERVATION_PREFIX, *self._id_scope, idempotency_key) if idempotency_key
                  else new_id(OBSERVATION_PREFIX))
        record = ObservationRecord(
            id=obs_id, text=text, source=source_spec, metadata=metadata or {}, created_at=_now_ms(),
            extraction_pending=True,
        )
        result = await self.graph.write_observation(record)
        if not result.created:
            # A retry, or a reused key with other content (409): the write of an existing id writes nothing.
            await self._check_retry(obs_id, text, source_spec.name)
        state = "pending" if result.created else await self.graph.extraction_state(obs_id)
        if state == "pending" and defer_extraction:
            if result.created:  # searchable by its text at once; the extraction's entries come with it later
                await self.indexer.submit([_raw_entry(record)])
            return ObserveResult(observation_id=obs_id, created=result.created, pending=True)
        if state == "pending":
            # A new observation is embedded with its extraction, in one index call. A retry is read
            # as of the first write's time (its relative dates are that day's).
            said_at = record.created_at if result.created else await self._said_at(obs_id)
            return await self._extract(obs_id, text, source_spec.name, said_at, created=result.created,
                                       raw=record if result.created else None)
        return ObserveResult(
            observation_id=obs_id, created=result.created,
            statements=await self._observed(obs_id, source_spec.name),
            extraction_error="the language model gave no usable result" if state == "failed" else None,
        )

    async def import_file(
        self, content: str, format: Literal["jsonl", "locomo", "chat"] = "jsonl", *, text_field: str = "text",
        source_field: str = "source", default_source: str = "import", as_source: str | None = None,
        defer_extraction: bool = False,
    ) -> ImportReport:
        """Observe every line of a file's text under its import key; each line's outcome (``service/importer``)."""
        if not isinstance(defer_extraction, bool):
            raise InvalidInput("defer_extraction: must be true or false")
        if as_source is not None:
            as_source = check_name(as_source, "as_source")

        async def observe(text: str, source: str, key: str, metadata: dict[str, str], defer: bool) -> ObserveResult:
            return await self.observe(text, source, idempotency_key=key, metadata=metadata or None,
                                      defer_extraction=defer)

        return await import_text(observe, self.settings, content, format, text_field=text_field,
                                 source_field=source_field, default_source=default_source, as_source=as_source,
                                 defer_extraction=defer_extraction)

    async def complete_extraction(self, observation_id: str) -> ObserveResult:
        """Extract an observation whose extraction is pending (the inference worker calls this).

        Exactly once: the extraction is written with its done-marker in one statement, and
        statement ids derive from the observation id. Still ``pending`` when no model answers;
        a malformed model result is recorded as the extraction's error, so it is not retried forever.
        """
        check_id(observation_id, "observation_id")
        found = await self.graph.get_observations([observation_id])
        if not found:
            raise InvalidInput(f"observation_id: no observation {observation_id}")
        obs = found[0]
        if await self.graph.extraction_state(observation_id) != "pending":
            return ObserveResult(observation_id=observation_id, created=False,
                                 statements=await self._observed(observation_id, obs.source or "user"))
        return await self._extract(observation_id, obs.text, obs.source or "user", obs.created_at or None,
                                   created=False, final=True)

    async def _observed(self, obs_id: str, source: str) -> list[StatementView]:
        """What the observation itself says: its speaker's statements, not the claims a worker (or the
        extraction on the inference worker's behalf) derived from it, as the first answer gave them."""
        return [s for s in await self.graph.statements_from_observation(obs_id) if s.source == source]

    async def pending_extractions(self, limit: int = 100) -> list[ObservationView]:
        """Oldest observations waiting for their extraction, past the inline grace period."""
        before = _now_ms() - int(self.settings.extraction_grace * 1000)
        return await self.graph.pending_extractions(before, _limit(limit))

    async def predicate_profile(self, predicate: str, exclude: list[str]) -> PredicateProfile:
        """A predicate's remembered cardinality and how many subjects have one or several current values."""
        if not isinstance(exclude, list) or len(exclude) > MAX_LIMIT:
            raise InvalidInput(f"exclude: must be a list of at most {MAX_LIMIT} ids")
        decision = await self.graph.predicate_decision(predicate)
        subjects, multi = await self.graph.predicate_values(predicate, exclude)
        cardinality, decided_by = decision or (None, None)
        return PredicateProfile(predicate=predicate, cardinality=cardinality, decided_by=decided_by,
                                subjects=subjects, multi_subjects=multi)

    async def record_predicate(self, predicate: str, cardinality: str, decided_by: str) -> PredicateProfile:
        """Remember a predicate's cardinality (the first decision stands)."""
        stands, by = await self.graph.record_predicate_decision(predicate, cardinality, decided_by)
        return PredicateProfile(predicate=predicate, cardinality=stands, decided_by=by)

    async def _said_at(self, obs_id: str) -> int | None:
        found = await self.graph.get_observations([obs_id])
        return (found[0].created_at or None) if found else None

    async def _extract(
        self, obs_id: str, text: str, source: str, said_at: int | None, *, created: bool, final: bool = False,
        raw: ObservationRecord | None = None,
    ) -> ObserveResult:
        """One extraction attempt; ``final`` records a malformed result instead of leaving it pending.

        ``said_at``: when the observation was made (epoch ms), the day its relative dates are read from,
        however much later the extraction runs. ``raw``: the observation just written, to embed
        together with what is extracted from it.
        """
        raw_entries = [] if raw is None else [_raw_entry(raw)]
        try:
            infer = self._infer_with_extraction()
            extraction = await self._llm("observe", self.llm.extract_observation(text, source, said_at, infer))
        except LanguageModelUnavailable as exc:
            log.info("extraction deferred observation=%s error=%s", obs_id, str(exc)[:200])
            await self.indexer.submit(raw_entries)
            return ObserveResult(observation_id=obs_id, created=created, pending=True,
                                 extraction_error=f"no language model answered: {exc}"[:500])
        except LanguageModelError as exc:
            await self.indexer.submit(raw_entries)
            if not final:
                return ObserveResult(observation_id=obs_id, created=created, pending=True,
                                     extraction_error=f"the language model failed: {exc}"[:500])
            await self.graph.write_extraction(obs_id, (), (), error=str(exc)[:1000] or type(exc).__name__)
            return ObserveResult(observation_id=obs_id, created=created,
                                 extraction_error=f"the language model failed: {exc}"[:500])
        if infer:
            # Before the extraction's done-marker: until it is written the inference worker skips the
            # observation (extraction pending), after it the claims are there, so the worker never
            # infers it a second time in between.
            await self._write_inferred(obs_id, extraction.inferred, tuple(extraction.concepts))
        statements = tuple(
            _statement(derived_id("st", obs_id, str(i)), t) for i, t in enumerate(extraction.statements)
        )
        written = await self.graph.write_extraction(
            obs_id, tuple(extraction.concepts), statements, tuple(extraction.topics)
        )
        literal = {st.id for st in statements}  # not the inferred claims written with them
        stored = [st for st in await self.graph.statements_from_observation(obs_id) if st.id in literal]
        await self._index_extraction(raw_entries, stored if written.created else [],
                                     written.concept_ids if written.created else [])
        return ObserveResult(
            observation_id=obs_id, created=created, statements=stored,
            concepts=[c.name for c in extraction.concepts],
        )

    def _infer_with_extraction(self) -> bool:
        """Whether this extraction infers the claims too (one call instead of the worker's second)."""
        mode = self.settings.infer_with_extraction
        return mode == "on" or (mode == "auto" and self.inference_runs())

    async def _write_inferred(self, obs_id: str, inferred: list[Triple], concepts: tuple[ConceptSpec, ...]) -> None:
        """The claims the extraction inferred, written as the inference worker's with its done-marker (the
        ids ``record_inference`` would give them, so a worker racing on the same observation is absorbed).
        ``concepts``: the extraction's, so the claims name the concepts it does although they are written
        first (a claim on "mornings" written alone made a concept the extraction's "morning" then took).
        A failure leaves the observation to the worker, which then asks the model itself."""
        worker = _worker(INFERENCE_SOURCE)
        statements = tuple(
            _statement(derived_id("st", worker.name, obs_id, str(i)), t) for i, t in enumerate(inferred)
        )
        try:
            result = await self.graph.write_inference(obs_id, statements, worker, concepts)
            if result.created and statements:
                await self._index_statements(await self.graph.get_statements(result.statement_ids))
        except (Unavailable, Timeout) as exc:  # the store away: the worker does it when it is back
            log.warning("inferred claims not written (the inference worker will infer them) observation=%s error=%s",
                        obs_id, str(exc)[:200])

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None,
    ) -> ClaimResult:
        """Assert a statement; its basis is found by search among items sharing a concept with it.

        Supersession said in words (", superseding ...", "instead of ...", "no longer ...")
        writes ``SUPERSEDES`` over the matching current statement; "A contradicts B" links two
        existing statements.
        """
        text = self._check_input(text, "text")
        source_spec = _source(source, "agent")
        if basis:
            await self._refuse_withdrawn(basis)
        statement_id = derived_id("st", *self._id_scope, idempotency_key) if idempotency_key else new_id("st")
        said = split_supersession(text)
        claim_text = text
        if said is not None and (said.kind != "no_longer" or parse_canonical_claim(said.claim, source_spec.name)):
            claim_text = said.claim  # "no longer" in free text is left to the model (negation)
        parsed = await self._llm("claim", self.llm.parse_claim(claim_text, source_spec.name))
        triple = parsed.triple
        if triple.predicate == "contradicts":
            return await self._claim_contradiction(triple, text, source_spec)
        replaced = await self._superseded_by(triple, said, statement_id) if said is not None else []
        concepts = {normalise_name(triple.subject), normalise_name(triple.object)}
        concepts |= {normalise_name(n) for c in parsed.concepts for n in (c.name, *c.aliases)}
        derived_from = list(basis or []) or await self._find_basis(_sentence(triple), concepts)
        record = ClaimRecord(
            statement=_statement(statement_id, triple), source=source_spec, text=text,
            concepts=tuple(parsed.concepts), derived_from=tuple(dict.fromkeys(derived_from)),
            supersedes=tuple(StatementLink(target_id=r.id, reason=f"{source_spec.name}: {text}"[:1000])
                             for r in replaced),
        )
        result = await self.graph.write_claim(record)
        found = await self.graph.get_statements([statement_id])
        view = found[0] if found else None
        if view is not None:
            await self._index_statements([view])
        return ClaimResult(
            statement_id=statement_id, created=result.created, statement=view, derived_from=list(record.derived_from),
            supersedes=[r.id for r in replaced],
        )

    async def _superseded_by(self, triple: Triple, said: Supersession, own_id: str) -> list[StatementView]:
        """The current statements a claim says it replaces; ``ValueError`` when none matches."""
        current = [
            s for s in await self.graph.statements_about(triple.subject, limit=MAX_LIMIT)
            if s.id != own_id and s.summary is None and s.predicate == triple.predicate
            and normalise_name(s.subject) == normalise_name(triple.subject)
        ]
        same_object = [s for s in current if normalise_name(s.object) == normalise_name(triple.object)]
        if said.kind == "no_longer":
            matches = [s for s in same_object if s.negated != triple.negated]
        else:
            others = [s for s in current if s not in same_object]
            wanted = _content_words(said.target or "")
            scored = [(len(wanted & _content_words(s.sentence())), s) for s in others]
            best = max((n for n, _ in scored), default=0)
            matches = [s for n, s in scored if n == best] if wanted else others
            if wanted and best == 0:
                matches = []
        if not matches:
            what = said.target or _sentence(triple.model_copy(update={"negated": not triple.negated}))
            raise InvalidInput(
                f"text: nothing current about {triple.subject} {triple.predicate.replace('_', ' ')} "
                f"matches {what!r} to supersede"
            )
        return matches

    async def _claim_contradiction(self, triple: Triple, text: str, source: SourceSpec) -> ClaimResult:
        """"A contradicts B" links the two statements it names with ``CONTRADICTS``.

        Each side is looked up among all statements, superseded ones included: first by its
        triple, then by search.
        """
        a = await self._find_statement(triple.subject, source.name)
        b = await self._find_statement(triple.object, source.name)
        for side, found in ((triple.subject, a), (triple.object, b)):
            if found is None:
                raise InvalidInput(f"text: no statement in memory matches {side!r} (superseded ones included)")
        assert a is not None and b is not None
        if a.id == b.id:
            if normalise_name(triple.subject) == normalise_name(triple.object):
                raise InvalidInput(f"text: both sides are the same statement ({a.sentence()!r}, {a.id})")
            raise InvalidInput(
                f"text: {triple.subject!r} and {triple.object!r} both match only {a.sentence()!r} ({a.id}); "
                "write each side as its statement reads, e.g. 'user prefers morning meetings'"
            )
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

        False when the link exists (either way for CONTRADICTS).
        """
        if isinstance(reason, str):
            check_no_secrets(reason, "reason")  # type and length are the graph's to check
        return await self.graph.link_statements(kind, from_id, to_id, reason, _worker(source))

    async def pending_consolidation(self, source: str, min_new: int, limit: int = 10) -> list[ConsolidationWork]:
        """Concepts due a summary by ``source`` (``GraphStore.consolidation_candidates``), each with what a
        summary may state: its current statements (at most ``llm_max_summary_statements``, oldest first;
        superseded ones and the earlier side of a one-source contradiction left out) and its open
        conflicts between sources."""
        worker = _worker(source)
        out = []
        for concept_id, name in await self.graph.consolidation_candidates(worker, min_new, _limit(limit)):
            current = await self.graph.current_statements_of(concept_id, self.settings.llm_max_summary_statements)
            facts, conflicts = settle(current, self.vocabulary, self.settings)
            out.append(ConsolidationWork(concept_id=concept_id, concept=name, statements=facts, conflicts=conflicts))
        return out

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        """Store a summary about a concept, DERIVED_FROM its basis, superseding the source's current summary
        of the concept, and embed it as kind ``summary``.

        Its id derives from (source, concept, basis, text), so a retry is absorbed, and a summary of the
        same statements that now reads differently (a conflict opened) is a new one.
        """
        worker = _worker(source)
        text = check_text(text, "text", self.settings.llm_summary_max_chars)
        check_no_secrets(text, "text")
        if not isinstance(derived_from, list) or not derived_from or len(derived_from) > MAX_LIMIT:
            raise InvalidInput(f"derived_from: must list 1 to {MAX_LIMIT} statement ids")
        concept_id = check_id(concept_id, "concept_id")
        statement_id = derived_id("st", worker.name, concept_id, *sorted(set(derived_from)), text)
        result = await self.graph.write_summary(statement_id, concept_id, text, derived_from, worker)
        if result.created:
            entry = IndexEntry(statement_id, "summary", text, _now_ms(), {"source": worker.name})
            await self.indexer.submit([entry])
        return result

    async def retract(self, id: str, reason: str, source: str = "user") -> RetractResult:
        """Take a statement or an observation back: append a retraction by ``source``, delete nothing.

        A retracted item is never current, never an answer, never a basis, never a side of an open
        contradiction, and statements derived only from it are flagged and left out the same way.
        One retraction per item: retrying (or retracting again, whoever asks) returns the standing one.
        """
        target_id = check_id(id, "id")
        reason = check_text(reason, "reason", self.settings.retract_reason_max_chars)
        check_no_secrets(reason, "reason")
        by = _source(source, "user")
        node = await self.graph.get_node(target_id)
        if node is None and _SHORT_ID.match(target_id):  # as answers and the CLI print ids
            found = await self.graph.ids_with_prefix(target_id, 2)
            if len(found) > 1:
                raise InvalidInput(f"id: {target_id} is ambiguous ({', '.join(found)}); give the full id")
            if found:
                target_id = found[0]
                node = await self.graph.get_node(target_id)
        if node is None:
            raise UnknownReference("id", [target_id])
        label = str(node.get("label", "")).lower()
        if label not in ("statement", "observation"):
            raise InvalidInput(f"id: only a statement or an observation can be retracted, not a {label}")
        kind: Literal["statement", "observation"] = "statement" if label == "statement" else "observation"
        created = await self.graph.retract(derived_id("rtr", target_id), target_id, kind, reason, by.name)
        [standing] = await self.graph.retractions_of([target_id])
        derived = await self.graph.statements_derived_from(target_id, kind)
        return RetractResult(
            retraction_id=standing.id, target_id=target_id, kind=kind, created=created, reason=standing.reason,
            source=standing.source, created_at=standing.created_at,
            flagged=[s.id for s in derived if s.derived_from_retracted],
        )

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local"
    ) -> ForgetReport:
        """Admin only: erase an observation, or all a source wrote, and everything derived only from it.

        Erased: the observations (and, for a source, the statements it asserted and its Source nodes),
        the statements derived only from erased items (and summaries resting on any of them: their text
        restates it), concepts nothing else uses, retractions of erased items, their vector rows, and the
        embedding context of other rows that quoted an erased text (their vectors made again without it).
        Then the graph's append-only file and the vector tables (and WAL) are compacted so the bytes are
        gone. A tombstone records what kind of request it was, how many of each, when and by whom, never
        the content. Erasing what is already gone removes nothing and writes no tombstone.
        """
        if (observation_id is None) == (source is None):
            raise InvalidInput("forget: give exactly one of observation_id or source")
        async with self.erasing:
            return await self._forget(observation_id, source, by)

    async def _forget(self, observation_id: str | None, source: str | None, by: str) -> ForgetReport:
        # Queued rows first: one indexed after the erase would bring back what was forgotten.
        await self.indexer.drained()
        self.indexer.forget_recent()
        who = check_name(by, "by")
        kind: Literal["observation", "source"] = "observation" if observation_id is not None else "source"
        sources: list[str] = []
        if observation_id is not None:
            found = await self.graph.get_observations([check_id(observation_id, "observation_id")])
            observations = [o.id for o in found]
            statements: list[str] = []
        else:
            sources, observations, statements = await self.graph.source_items(check_name(source, "source"))
        erased = set(observations) | set(statements)
        erased |= await self._derived_only_from(erased)
        orphans = _orphans(await self.graph.concept_users(sorted(erased)), erased) if erased else set()
        total = len(erased) + len(orphans)
        if total > self.settings.forget_max_items:
            raise InvalidInput(f"forget: {total} items exceed forget_max_items ({self.settings.forget_max_items}); "
                               "erase observation by observation, or raise the setting")
        report = ForgetReport(kind=kind, space=self.space, at=_now_ms(), by=who)
        if not erased:
            return report
        retractions = [r.id for r in await self.graph.all_retractions_of(sorted(erased))]
        n = self.settings.forget_context_fragment_chars
        texts = [o.text.strip() for o in await self.graph.all_observations(sorted(set(observations) & erased))]
        fragments = sorted({piece for t in texts for piece in (t[:n], t[-n:]) if piece})
        erasure = await vector_erase.erase(self.vectors, sorted(erased | orphans), fragments)
        await self._revector_alone(erasure.stale)
        observation_ids = sorted(observations)
        statement_ids = sorted(erased - set(observations))
        tombstone = TombstoneView(
            id=derived_id("tomb", kind, *sorted(erased)), kind=kind, space=self.space,
            observations=len(observation_ids),
            statements=len(statement_ids), concepts=len(orphans), retractions=len(retractions),
            sources=len(sources), vectors=erasure.deleted, at=report.at, by=who,
        )
        await self.graph.forget(tombstone, {
            "observations": observation_ids, "statements": statement_ids, "concepts": sorted(orphans),
            "retractions": retractions, "sources": sources,
        })
        graph_compacted = await self.graph.compact()
        vectors_compacted = await vector_erase.compact(self.vectors)
        log.warning("forget kind=%s observations=%d statements=%d concepts=%d by=%s", kind, tombstone.observations,
                    tombstone.statements, tombstone.concepts, who)
        return report.model_copy(update={
            **tombstone.model_dump(exclude={"id", "kind", "space", "at", "by"}), "tombstone_id": tombstone.id,
            "contexts_scrubbed": erasure.scrubbed, "graph_compacted": graph_compacted,
            "vectors_compacted": vectors_compacted,
        })

    async def _revector_alone(self, rows: list[tuple[str, str]]) -> None:
        """Make the vectors of rows whose context was an erased text again from their own text alone: the
        old ones were composed with the erased text's vector (compaction then drops their bytes)."""
        for start in range(0, len(rows), self.settings.vector_batch_size):
            batch = rows[start:start + self.settings.vector_batch_size]
            vectors = await self.embedder.embed([text for _, text in batch], "passage")
            await vector_erase.replace_vectors(
                self.vectors, [(row_id, own) for (row_id, _), own in zip(batch, vectors, strict=True)])

    async def tombstones(self, limit: int = 50) -> list[TombstoneView]:
        """Admin only: the tombstones of erasures, newest first."""
        return await self.graph.tombstones(_limit(limit))

    async def _derived_only_from(self, erased: set[str]) -> set[str]:
        """Statements derived only from erased items (following chains), and summaries resting on any."""
        found: set[str] = set()
        frontier = set(erased)
        for _ in range(self.settings.forget_derived_depth):
            if not frontier:
                break
            fresh = {sid for sid, bases, summary in await self.graph.derived_with_bases(sorted(frontier))
                     if sid not in erased | found and (summary or bases <= erased | found | frontier)}
            found |= fresh
            frontier = fresh
        return found

    # -- reads ---------------------------------------------------------------

    async def recall(self, query: str) -> Recall:
        """The structured memory behind ``remember``: current statements, what they replaced, open conflicts."""
        # Scanned: remember sends the query to the language model, which may be a remote service.
        query = self._check_input(query, "query")
        k = self.settings.search_k
        hits = await self.retriever.search(query, k=k)
        shared = [(name, memory, await memory.retriever.search(query, k=k)) for name, memory in await self._shared()]
        if shared:  # the best k over this space and the ones shared into it
            best = {h.id for h in _best([*hits, *(h for _, _, found in shared for h in found)], k)}
            hits = [h for h in hits if h.id in best]
            shared = [(name, memory, [h for h in found if h.id in best]) for name, memory, found in shared]
        self.usage.note(h.id for h in hits)
        recall = await build_recall(self.graph, query, hits, opened_hits=self.settings.recall_opened_hits,
                                    contradiction_scan=self.settings.recall_contradiction_scan)
        for name, memory, found in shared:
            if found:
                memory.usage.note(h.id for h in found)
                other = await build_recall(memory.graph, query, found, opened_hits=self.settings.recall_opened_hits,
                                           contradiction_scan=self.settings.recall_contradiction_scan)
                recall = _with_shared(recall, other, name)
        return recall

    async def _shared(self) -> list[tuple[str, MemoryService]]:
        return await self.shared_spaces() if self.shared_spaces is not None else []

    async def remember(self, query: str, source: str | None = None) -> Answer:
        """Answer a question from memory: the current answer first, then evidence, changes and conflicts.

        ``source`` is the asker: first person in the question is that source, and the answer says
        "you" where the asker is the subject. Without one, names stay as stored.

        The composition is deterministic (``truth.answer``); the language model only phrases the
        lead sentence. When no model answers (no llm peer, provider down) the rule-made lead stands
        and the answer says it is degraded: ``remember`` works whenever ``recall`` does.
        """
        recall = await self.recall(query)
        origins = contradicted_origins(recall)[:MAX_LOAD_IDS]
        speakers = speakers_of(recall, await self.graph.get_observations(origins) if origins else [])
        asker = check_name(source, "source") if source is not None else None
        composition = compose(recall, self.settings.answer_evidence_max, self.vocabulary, self.settings, speakers,
                              asker)
        lead, degraded = None, False
        if composition.lead_id is not None:
            try:
                written = await self._llm("remember", self.llm.answer(recall.query, composition.memory()))
            except Exception:  # any failure of the model degrades the answer; CancelledError still propagates
                log.warning("remember: the language model did not answer; composing by rule", exc_info=True)
                degraded = True
            else:
                lead = accept_phrasing(composition, written.text, self.settings.answer_lead_max_chars)
        return Answer(
            query=recall.query, text=composition.text(lead, degraded=degraded), cited=composition.cited,
            recall=recall, provider="rule-based composer (degraded)" if degraded else self.llm.name,
            confidence=composition.confidence, degraded=degraded,
        )

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        text = self._check_input(observation_text, "observation_text")
        speaker = _source(source, "user").name
        triples = await self._llm("infer", self.llm.infer_claims(text, speaker))
        return [InferredClaim(text=_sentence(t), confidence=t.confidence) for t in triples]

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        query = self._check_input(query, "query", secrets=False)
        hits = await self._search_here(query, k, kinds, since, mode)
        for name, memory in await self._shared():  # read-only, and not on to what that space reads
            hits += [h.model_copy(update={"space": name})
                     for h in await memory._search_here(query, k, kinds, since, mode)]
        return _best(hits, k)

    async def _search_here(self, query: str, k: int, kinds: list[str] | None, since: int | None,
                           mode: SearchMode) -> list[SearchHit]:
        hits = await self.retriever.search(query, k, kinds, since, mode)
        used = await vector_usage.uses_of(self.vectors, [h.id for h in hits])
        self.usage.note(h.id for h in hits)  # counted in memory; written in a batch later, off this path
        return [h.model_copy(update={"uses": used[h.id][0], "last_used_at": used[h.id][1]}) if h.id in used else h
                for h in hits]

    async def load(self, ids: list[str]) -> list[dict[str, Any]]:
        """Full items with provenance, for ids from ``search``."""
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidInput("ids: must be a list of strings")
        if len(ids) > MAX_LOAD_IDS:
            raise InvalidInput(f"ids: at most {MAX_LOAD_IDS} ids per call")
        ids = [await self._full_id(item_id) for item_id in ids]
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

    async def _full_id(self, item_id: str) -> str:
        """``item_id``, or the one full id a short id such as ``obs-1a2b3c4d`` starts (the CLI shows those).

        An ambiguous short id is refused with its candidates rather than loading one of them at random.
        """
        prefix, dash, rest = item_id.partition("-")
        if not (dash and prefix and self.settings.short_id_min_chars <= len(rest) < _FULL_ID_HEX):
            return item_id
        if await self.graph.get_node(item_id) is not None:
            return item_id  # an id that merely looks short (a concept's, a caller-made one)
        shown = self.settings.short_id_candidates
        found = await self.graph.ids_with_prefix(item_id, shown + 1)
        if len(found) > 1:
            raise InvalidInput(f"ids: {item_id!r} is ambiguous, it starts {', '.join(found[:shown])}"
                               f"{' and more' if len(found) > shown else ''}; give more of the id")
        return found[0] if found else item_id

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
        backlog = await self._backlog()
        return {
            "graph": await self.graph.counts(),
            "extractions_pending": backlog["extraction"],
            "backlog": backlog,
            "vectors": await self.vectors.count(),
            "vector_index_failures": self.indexer.failures,
            "llm_provider": self.llm.name,
            "llm_calls": dict(self.llm_calls),
            # Whether an observe now infers the claims in its extraction call (infer_with_extraction).
            "extraction_infers": self._infer_with_extraction(),
            "llm_usage": self.llm.usage(),
            "embedder": self.embedder.model,
        }

    async def _backlog(self) -> dict[str, int]:
        """Work not done yet in this space: this node's statements and concepts waiting for their vectors, and
        (counted up to ``MAX_LIMIT`` each) observations waiting for extraction or inference, statements for
        validation, concepts due a summary. All zero
        means the memory has settled (the CLI's ``/settle`` waits for it); a worker writes its results and
        its done-marker together, so no item leaves one count before it shows in the next."""
        settings = self.settings
        return {
            "vectors": self.indexer.backlog,  # written and not indexed yet (index_in_background)
            "extraction": await self.graph.count_pending_extractions(),
            "inference": len(await self.graph.pending_observations(_worker(INFERENCE_SOURCE), MAX_LIMIT)),
            "validation": len(await self.graph.pending_statements(_worker(VALIDATION_SOURCE), MAX_LIMIT)),
            "consolidation": len(await self.graph.consolidation_candidates(
                _worker(CONSOLIDATION_SOURCE), settings.consolidation_min_new_statements, MAX_LIMIT)),
        }

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Admin only: record a client token as revoked (nodes read the list back); False if it was already."""
        return await self.graph.revoke_token(token_id, by)

    async def revoked_tokens(self) -> list[str]:
        """Ids of revoked client tokens, newest first (at most ``token_revocations_max``)."""
        return await self.graph.revoked_tokens(self.settings.token_revocations_max)

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str) -> None:
        """Append an audit record of a client's write or admin call (the node that served it writes it)."""
        limit = self.settings.audit_detail_max_chars
        if not isinstance(detail, str) or len(detail) > limit:
            raise InvalidInput(f"detail: must be a string of at most {limit} characters")
        record = {
            "id": new_id("audit"), "at": _now_ms(), "who": check_name(who, "who"), "method": check_id(method, "method"),
            "node": check_id(node, "node"), "outcome": check_id(outcome, "outcome"), "detail": detail,
        }
        await self.graph.record_audit(record)

    async def audit_log(self, limit: int = 50) -> list[AuditView]:
        """Admin only: audit records, newest first."""
        return await self.graph.audit_log(_limit(limit))

    async def clear(self) -> None:
        """Admin only: erase the graph (but token revocations and the audit log) and the vector index."""
        async with self.erasing:
            await self.indexer.drained()  # a row indexed after the erase would outlive its item
            self.indexer.forget_recent()
            await self.graph.clear()
            await self.vectors.clear()

    async def sync_vectors(self, limit: int = MAX_LIMIT) -> int:
        """Index recent graph items that have no row (after a failed index write or a restart)."""
        async with self.erasing:
            observations = await self.graph.recent_observations(_limit(limit))
            statements = await self.graph.recent_statements(_limit(limit))
            derived = self.settings.index_derived_vectors
            entries = [_observation_entry(o) for o in observations]
            entries += [_statement_entry(s, derived) for s in statements]
            return await self.indexer.index(entries)

    # -- helpers -------------------------------------------------------------

    async def _check_retry(self, obs_id: str, text: str, source: str) -> None:
        """A stored observation under this id must hold the same text from the same source (a true retry)."""
        stored = await self.graph.get_observations([obs_id])
        if stored and (stored[0].text != text or stored[0].source != source):
            raise IdempotencyConflict("idempotency_key", obs_id)

    def _check_input(self, value: object, field: str, *, secrets: bool = True) -> str:
        text = check_text(value, field, self.settings.max_text_chars)
        if secrets:
            check_no_secrets(text, field)
        return text

    async def _llm(self, purpose: str, call: Any) -> Any:
        self.llm_calls[purpose] += 1
        return await call

    async def _find_statement(self, sentence: str, speaker: str) -> StatementView | None:
        """The statement a sentence names: an exact triple match (superseded ones included), else the top search hit."""
        triple = parse_canonical_claim(sentence, speaker)
        if triple is not None:
            about = await self.graph.statements_about(triple.subject, limit=MAX_LIMIT, include_superseded=True)
            exact = [
                s for s in about
                if normalise_name(s.subject) == normalise_name(triple.subject) and s.predicate == triple.predicate
                and normalise_name(s.object) == normalise_name(triple.object) and s.negated == triple.negated
            ]
            if exact:
                return max(exact, key=lambda s: (s.created_at, s.id))  # the latest wording of it
        hits = await self.retriever.search(sentence, k=1, kinds=["statement"], mode="hybrid")
        if not hits:
            return None
        found = await self.graph.get_statements([hits[0].id])
        return found[0] if found else None

    async def _refuse_withdrawn(self, basis: object) -> None:
        """A retracted item (or a statement standing only on retracted ones) is never a basis: ``InvalidInput``."""
        if not isinstance(basis, list) or len(basis) > MAX_LOAD_IDS:
            raise InvalidInput(f"basis: must be a list of at most {MAX_LOAD_IDS} ids")
        ids = [check_id(b, "basis") for b in basis]
        withdrawn = {r.target_id for r in await self.graph.retractions_of(ids)}
        withdrawn |= {s.id for s in await self.graph.get_statements(ids) if s.withdrawn}
        if withdrawn:
            raise InvalidInput(f"basis: retracted, so never a basis: {', '.join(sorted(withdrawn))}")

    async def _find_basis(self, sentence: str, concepts: set[str]) -> list[str]:
        """Top search hits that share a concept with the claim; none is a valid answer."""
        hits = await self.retriever.search(sentence, k=3, kinds=["observation", "statement"], mode="hybrid")
        hits = [h for h in hits if h.score >= BASIS_MIN_SCORE]
        if not hits:
            return []
        keys = await self.graph.concept_keys_of([h.id for h in hits])
        return [h.id for h in hits if keys.get(h.id, set()) & concepts]

    async def _index_extraction(
        self, entries: list[IndexEntry], statements: list[StatementView], concept_ids: list[str]
    ) -> None:
        """The observation's own row, with the rows of the statements and new concepts it yields."""
        derived = self.settings.index_derived_vectors
        yielded = [_statement_entry(s, derived) for s in statements]
        yielded += [
            IndexEntry(c.id, "concept", c.name, c.created_at, vector=derived)
            for c in await self.graph.get_concepts(concept_ids)
        ]
        await self.indexer.submit(entries + yielded)

    async def _index_statements(self, statements: list[StatementView]) -> None:
        await self.indexer.submit([_statement_entry(s, self.settings.index_derived_vectors) for s in statements])


def _orphans(users: dict[str, set[str]], erased: set[str]) -> set[str]:
    """Concepts every user of which is erased, or is itself such a concept (a part of an erased phrase)."""
    orphans: set[str] = set()
    while True:
        more = {c for c, used_by in users.items() if c not in orphans and used_by <= erased | orphans}
        if not more:
            return orphans
        orphans |= more


def _statement(statement_id: str, t: Triple) -> StatementSpec:
    return StatementSpec(
        id=statement_id, subject=t.subject, predicate=t.predicate, object=t.object,
        confidence=t.confidence, negated=t.negated, tense=t.tense, valid_at=t.valid_at, revision=t.revision,
    )


def _sentence(t: Triple) -> str:
    return f"{t.subject} {'not ' if t.negated else ''}{t.predicate.replace('_', ' ')} {t.object}"


def _statement_entry(s: StatementView, derived_vectors: bool) -> IndexEntry:
    """``derived_vectors`` False: a statement standing on an observation says what the observation's text
    says, so it is found through that observation's vector and by its own words, without a vector."""
    on_observation = any(is_observation_id(d) for d in s.derived_from)
    return IndexEntry(s.id, "statement", s.sentence(), s.created_at, {"source": s.source or ""},
                      vector=derived_vectors or not on_observation)


def _raw_entry(record: ObservationRecord) -> IndexEntry:
    """The index entry of an observation just written (its text, before any extraction)."""
    return _observation_entry(ObservationView(
        id=record.id, text=record.text, created_at=record.created_at or _now_ms(), source=record.source.name,
        metadata=record.metadata))


def _observation_entry(o: ObservationView) -> IndexEntry:
    # Indexed as "<source>: <text>": who said it matters to questions (measured in bench/README.md,
    # the speaker prefix doubles dense recall@10 on LoCoMo).
    text = f"{o.source}: {o.text}" if o.source else o.text
    return IndexEntry(o.id, "observation", text, o.created_at, {"source": o.source or "", **o.metadata})


_NOT_CONTENT = frozenset({"the", "a", "an", "claim", "statement", "fact", "one", "old", "earlier", "previous",
                          "that", "this", "about", "of", "my", "his", "her", "their"})


def _content_words(text: str) -> set[str]:
    # Crude singular so "mornings" meets "morning meetings".
    words = {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in normalise_name(text).split()}
    return words - _NOT_CONTENT


def _worker(source: str) -> SourceSpec:
    return _source(source, "agent")


def _source(name: str, kind: Literal["user", "agent", "system"]) -> SourceSpec:
    """A source by name; names are stored and shown to every reader, so they are scanned for secrets too."""
    checked = check_name(name, "source")
    check_no_secrets(checked, "source")
    return SourceSpec(name=checked, kind=kind)


def _checked_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """Metadata is stored and indexed beside the text: its keys and values are scanned like it."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata: must be an object of strings")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInput("metadata: keys and values must be strings")
        check_no_secrets(key, "metadata")
        check_no_secrets(value, f"metadata[{key[:40]!r}]")
    return metadata


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit: must be an integer between 1 and {MAX_LIMIT}")
    return limit


def _now_ms() -> int:
    return int(time.time() * 1000)


def _best(hits: list[SearchHit], k: int) -> list[SearchHit]:
    """The ``k`` best-scored hits of several spaces' searches (each space's scores rank alike: fused ranks)."""
    return sorted(hits, key=lambda h: -h.score)[:k]


def _with_shared(recall: Recall, other: Recall, space: str) -> Recall:
    """``recall`` with what a space shared into it recalled, each statement marked with that space."""
    def mark(statements: list[StatementView]) -> list[StatementView]:
        return [s.model_copy(update={"space": space}) for s in statements]

    return recall.model_copy(update={
        "statements": [*recall.statements, *mark(other.statements)],
        "superseded": [*recall.superseded, *mark(other.superseded)],
        "contradictions": [*recall.contradictions, *(
            c.model_copy(update={"a": mark([c.a])[0], "b": mark([c.b])[0]}) for c in other.contradictions)],
        "observations": [*recall.observations, *other.observations],
        "retractions": [*recall.retractions, *other.retractions],
        "withdrawn": [*recall.withdrawn, *mark(other.withdrawn)],
    })

