"""The language layer's interface: one method per kind of call, each one language-model call.

Providers (Anthropic, OpenAI-compatible, offline rules) and the p2p proxy to
an llm peer all satisfy ``LanguageModel``; ``MemoryService`` and the agents
see only this.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from mnemonet.model.records import ConceptSpec, Revision, Tense, check_valid_at


class Triple(BaseModel):
    """A statement before it has an id.

    ``tense`` says whether it held in the past, holds now, or is a plan;
    ``valid_at`` is when the text says it holds (an ISO 8601 date, as precise
    as the text: ``2019``, ``2026-10`` or ``2026-11-17``), or None.
    ``revision`` is set when the text marks it as replacing an earlier value:
    ``correction`` ("sorry", "actually", "I meant") or ``change`` ("now").
    """

    subject: str
    predicate: str
    object: str
    confidence: float = 0.9
    negated: bool = False
    tense: Tense = "present"
    valid_at: str | None = None
    revision: Revision | None = None

    @field_validator("valid_at", mode="before")
    @classmethod
    def _valid_at(cls, v: Any) -> str | None:  # not `object`: a field of this class is named object
        return check_valid_at(v)


class Extraction(BaseModel):
    """What one observation says: its concepts (with kinds, aliases, components) and statements;
    ``inferred``: the claims it supports beyond them, when the extraction was asked to infer too."""

    concepts: list[ConceptSpec] = Field(default_factory=list)
    statements: list[Triple] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    inferred: list[Triple] = Field(default_factory=list)


class ParsedClaim(BaseModel):
    triple: Triple
    concepts: list[ConceptSpec] = Field(default_factory=list)


class PairJudgement(BaseModel):
    """Verdict on one candidate pair of statements (by their index in the request)."""

    index: int
    contradicts: bool
    reason: str = ""


class WrittenAnswer(BaseModel):
    text: str
    cited: list[str] = Field(default_factory=list)


class CandidatePair(BaseModel):
    a: str
    b: str


@runtime_checkable
class LanguageModel(Protocol):
    """The natural-language <-> triples translation. Every method is exactly one model call."""

    @property
    def name(self) -> str:
        """Shown to users, e.g. ``offline (rule-based)`` or ``anthropic:claude-sonnet-4-5``."""
        ...

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        """Concepts and statements of ``text`` said by ``source``; relative dates ("yesterday", "next
        Tuesday") resolve against ``said_at`` (epoch ms, the observation's time; None: now). ``infer``:
        also the claims ``infer_claims`` would give, in the same call (``Extraction.inferred``)."""
        ...

    async def parse_claim(self, text: str, source: str) -> ParsedClaim: ...

    async def answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer:
        """Answer from ``memory`` = [(id, fenced one-line text)], citing the ids it rests on."""
        ...

    async def infer_claims(self, observation_text: str, source: str = "user") -> list[Triple]:
        """Claims the observation supports beyond its literal statements; first person is ``source``."""
        ...

    async def judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]: ...

    async def summarise(self, concept: str, statements: list[str], previous: str | None) -> str: ...

    async def predicate_cardinality(self, predicate: str, examples: list[str]) -> str:
        """``single`` if a subject has one current value of ``predicate`` at a time, else ``multi``."""
        ...

    def usage(self) -> dict[str, int]:
        """Counters: calls, input/output tokens, failures."""
        ...
