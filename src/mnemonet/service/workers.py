"""Workers: the calls the inference, validation and consolidation agents make (``WorkerMemory``).

Each worker reads its backlog (``pending_*``: what its source has not done,
read back from the graph, so a restarted worker resumes) and writes its result
with its done-marker in one statement, under ids derived from its source and
the item, so a retry or two workers racing at a membership change land on the
same nodes. Predicate decisions (cardinality) are remembered here for the
validation worker.
"""

from __future__ import annotations

from mnemonet.llm.claims import parse_canonical_claim
from mnemonet.model.api import ConsolidationWork, InferredClaim, LinkKind, PredicateProfile
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import derived_id
from mnemonet.model.records import check_id, check_text
from mnemonet.model.secrets import check_no_secrets
from mnemonet.model.views import ObservationView, StatementView, WriteResult
from mnemonet.service.common import (
    MAX_LIMIT,
    check_limit,
    now_ms,
    sentence_of,
    source_spec,
    statement_spec,
    worker_spec,
)
from mnemonet.service.context import ServiceContext
from mnemonet.service.derivations import Derivations
from mnemonet.service.indexing import IndexEntry
from mnemonet.service.relations import Relations
from mnemonet.truth.currency import settle


class Workers:
    """Serves the worker agents (``MemoryService.infer``, ``record_inference``, ``pending_*``, ``mark_processed``,
    ``link_statements``, ``predicate_profile``, ``record_predicate``, ``record_summary``)."""

    def __init__(self, ctx: ServiceContext, derivations: Derivations) -> None:
        self._ctx = ctx
        self._derivations = derivations
        self._relations = Relations(ctx)

    # -- inference ---------------------------------------------------------------

    async def pending_extractions(self, limit: int = 100) -> list[ObservationView]:
        """Oldest observations waiting for their extraction, past the inline grace period."""
        before = now_ms() - int(self._ctx.settings.extraction_grace * 1000)
        return await self._ctx.graph.pending_extractions(before, check_limit(limit))

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        """Oldest observations the worker ``source`` has not processed yet."""
        return await self._ctx.graph.pending_observations(worker_spec(source), check_limit(limit))

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        """Claims the language model infers from a text (nothing is stored)."""
        ctx = self._ctx
        text = ctx.check_input(observation_text, "observation_text")
        speaker = source_spec(source, "user").name
        triples = await ctx.ask("infer", ctx.llm.infer_claims(text, speaker))
        return [InferredClaim(text=sentence_of(t), confidence=t.confidence) for t in triples]

    async def record_inference(self, observation_id: str, claims: list[InferredClaim], source: str) -> WriteResult:
        """Store a worker's claims about an observation and mark it done, atomically.

        Statement ids derive from (source, observation id, index), so the same
        result written twice (a retry, or two workers racing at a membership
        change) lands on the same ids and the second write is absorbed.
        Canonical claim sentences are read by rule; others cost one parse call each.
        """
        ctx = self._ctx
        check_id(observation_id, "observation_id")
        worker = worker_spec(source)
        if not isinstance(claims, list) or len(claims) > ctx.settings.max_statements_per_write:
            raise InvalidInput(f"claims: must be a list of at most {ctx.settings.max_statements_per_write} claims")
        statements = []
        for i, c in enumerate(claims):
            if not isinstance(c, InferredClaim):
                raise InvalidInput(f"claims[{i}]: must be an InferredClaim")
            text = ctx.check_input(c.text, f"claims[{i}].text")
            triple = parse_canonical_claim(text)
            if triple is None:
                triple = (await ctx.ask("record_inference", ctx.llm.parse_claim(text, worker.name))).triple
            triple = triple.model_copy(update={"confidence": c.confidence})
            statements.append(statement_spec(derived_id("st", worker.name, observation_id, str(i)), triple))
        result = await ctx.graph.write_inference(observation_id, tuple(statements), worker)
        if result.created and statements:
            await ctx.index_statements(await ctx.graph.get_statements(result.statement_ids))
        if statements:  # written after their base was taken back or replaced (a worker behind an import)
            await self._derivations.inferred(result.statement_ids)
        return result

    # -- validation ----------------------------------------------------------------

    async def pending_statements(self, source: str, limit: int = 100) -> list[StatementView]:
        """Oldest statements the worker ``source`` has not marked processed yet."""
        return await self._ctx.graph.pending_statements(worker_spec(source), check_limit(limit))

    async def mark_processed(self, source: str, ids: list[str]) -> int:
        """Mark statements processed by the worker ``source``; repeating it is a no-op."""
        if not isinstance(ids, list) or len(ids) > MAX_LIMIT:
            raise InvalidInput(f"ids: must be a list of at most {MAX_LIMIT} ids")
        return await self._ctx.graph.mark_statements_processed(worker_spec(source), ids)

    async def link_statements(self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str) -> bool:
        """SUPERSEDES or CONTRADICTS between existing statements; a worker's claims resting on a superseded
        statement are superseded with it (``derivations``).

        False when the link exists (either way for CONTRADICTS).
        """
        if isinstance(reason, str):
            check_no_secrets(reason, "reason")  # type and length are the graph's to check
        created = await self._ctx.graph.link_statements(kind, from_id, to_id, reason, worker_spec(source))
        if kind == "SUPERSEDES":  # again on a retry: a cascade cut short by a failure is finished
            await self._derivations.superseded(from_id, to_id, source)
        return created

    async def predicate_profile(self, predicate: str, exclude: list[str]) -> PredicateProfile:
        """A predicate's remembered cardinality, how many subjects have one or several current values, and the
        vocabulary's relation it means (found by meaning and remembered the first time it is asked)."""
        graph = self._ctx.graph
        if not isinstance(exclude, list) or len(exclude) > MAX_LIMIT:
            raise InvalidInput(f"exclude: must be a list of at most {MAX_LIMIT} ids")
        decision = await graph.predicate_decision(predicate)
        subjects, multi = await graph.predicate_values(predicate, exclude)
        cardinality, decided_by = decision or (None, None)
        return PredicateProfile(predicate=predicate, cardinality=cardinality, decided_by=decided_by,
                                subjects=subjects, multi_subjects=multi,
                                relation=await self._relations.relation(predicate))

    async def record_predicate(self, predicate: str, cardinality: str, decided_by: str) -> PredicateProfile:
        """Remember a predicate's cardinality (the first decision stands)."""
        stands, by = await self._ctx.graph.record_predicate_decision(predicate, cardinality, decided_by)
        return PredicateProfile(predicate=predicate, cardinality=stands, decided_by=by)

    # -- consolidation ---------------------------------------------------------------

    async def pending_consolidation(self, source: str, min_new: int, limit: int = 10) -> list[ConsolidationWork]:
        """Concepts due a summary by ``source`` (``GraphStore.consolidation_candidates``), each with what a
        summary may state: its current statements (at most ``llm_max_summary_statements``, oldest first;
        superseded ones and the earlier side of a one-source contradiction left out) and its open
        conflicts between sources."""
        graph = self._ctx.graph
        worker = worker_spec(source)
        out = []
        for concept_id, name in await graph.consolidation_candidates(worker, min_new, check_limit(limit)):
            current = await graph.current_statements_of(concept_id, self._ctx.settings.llm_max_summary_statements)
            facts, conflicts = settle(current, self._ctx.vocabulary, self._ctx.settings)
            out.append(ConsolidationWork(concept_id=concept_id, concept=name, statements=facts, conflicts=conflicts))
        return out

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        """Store a summary about a concept, DERIVED_FROM its basis, superseding the source's current summary
        of the concept, and embed it as kind ``summary``.

        Its id derives from (source, concept, basis, text), so a retry is absorbed, and a summary of the
        same statements that now reads differently (a conflict opened) is a new one.
        """
        ctx = self._ctx
        worker = worker_spec(source)
        text = check_text(text, "text", ctx.settings.llm_summary_max_chars)
        check_no_secrets(text, "text")
        if not isinstance(derived_from, list) or not derived_from or len(derived_from) > MAX_LIMIT:
            raise InvalidInput(f"derived_from: must list 1 to {MAX_LIMIT} statement ids")
        concept_id = check_id(concept_id, "concept_id")
        statement_id = derived_id("st", worker.name, concept_id, *sorted(set(derived_from)), text)
        result = await ctx.graph.write_summary(statement_id, concept_id, text, derived_from, worker)
        if result.created:
            entry = IndexEntry(statement_id, "summary", text, now_ms(), {"source": worker.name})
            await ctx.indexer.submit([entry])
        return result
