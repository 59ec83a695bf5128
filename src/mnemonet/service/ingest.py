"""Ingest: observations in, extracted statements out.

``observe`` commits the observation first, then asks the language model for
its concepts and statements (and, with ``infer_with_extraction``, the claims
an inference worker would infer, in the same call); ``import_file`` observes
a file line by line; ``complete_extraction`` finishes an extraction left
pending. Every id derives from the caller's idempotency key (scoped by its
writer: another token's same key names another observation) or the
observation's id, so a retry lands on the same nodes; what is written is
handed to the vector indexer with the observation's own row. Each write
passes the write gate as the source it is written as, so an erasure of that
source finds it whole or not at all (``write_gate``).
"""

from __future__ import annotations

import logging
from typing import Literal

from mnemonet.llm.base import Triple
from mnemonet.llm.errors import LanguageModelError, LanguageModelUnavailable
from mnemonet.model.api import ImportReport, ObserveResult
from mnemonet.model.errors import InvalidInput, Timeout, Unavailable
from mnemonet.model.idempotency import IdempotencyConflict
from mnemonet.model.ids import OBSERVATION_PREFIX, derived_id, keyed_id, new_id
from mnemonet.model.records import (
    INFERENCE_SOURCE,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    check_id,
    check_name,
)
from mnemonet.model.views import ObservationView, StatementView
from mnemonet.service.common import (
    checked_metadata,
    now_ms,
    observation_entry,
    raw_entry,
    source_spec,
    statement_entry,
    statement_spec,
    worker_spec,
)
from mnemonet.service.context import ServiceContext
from mnemonet.service.importer import import_text
from mnemonet.service.indexing import IndexEntry

log = logging.getLogger(__name__)


class Ingest:
    """Writes observations and their extractions (``MemoryService.observe``, ``import_file``,
    ``complete_extraction``)."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, defer_extraction: bool = False, writer: str = "",
    ) -> ObserveResult:
        """Record raw text, then the concepts and statements the language model extracts from it.

        The observation is committed first, so it is kept and acknowledged even when no model
        answers; its extraction is then ``pending`` and done once by the inference worker when
        a model is back. A retry of a pending observation tries the extraction again.
        ``defer_extraction``: return once the observation is recorded, its extraction left
        pending for the inference worker (no model call inline; a bulk import's pace). ``writer``: whose
        ``idempotency_key`` it is, the client token's name (``model.ids.keyed_id``; over HTTP the node sets it).
        """
        ctx = self._ctx
        if not isinstance(defer_extraction, bool):
            raise InvalidInput("defer_extraction: must be true or false")
        text = ctx.check_input(text, "text")
        speaker = source_spec(source, "user")
        metadata = checked_metadata(metadata)
        obs_id = (keyed_id(OBSERVATION_PREFIX, idempotency_key, writer, ctx.space) if idempotency_key
                  else new_id(OBSERVATION_PREFIX))
        async with ctx.writing(speaker.name):
            return await self._observe(obs_id, text, speaker, metadata, defer_extraction)

    async def _observe(
        self, obs_id: str, text: str, speaker: SourceSpec, metadata: dict[str, str] | None, defer_extraction: bool,
    ) -> ObserveResult:
        ctx = self._ctx
        record = ObservationRecord(
            id=obs_id, text=text, source=speaker, metadata=metadata or {}, created_at=now_ms(),
            extraction_pending=True,
        )
        result = await ctx.graph.write_observation(record)
        if not result.created:
            # A retry, or a reused key with other content (409): the write of an existing id writes nothing.
            stored = await self._check_retry(obs_id, text, speaker.name)
            # The store node that took the first attempt may have died before its row was queued for the
            # index: what this retry acknowledges must be found (on any store node), so a missing row is
            # indexed now (rows it derived come back with the vector sync).
            if stored is not None and await ctx.vectors.ids_missing([obs_id]):
                await ctx.indexer.submit([observation_entry(stored)])
        state = "pending" if result.created else await ctx.graph.extraction_state(obs_id)
        if state == "pending" and defer_extraction:
            if result.created:  # searchable by its text at once; the extraction's entries come with it later
                await ctx.indexer.submit([raw_entry(record)])
            return ObserveResult(observation_id=obs_id, created=result.created, pending=True)
        if state == "pending":
            # A new observation is embedded with its extraction, in one index call. A retry is read
            # as of the first write's time (its relative dates are that day's).
            said_at = record.created_at if result.created else await self._said_at(obs_id)
            return await self._extract(obs_id, text, speaker.name, said_at, created=result.created,
                                       raw=record if result.created else None)
        return ObserveResult(
            observation_id=obs_id, created=result.created,
            statements=await self._observed(obs_id, speaker.name),
            extraction_error="the language model gave no usable result" if state == "failed" else None,
        )

    async def import_file(
        self, content: str, format: Literal["jsonl", "locomo", "chat"] = "jsonl", *, text_field: str = "text",
        source_field: str = "source", default_source: str = "import", as_source: str | None = None,
        defer_extraction: bool = False, writer: str = "",
    ) -> ImportReport:
        """Observe every line of a file's text under its import key; each line's outcome (``service/importer``)."""
        if not isinstance(defer_extraction, bool):
            raise InvalidInput("defer_extraction: must be true or false")
        if as_source is not None:
            as_source = check_name(as_source, "as_source")

        async def observe(text: str, source: str, key: str, metadata: dict[str, str], defer: bool) -> ObserveResult:
            return await self.observe(text, source, idempotency_key=key, metadata=metadata or None,
                                      defer_extraction=defer, writer=writer)

        return await import_text(observe, self._ctx.settings, content, format, text_field=text_field,
                                 source_field=source_field, default_source=default_source, as_source=as_source,
                                 defer_extraction=defer_extraction)

    async def complete_extraction(self, observation_id: str) -> ObserveResult:
        """Extract an observation whose extraction is pending (the inference worker calls this).

        Exactly once: the extraction is written with its done-marker in one statement, and
        statement ids derive from the observation id. Still ``pending`` when no model answers;
        a malformed model result is recorded as the extraction's error, so it is not retried forever.
        """
        graph = self._ctx.graph
        check_id(observation_id, "observation_id")
        found = await graph.get_observations([observation_id])
        if not found:
            raise InvalidInput(f"observation_id: no observation {observation_id}")
        obs = found[0]
        async with self._ctx.writing(obs.source or "user"):  # its statements are its source's
            if await graph.extraction_state(observation_id) != "pending":  # done, or erased since (None)
                return ObserveResult(observation_id=observation_id, created=False,
                                     statements=await self._observed(observation_id, obs.source or "user"))
            return await self._extract(observation_id, obs.text, obs.source or "user", obs.created_at or None,
                                       created=False, final=True)

    def infers_with_extraction(self) -> bool:
        """Whether an extraction now infers the claims too (one call instead of the worker's second)."""
        mode = self._ctx.settings.infer_with_extraction
        return mode == "on" or (mode == "auto" and self._ctx.inference_runs())

    async def _observed(self, obs_id: str, source: str) -> list[StatementView]:
        """What the observation itself says: its speaker's statements, not the claims a worker (or the
        extraction on the inference worker's behalf) derived from it, as the first answer gave them."""
        return [s for s in await self._ctx.graph.statements_from_observation(obs_id) if s.source == source]

    async def _said_at(self, obs_id: str) -> int | None:
        found = await self._ctx.graph.get_observations([obs_id])
        return (found[0].created_at or None) if found else None

    async def _check_retry(self, obs_id: str, text: str, source: str) -> ObservationView | None:
        """A stored observation under this id must hold the same text from the same source (a true retry);
        the stored one."""
        stored = await self._ctx.graph.get_observations([obs_id])
        if stored and (stored[0].text != text or stored[0].source != source):
            raise IdempotencyConflict("idempotency_key", obs_id)
        return stored[0] if stored else None

    async def _extract(
        self, obs_id: str, text: str, source: str, said_at: int | None, *, created: bool, final: bool = False,
        raw: ObservationRecord | None = None,
    ) -> ObserveResult:
        """One extraction attempt; ``final`` records a malformed result instead of leaving it pending.

        ``said_at``: when the observation was made (epoch ms), the day its relative dates are read from,
        however much later the extraction runs. ``raw``: the observation just written, to embed
        together with what is extracted from it.
        """
        ctx = self._ctx
        raw_entries = [] if raw is None else [raw_entry(raw)]
        try:
            infer = self.infers_with_extraction()
            extraction = await ctx.ask("observe", ctx.llm.extract_observation(text, source, said_at, infer))
        except LanguageModelUnavailable as exc:
            log.info("extraction deferred observation=%s error=%s", obs_id, str(exc)[:200])
            await ctx.indexer.submit(raw_entries)
            return ObserveResult(observation_id=obs_id, created=created, pending=True,
                                 extraction_error=f"no language model answered: {exc}"[:500])
        except LanguageModelError as exc:
            await ctx.indexer.submit(raw_entries)
            if not final:
                return ObserveResult(observation_id=obs_id, created=created, pending=True,
                                     extraction_error=f"the language model failed: {exc}"[:500])
            await ctx.graph.write_extraction(obs_id, (), (), error=str(exc)[:1000] or type(exc).__name__)
            return ObserveResult(observation_id=obs_id, created=created,
                                 extraction_error=f"the language model failed: {exc}"[:500])
        if infer:
            # Before the extraction's done-marker: until it is written the inference worker skips the
            # observation (extraction pending), after it the claims are there, so the worker never
            # infers it a second time in between.
            await self._write_inferred(obs_id, extraction.inferred, tuple(extraction.concepts))
        statements = tuple(
            statement_spec(derived_id("st", obs_id, str(i)), t) for i, t in enumerate(extraction.statements)
        )
        written = await ctx.graph.write_extraction(
            obs_id, tuple(extraction.concepts), statements, tuple(extraction.topics),
            said_at=None if raw is None else raw.created_at,  # just written: its time need not be read back
        )
        literal = {st.id for st in statements}  # not the inferred claims written with them
        if written.created and {st.id for st in written.statements} == literal:
            stored = written.statements  # as the write made them: no read back
        else:
            stored = [st for st in await ctx.graph.statements_from_observation(obs_id) if st.id in literal]
        await self._index_extraction(raw_entries, stored if written.created else [],
                                     written.concept_ids if written.created else [])
        return ObserveResult(
            observation_id=obs_id, created=created, statements=stored,
            concepts=[c.name for c in extraction.concepts],
        )

    async def _write_inferred(self, obs_id: str, inferred: list[Triple], concepts: tuple[ConceptSpec, ...]) -> None:
        """The claims the extraction inferred, written as the inference worker's with its done-marker (the
        ids ``record_inference`` would give them, so a worker racing on the same observation is absorbed).
        ``concepts``: the extraction's, so the claims name the concepts it does although they are written
        first (a claim on "mornings" written alone made a concept the extraction's "morning" then took).
        A failure leaves the observation to the worker, which then asks the model itself."""
        graph = self._ctx.graph
        worker = worker_spec(INFERENCE_SOURCE)
        statements = tuple(
            statement_spec(derived_id("st", worker.name, obs_id, str(i)), t) for i, t in enumerate(inferred)
        )
        try:
            result = await graph.write_inference(obs_id, statements, worker, concepts)
            if result.created and statements:
                await self._ctx.index_statements(await graph.get_statements(result.statement_ids))
        except (Unavailable, Timeout) as exc:  # the store away: the worker does it when it is back
            log.warning("inferred claims not written (the inference worker will infer them) observation=%s error=%s",
                        obs_id, str(exc)[:200])

    async def _index_extraction(
        self, entries: list[IndexEntry], statements: list[StatementView], concept_ids: list[str]
    ) -> None:
        """The observation's own row, with the rows of the statements and new concepts it yields."""
        ctx = self._ctx
        derived = ctx.settings.index_derived_vectors
        yielded = [statement_entry(s, derived) for s in statements]
        yielded += [
            IndexEntry(c.id, "concept", c.name, c.created_at, vector=derived)
            for c in await ctx.graph.get_concepts(concept_ids)
        ]
        await ctx.indexer.submit(entries + yielded)
