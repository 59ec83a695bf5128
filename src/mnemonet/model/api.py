"""The ``MemoryAPI`` Protocol: the one interface agents, adapters and peers speak."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, StrictBool

from mnemonet.model.brief import SessionBrief
from mnemonet.model.spaces import SpaceView
from mnemonet.model.views import (
    AuditView,
    ConceptView,
    ContradictionView,
    ObservationView,
    RetractionView,
    SearchHit,
    StatementView,
    TombstoneView,
    WriteResult,
)


class ObserveResult(BaseModel):
    """An acknowledged observation. ``pending``: kept, but no model has extracted it yet (a
    worker will, once); ``extraction_error`` says why it is pending or gave no statements."""

    observation_id: str
    created: bool
    statements: list[StatementView] = Field(default_factory=list)
    concepts: list[str] = Field(default_factory=list)
    pending: bool = False
    extraction_error: str | None = None

    def written_ids(self) -> list[str]:
        """The ids a write event names: the observation's (a retried write's too)."""
        return [self.observation_id]


class ImportLine(BaseModel):
    """What became of one line of an imported file: ``ok`` (written now), ``duplicate`` (written before,
    by an earlier run or a retried request: nothing written twice), ``refused`` (its content, with the reason)
    or ``unreadable`` (not an item of the format)."""

    line: int
    status: Literal["ok", "duplicate", "refused", "unreadable"]
    observation_id: str | None = None
    pending: bool = False
    reason: str | None = None


class ImportReport(BaseModel):
    """The lines of one import request, in file order, and their counts."""

    lines: list[ImportLine]
    ok: int
    duplicate: int
    refused: int
    unreadable: int


class ClaimResult(BaseModel):
    statement_id: str
    created: bool
    statement: StatementView | None = None
    derived_from: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)

    def written_ids(self) -> list[str]:
        """The ids a write event names: the statement's (a retried claim's too)."""
        return [self.statement_id]


class Recall(BaseModel):
    """The structured result behind ``remember``.

    ``statements`` are current (not superseded), best first; ``superseded``
    are the ones they replaced, kept to explain a change; ``contradictions``
    are open conflicts among them.
    """

    query: str
    statements: list[StatementView] = Field(default_factory=list)
    superseded: list[StatementView] = Field(default_factory=list)
    contradictions: list[ContradictionView] = Field(default_factory=list)
    observations: list[ObservationView] = Field(default_factory=list)
    retractions: list[RetractionView] = Field(
        default_factory=list, description="Retractions of what the query reached: why it is left out.")
    withdrawn: list[StatementView] = Field(
        default_factory=list, description="Statements the query reached that are retracted, or stand only on "
        "retracted items: never current, listed so an answer knows what their observations said.")


class RetractResult(BaseModel):
    """A retraction (``created`` false when the item was retracted already: the standing one is returned).

    ``flagged``: statements derived only from the retracted item, now left out of answers too.
    """

    retraction_id: str
    target_id: str
    kind: Literal["statement", "observation"]
    created: bool
    reason: str
    source: str
    created_at: int
    flagged: list[str] = Field(default_factory=list)

    def written_ids(self) -> list[str]:
        """The ids a write event names: the item taken back, then the retraction (a retry's too), so a dashboard
        can show what was retracted and why."""
        return [self.target_id, self.retraction_id]


class ForgetReport(BaseModel):
    """What ``forget`` erased (counts, never content) and whether the files were compacted so the bytes are
    gone. ``tombstone_id`` is None when there was nothing to erase (a retry after the erasure)."""

    kind: Literal["observation", "source", "space"]
    space: str = Field("default", description="The space the erasure ran in; for kind 'space', the space erased.")
    tombstone_id: str | None = None
    observations: int = 0
    statements: int = 0
    concepts: int = 0
    retractions: int = 0
    sources: int = 0
    vectors: int = Field(0, description="Index rows of the erased items: deleted, or cancelled while still queued "
                         "behind their write (never written).")
    contexts_scrubbed: int = Field(0, description="Other rows' embedding context that quoted an erased text, emptied.")
    graph_compacted: bool = False
    vectors_compacted: bool = False
    at: int = 0
    by: str = ""

    def written_ids(self) -> list[str]:
        """The ids a write event names: the tombstone (none when nothing was erased). Never what was erased:
        its ids name content that is gone."""
        return [self.tombstone_id] if self.tombstone_id is not None else []


class Answer(BaseModel):
    """``text`` leads with the current answer in one sentence, then evidence, changes and conflicts.

    ``confidence`` is the answering statement's confidence weighed by agreement
    (0 when nothing answers); ``degraded`` is true when no language model
    answered and the text was composed by rule from ``recall`` alone.
    """

    query: str
    text: str
    cited: list[str] = Field(default_factory=list)
    recall: Recall
    provider: str
    confidence: float = 0.0
    degraded: bool = False


class InferredClaim(BaseModel):
    text: str
    confidence: float = 0.8


class ConsolidationWork(BaseModel):
    """A concept due a summary: what it may state, its current statements (superseded ones left out)
    and the open conflicts between sources among them (stated as unresolved, never as facts)."""

    concept_id: str
    concept: str
    statements: list[StatementView] = Field(default_factory=list)
    conflicts: list[ContradictionView] = Field(default_factory=list)


LinkKind = Literal["SUPERSEDES", "CONTRADICTS"]


class PredicateProfile(BaseModel):
    """What the memory knows about a predicate outside the schema: a remembered decision
    (``cardinality``, ``decided_by``), and its current values: ``subjects`` with one or more,
    ``multi_subjects`` with several from one source."""

    predicate: str
    cardinality: Literal["single", "multi"] | None = None
    decided_by: str | None = None
    subjects: int = 0
    multi_subjects: int = 0
    relation: str | None = Field(None, description="The vocabulary's relation it means, found by meaning and "
                                 "remembered (a Predicate node); itself when it means none.")


class WorkerMemory(Protocol):
    """What a worker agent calls, in the one memory space its pass works in.

    A ``MemoryService`` (one space), a ``MemoryAPI`` bound to a space (``InSpace``) and the
    network clients all serve it; methods return awaitables so a proxy can serve them too.
    """

    def pending_observations(self, source: str, limit: int = 100) -> Awaitable[list[ObservationView]]: ...

    def pending_extractions(self, limit: int = 100) -> Awaitable[list[ObservationView]]: ...

    def complete_extraction(self, observation_id: str) -> Awaitable[ObserveResult]: ...

    def infer(self, observation_text: str, source: str = "user") -> Awaitable[list[InferredClaim]]: ...

    def record_inference(
        self, observation_id: str, claims: list[InferredClaim], source: str
    ) -> Awaitable[WriteResult]: ...

    def pending_statements(self, source: str, limit: int = 100) -> Awaitable[list[StatementView]]: ...

    def mark_processed(self, source: str, ids: list[str]) -> Awaitable[int]: ...

    def link_statements(
        self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str
    ) -> Awaitable[bool]: ...

    def predicate_profile(self, predicate: str, exclude: list[str]) -> Awaitable[PredicateProfile]: ...

    def record_predicate(self, predicate: str, cardinality: str, decided_by: str) -> Awaitable[PredicateProfile]: ...

    def pending_consolidation(
        self, source: str, min_new: int, limit: int = 10
    ) -> Awaitable[list[ConsolidationWork]]: ...

    def record_summary(
        self, concept_id: str, text: str, derived_from: list[str], source: str
    ) -> Awaitable[WriteResult]: ...

    def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None
    ) -> Awaitable[list[SearchHit]]: ...

    def load(self, ids: list[str]) -> Awaitable[list[dict[str, Any]]]: ...

    def get_concept_statements(self, name: str, limit: int = 50) -> Awaitable[list[StatementView]]: ...


@runtime_checkable
class MemoryAPI(Protocol):
    """Observe, claim and remember in natural language, plus the reads behind them."""

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, space: str | None = None,
        defer_extraction: StrictBool = False, writer: str = "",
    ) -> ObserveResult:
        """Record an observation; ``defer_extraction`` returns once it is recorded, extraction pending
        for the inference worker (strict: only true or false, over the wire too). ``writer``: whose
        ``idempotency_key`` it is (``model.ids.keyed_id``): over HTTP the node sets it to the token's name,
        so another token's write under the same key is its own; empty for the node's own callers."""
        ...

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None, space: str | None = None, writer: str = "",
    ) -> ClaimResult:
        """Assert one statement as ``source``; ``writer`` as for ``observe``."""
        ...

    async def import_file(
        self, content: str, format: Literal["jsonl", "locomo", "chat"] = "jsonl", *, text_field: str = "text",
        source_field: str = "source", default_source: str = "import", as_source: str | None = None,
        space: str | None = None, defer_extraction: StrictBool = False, writer: str = "",
    ) -> ImportReport:
        """Observe every line of a file's text, each under the key ``import:<sha256 of the text>:<line>`` (the
        keys ``run_node.py import`` gives the same file), so a retried request writes nothing twice and skips
        nothing; a line refused for its content is reported with its number and the rest go on.
        ``as_source``: every line must be said by it (over HTTP the node sets it to the token's name unless
        the token may speak for others). ``writer``: whose keys they are, as for ``observe``."""
        ...

    async def retract(
        self, id: str, reason: str, source: str = "user", *, space: str | None = None, any_source: StrictBool = False
    ) -> RetractResult:
        """Take a statement or observation back by appending a retraction by ``source``; nothing is deleted.
        Only what ``source`` itself wrote, unless ``any_source`` (an admin of the space: over HTTP the node
        sets it from the token). Retracting an item twice returns the standing retraction."""
        ...

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local", *,
        whole_space: StrictBool = False, space: str | None = None
    ) -> ForgetReport:
        """Admin only: erase one observation, or every observation and statement of a source, with what is
        derived only from them, or with ``whole_space`` the whole of ``space`` (its graph, its vector schema,
        the space itself), from the graph, the vector index and their files; leaves a tombstone (for a
        whole space, in the default space)."""
        ...

    async def tombstones(self, limit: int = 50, *, space: str | None = None) -> list[TombstoneView]:
        """Admin only: tombstones of erasures, newest first."""
        ...

    async def remember(self, query: str, source: str | None = None, *, space: str | None = None) -> Answer:
        """Answer ``query``; ``source`` is the asker: its "I" in the question, "you" in the answer."""
        ...

    async def recall(self, query: str, *, space: str | None = None) -> Recall: ...

    async def brief(
        self, subject: str | None = None, since: int | None = None, budget: int | None = None, *,
        space: str | None = None,
    ) -> SessionBrief:
        """What a new agent session should know about ``subject`` (or, without one, the team's most recent and
        most used subjects), within ``budget`` tokens (estimated as characters / 4): current facts, open
        conflicts, with ``since`` (epoch ms) what changed since then, the most used concepts; every line cites
        its ids."""
        ...

    async def infer(
        self, observation_text: str, source: str = "user", *, space: str | None = None
    ) -> list[InferredClaim]:
        """Claims a language model infers from an observation ``source`` made (its first person)."""
        ...

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        *, space: str | None = None
    ) -> list[SearchHit]: ...

    async def load(self, ids: list[str], *, space: str | None = None) -> list[dict[str, Any]]: ...

    async def get_recent_observations(self, limit: int = 20, *, space: str | None = None) -> list[ObservationView]: ...

    async def get_recent_statements(self, limit: int = 20, *, space: str | None = None) -> list[StatementView]: ...

    async def get_unresolved_contradictions(
        self, limit: int = 20, *, space: str | None = None
    ) -> list[ContradictionView]: ...

    async def get_concepts(self, limit: int = 100, *, space: str | None = None) -> list[ConceptView]: ...

    async def get_concept_statements(
        self, name: str, limit: int = 50, *, space: str | None = None
    ) -> list[StatementView]: ...

    async def stats(self, *, space: str | None = None) -> dict[str, Any]: ...

    async def clear(self, *, space: str | None = None) -> None: ...

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Record a client token as revoked; False if it was already."""
        ...

    async def revoked_tokens(self) -> list[str]:
        """Ids of revoked client tokens, newest first."""
        ...

    async def audit_log(self, limit: int = 50, *, spaces: list[str] | None = None) -> list[AuditView]:
        """Audit records, newest first; with ``spaces``, only those of calls within them (over HTTP the node
        sets it from the token: every record for a token of every space, else those of its spaces)."""
        ...

    async def spaces(self) -> list[SpaceView]:
        """Every memory space, ``default`` first."""
        ...

    async def create_space(self, name: str, by: str = "local") -> SpaceView:
        """Create a memory space (admin); an existing one is returned unchanged."""
        ...

    async def delete_space(self, name: str, by: str = "local") -> bool:
        """Delete a memory space and everything in it (admin); False if there was none. The same erasure as
        ``forget(whole_space=True, space=name)`` (compacted, a tombstone left), reported as a bool."""
        ...

    async def share_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Let space ``name`` read space ``reads``, read-only and not transitive (admin)."""
        ...

    async def unshare_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Stop space ``name`` reading space ``reads`` (admin)."""
        ...

    # -- worker agents: structured writes, and reading back what a worker has done --

    async def record_inference(
        self, observation_id: str, claims: list[InferredClaim], source: str, *, space: str | None = None
    ) -> WriteResult:
        """Store the claims a worker inferred from an observation and mark it processed by ``source``."""
        ...

    async def pending_observations(
        self, source: str, limit: int = 100, *, space: str | None = None
    ) -> list[ObservationView]:
        """Oldest observations ``source`` has not processed yet."""
        ...

    async def pending_statements(
        self, source: str, limit: int = 100, *, space: str | None = None
    ) -> list[StatementView]:
        """Oldest statements ``source`` has not marked processed yet."""
        ...

    async def pending_extractions(self, limit: int = 100, *, space: str | None = None) -> list[ObservationView]:
        """Oldest observations kept without a model, whose extraction waits (past the inline grace)."""
        ...

    async def complete_extraction(self, observation_id: str, *, space: str | None = None) -> ObserveResult:
        """Extract a pending observation, exactly once; still ``pending`` if no model answers."""
        ...

    async def predicate_profile(
        self, predicate: str, exclude: list[str], *, space: str | None = None
    ) -> PredicateProfile:
        """A predicate's remembered cardinality and its current values (statements in ``exclude`` left out)."""
        ...

    async def record_predicate(
        self, predicate: str, cardinality: str, decided_by: str, *, space: str | None = None
    ) -> PredicateProfile:
        """Remember a predicate's cardinality once; returns the decision that stands."""
        ...

    async def mark_processed(self, source: str, ids: list[str], *, space: str | None = None) -> int:
        """Mark statements processed by ``source``; returns how many marks are new."""
        ...

    async def link_statements(
        self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str, *, space: str | None = None
    ) -> bool:
        """Add SUPERSEDES/CONTRADICTS between existing statements; False if it was there already."""
        ...

    async def pending_consolidation(
        self, source: str, min_new: int, limit: int = 10, *, space: str | None = None
    ) -> list[ConsolidationWork]:
        """Concepts due a summary by ``source``: ``min_new`` current statements no summary of its covers yet,
        or a summary resting on a statement superseded or contradicted since."""
        ...

    async def record_summary(
        self, concept_id: str, text: str, derived_from: list[str], source: str, *, space: str | None = None
    ) -> WriteResult:
        """Store a summary statement about a concept, DERIVED_FROM every statement it rests on; it
        supersedes the source's previous summary of the concept."""
        ...
