"""Checks on what goes into a provider (caller input) and what comes out (model results).

Input errors raise ``ValueError`` naming the field, before any call is made.
Malformed model output raises ``MalformedResult`` (a ``LanguageModelError``)
with a short description of what was wrong, never the whole reply.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from mnemonet.llm.base import CandidatePair, Extraction, PairJudgement, ParsedClaim, Triple
from mnemonet.llm.errors import LanguageModelError
from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import check_id, check_name, check_text
from mnemonet.settings import Settings

M = TypeVar("M", bound=BaseModel)

_PREDICATE_RE = re.compile(r"^[a-z][a-z0-9_]{0,79}$")
_CITATION_RE = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9_.:\-]{0,127})\]")


class MalformedResult(LanguageModelError):
    """The model's structured result does not match the expected shape."""


class InferredClaims(BaseModel):
    """The ``record_inferred_claims`` tool result."""

    claims: list[Triple] = Field(default_factory=list)


class Judgements(BaseModel):
    """The ``record_judgements`` tool result."""

    judgements: list[PairJudgement] = Field(default_factory=list)


# -- caller input -------------------------------------------------------------


def check_memory(memory: object, settings: Settings) -> list[tuple[str, str]]:
    """``memory`` must be a bounded list of ``(id, text)`` pairs."""
    if not isinstance(memory, list):
        raise InvalidInput("memory: must be a list of (id, text) pairs")
    if len(memory) > settings.llm_max_memory_items:
        raise InvalidInput(f"memory: more than {settings.llm_max_memory_items} items")
    out = []
    for item in memory:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InvalidInput("memory: every item must be an (id, text) pair")
        out.append((check_id(item[0], "memory.id"), check_text(item[1], "memory.text", settings.max_text_chars)))
    return out


def check_pairs(pairs: object, settings: Settings) -> list[CandidatePair]:
    """``pairs`` must be a bounded list of ``CandidatePair`` (or mappings with ``a`` and ``b``)."""
    if not isinstance(pairs, list):
        raise InvalidInput("pairs: must be a list of candidate pairs")
    if len(pairs) > settings.llm_max_pairs:
        raise InvalidInput(f"pairs: more than {settings.llm_max_pairs} pairs")
    out = []
    for pair in pairs:
        try:
            pair = pair if isinstance(pair, CandidatePair) else CandidatePair.model_validate(pair)
        except ValidationError as exc:
            raise InvalidInput(f"pairs: every item needs string fields a and b ({_summary(exc)})") from None
        check_text(pair.a, "pairs.a", settings.max_text_chars)
        check_text(pair.b, "pairs.b", settings.max_text_chars)
        out.append(pair)
    return out


def check_statements(statements: object, settings: Settings) -> list[str]:
    """``statements`` must be a bounded list of non-empty strings."""
    if not isinstance(statements, list):
        raise InvalidInput("statements: must be a list of strings")
    if len(statements) > settings.llm_max_summary_statements:
        raise InvalidInput(f"statements: more than {settings.llm_max_summary_statements} items")
    return [check_text(s, "statements", settings.max_text_chars) for s in statements]


# -- model output -------------------------------------------------------------


def _summary(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _model(cls: type[M], data: object, what: str) -> M:
    if not isinstance(data, dict):
        raise MalformedResult(f"{what}: expected a JSON object, got {type(data).__name__}")
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise MalformedResult(f"{what}: {_summary(exc)}") from None
    except ValueError as exc:  # a field validator of ConceptSpec & co. names its field
        raise MalformedResult(f"{what}: {exc}") from None


def checked_triple(triple: Triple, what: str, settings: Settings) -> Triple:
    """Names non-empty and bounded, predicate snake_case, confidence within [0, 1]."""
    try:
        subject = check_name(triple.subject, f"{what}.subject", settings.max_name_chars, drop_invisible=True)
        obj = check_name(triple.object, f"{what}.object", settings.max_name_chars, drop_invisible=True)
        predicate = check_name(triple.predicate, f"{what}.predicate", 80).lower().replace(" ", "_").replace("-", "_")
    except ValueError as exc:
        raise MalformedResult(str(exc)) from None
    if not _PREDICATE_RE.match(predicate):
        raise MalformedResult(f"{what}.predicate: must be snake_case letters, digits and '_'")
    if math.isnan(triple.confidence) or not 0.0 <= triple.confidence <= 1.0:
        raise MalformedResult(f"{what}.confidence: must be between 0 and 1")
    return triple.model_copy(update={"subject": subject, "object": obj, "predicate": predicate})


def extraction_from(data: object, settings: Settings) -> Extraction:
    """Validate an observation extraction result."""
    ex = _model(Extraction, data, "extraction")
    if len(ex.concepts) > settings.max_concepts_per_write:
        raise MalformedResult(f"extraction.concepts: more than {settings.max_concepts_per_write} items")
    if len(ex.statements) > settings.max_statements_per_write:
        raise MalformedResult(f"extraction.statements: more than {settings.max_statements_per_write} items")
    if len(ex.inferred) > settings.max_statements_per_write:
        raise MalformedResult(f"extraction.inferred: more than {settings.max_statements_per_write} items")
    statements = [checked_triple(t, f"extraction.statements.{i}", settings) for i, t in enumerate(ex.statements)]
    inferred = [checked_triple(t, f"extraction.inferred.{i}", settings) for i, t in enumerate(ex.inferred)]
    try:
        topics = [check_name(t, "extraction.topics", 80, drop_invisible=True) for t in ex.topics[:50]]
    except ValueError as exc:
        raise MalformedResult(str(exc)) from None
    return Extraction(concepts=ex.concepts, statements=statements, topics=topics, inferred=inferred)


def parsed_claim_from(data: object, settings: Settings) -> ParsedClaim:
    """Validate a claim-parsing result."""
    claim = _model(ParsedClaim, data, "claim")
    if len(claim.concepts) > settings.max_concepts_per_write:
        raise MalformedResult(f"claim.concepts: more than {settings.max_concepts_per_write} items")
    return ParsedClaim(triple=checked_triple(claim.triple, "claim.triple", settings), concepts=claim.concepts)


def inferred_from(data: object, settings: Settings) -> list[Triple]:
    """Validate an inference result."""
    result = _model(InferredClaims, data, "inferred")
    if len(result.claims) > settings.max_statements_per_write:
        raise MalformedResult(f"inferred.claims: more than {settings.max_statements_per_write} items")
    return [checked_triple(t, f"inferred.claims.{i}", settings) for i, t in enumerate(result.claims)]


def judgements_from(data: object, count: int) -> list[PairJudgement]:
    """Validate judgements: exactly one per pair index ``0..count-1``, returned in index order."""
    result = _model(Judgements, data, "judgements")
    by_index: dict[int, PairJudgement] = {}
    for j in result.judgements:
        if not 0 <= j.index < count:
            raise MalformedResult(f"judgements.index: {j.index} is outside 0..{count - 1}")
        by_index.setdefault(j.index, j)
    missing = [i for i in range(count) if i not in by_index]
    if missing:
        raise MalformedResult(f"judgements: no judgement for pair(s) {missing[:10]}")
    return [by_index[i] for i in range(count)]


class _CardinalityResult(BaseModel):
    cardinality: Literal["single", "multi"]
    reason: str = ""


def cardinality_from(data: object) -> Literal["single", "multi"]:
    """Validate a cardinality answer: ``single`` or ``multi``."""
    return _model(_CardinalityResult, data, "cardinality").cardinality


def citations(text: str, known_ids: list[str]) -> list[str]:
    """The ``[id]`` citations in ``text`` that name a given memory id, in order, without repeats."""
    known = set(known_ids)
    out: list[str] = []
    for m in _CITATION_RE.finditer(text):
        if m.group(1) in known and m.group(1) not in out:
            out.append(m.group(1))
    return out


def checked_reply_text(text: Any, what: str, settings: Settings) -> str:
    """A plain-text reply must be a non-empty string within ``llm_max_reply_chars``."""
    if not isinstance(text, str) or not text.strip():
        raise MalformedResult(f"{what}: the reply has no text")
    if len(text) > settings.llm_max_reply_chars:
        raise MalformedResult(f"{what}: the reply is longer than {settings.llm_max_reply_chars} characters")
    return text.strip()
