"""What gets read back: plain, JSON-ready result types shared by every layer."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ConceptView(_View):
    id: str
    name: str
    kind: str = "thing"
    aliases: list[str] = Field(default_factory=list)
    created_at: int = 0


class ConceptRelationView(_View):
    relation: str
    concept: ConceptView


class StatementView(_View):
    """A statement with the names around it and its provenance."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    negated: bool = False
    tense: str = Field("present", description="past, present or future (a plan)")
    valid_at: str | None = Field(None, description="When the text says it holds: an ISO 8601 date (YYYY[-MM[-DD]]).")
    revision: str | None = Field(None, description="correction or change: the text says it replaces an earlier value")
    created_at: int = 0
    source: str | None = None
    derived_from: list[str] = Field(default_factory=list)
    superseded_by: list[str] = Field(default_factory=list)
    contradicted_by: list[str] = Field(default_factory=list)
    summary: str | None = Field(None, description="The text of a consolidation summary statement.")
    retracted_by: list[str] = Field(default_factory=list, description="Ids of the retractions taking it back.")
    derived_from_retracted: bool = Field(
        False, description="Everything it was derived from is retracted: it stands on nothing any more.")
    space: str | None = Field(None, description="The space it was read from, when that is a shared one, "
                              "not the space asked.")

    @property
    def withdrawn(self) -> bool:
        """Retracted, or derived only from retracted items: never current, never an answer, never a basis."""
        return bool(self.retracted_by) or self.derived_from_retracted

    def sentence(self) -> str:
        if self.summary:  # a summary statement reads as its text
            return self.summary
        verb = self.predicate.replace("_", " ")
        return f"{self.subject} {'not ' if self.negated else ''}{verb} {self.object}"


class ObservationView(_View):
    id: str
    text: str
    created_at: int = 0
    source: str | None = None
    topics: list[str] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)


class ContradictionView(_View):
    """An open contradiction: neither side superseded."""

    a: StatementView
    b: StatementView
    reason: str = ""
    created_at: int = 0

    def sentence(self) -> str:
        """``alice says X (Mon 23 Nov 09:00); bob says Y (Thu 26 Nov 10:00) -- unresolved``, older side first.

        ASCII only: answers and summaries print on terminals without UTF-8.
        """
        sides = sorted((self.a, self.b), key=lambda s: (s.created_at, s.id))
        said = "; ".join(f"{s.source or 'someone'} says {s.sentence()} ({when(s.created_at)})" for s in sides)
        return f"{said} -- unresolved"


def when(epoch_ms: int) -> str:
    """A short UTC time a reader can place: ``Mon 23 Nov 16:50``."""
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).strftime("%a %d %b %H:%M")


class RetractionView(_View):
    """A retraction: who took which statement or observation back, when (Unix ms) and why.

    ``target_text`` is what was taken back (a statement's sentence, an observation's text), where known.
    """

    id: str
    target_id: str
    kind: str
    reason: str
    source: str
    created_at: int = 0
    target_text: str = ""


class TombstoneView(_View):
    """What a ``forget`` erased: what kind of request, in which space (for kind ``space``, the space erased),
    how many of each, when (Unix ms) and by whom; no content."""

    id: str
    kind: str
    space: str = "default"
    observations: int = 0
    statements: int = 0
    concepts: int = 0
    retractions: int = 0
    sources: int = 0
    vectors: int = 0
    at: int = 0
    by: str = ""


class WriteResult(_View):
    """What a write created; ``created`` is false when the id already existed (a retry)."""

    id: str
    created: bool
    statement_ids: list[str] = Field(default_factory=list)
    concept_ids: list[str] = Field(default_factory=list)

    def written_ids(self) -> list[str]:
        """The ids a write event names: the new statements only (a worker's repeat wrote none)."""
        return list(self.statement_ids) if self.created else []


class AuditView(_View):
    """One audited client call: who (the token's name), what, when (Unix ms), the node that served it, how it
    ended, and the spaces it touched (none: the network as a whole)."""

    id: str
    at: int
    who: str
    method: str
    node: str
    outcome: str
    detail: str = ""
    spaces: list[str] = Field(default_factory=list)


class SearchHit(_View):
    """A compact search result, with why it matched."""

    id: str
    kind: str
    text: str
    score: float
    vector_rank: int | None = None
    keyword_rank: int | None = None
    graph_path: str | None = None
    flags: list[str] = Field(default_factory=list)
    uses: int = Field(0, description="How many searches returned it before this one (counted in batches).")
    last_used_at: int | None = Field(None, description="When a search last returned it (Unix ms), if ever.")
    space: str | None = Field(None, description="The space it was read from, when that is a shared one, "
                              "not the space asked.")
