"""The ``MemoryAPI`` Protocol: the one interface agents, adapters and peers speak."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from mnemonet.model.views import (
    AuditView,
    ConceptView,
    ContradictionView,
    ObservationView,
    SearchHit,
    StatementView,
    WriteResult,
)


class ObserveResult(BaseModel):
    observation_id: str
    created: bool
    statements: list[StatementView] = Field(default_factory=list)
    concepts: list[str] = Field(default_factory=list)


class ClaimResult(BaseModel):
    statement_id: str
    created: bool
    statement: StatementView | None = None
    derived_from: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)


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


class Answer(BaseModel):
    query: str
    text: str
    cited: list[str] = Field(default_factory=list)
    recall: Recall
    provider: str


class InferredClaim(BaseModel):
    text: str
    confidence: float = 0.8


class ConsolidationWork(BaseModel):
    """A concept due a summary: the statements no summary covers yet, and the newest summary to build on."""

    concept_id: str
    concept: str
    statements: list[StatementView] = Field(default_factory=list)
    previous: StatementView | None = None


LinkKind = Literal["SUPERSEDES", "CONTRADICTS"]


@runtime_checkable
class MemoryAPI(Protocol):
    """Observe, claim and remember in natural language, plus the reads behind them."""

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ObserveResult: ...

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None,
    ) -> ClaimResult: ...

    async def remember(self, query: str) -> Answer: ...

    async def recall(self, query: str) -> Recall: ...

    async def infer(self, observation_text: str) -> list[InferredClaim]: ...

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None
    ) -> list[SearchHit]: ...

    async def load(self, ids: list[str]) -> list[dict[str, Any]]: ...

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]: ...

    async def get_recent_statements(self, limit: int = 20) -> list[StatementView]: ...

    async def get_unresolved_contradictions(self, limit: int = 20) -> list[ContradictionView]: ...

    async def get_concepts(self, limit: int = 100) -> list[ConceptView]: ...

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]: ...

    async def stats(self) -> dict[str, Any]: ...

    async def clear(self) -> None: ...

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Record a client token as revoked; False if it was already."""
        ...

    async def revoked_tokens(self) -> list[str]:
        """Ids of revoked client tokens, newest first."""
        ...

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str) -> None:
        """Append one audit record of a client's write or admin call."""
        ...

    async def audit_log(self, limit: int = 50) -> list[AuditView]:
        """Audit records, newest first."""
        ...

    # -- worker agents: structured writes, and reading back what a worker has done --

    async def record_inference(self, observation_id: str, claims: list[InferredClaim], source: str) -> WriteResult:
        """Store the claims a worker inferred from an observation and mark it processed by ``source``."""
        ...

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        """Oldest observations ``source`` has not processed yet."""
        ...

    async def pending_statements(self, source: str, limit: int = 100) -> list[StatementView]:
        """Oldest statements ``source`` has not marked processed yet."""
        ...

    async def mark_processed(self, source: str, ids: list[str]) -> int:
        """Mark statements processed by ``source``; returns how many marks are new."""
        ...

    async def link_statements(self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str) -> bool:
        """Add SUPERSEDES/CONTRADICTS between existing statements; False if it was there already."""
        ...

    async def pending_consolidation(self, source: str, min_new: int, limit: int = 10) -> list[ConsolidationWork]:
        """Concepts with at least ``min_new`` statements no summary by ``source`` covers yet."""
        ...

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        """Store a summary statement about a concept, DERIVED_FROM every statement it rests on."""
        ...
