"""What gets written: validated records for the store.

Every record carries a caller-made id so a retried write is a no-op. The
validators here are the single place where field shapes and sizes are
checked; a bad field raises ``InvalidInput`` (a ``ValueError``) naming it, before any I/O.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from mnemonet.model.errors import InvalidInput

# Ceilings of what a record holds, and the defaults of the settings of the same names (max_text_chars,
# max_name_chars, max_concepts_per_write / max_statements_per_write), which may lower them, never raise them.
MAX_TEXT_CHARS = 20_000
MAX_NAME_CHARS = 200
MAX_ITEMS = 200

ConceptRelation = Literal["head_noun", "modifier", "is_a", "has_property", "part_of", "alias_of", "related"]
CONCEPT_RELATIONS: frozenset[str] = frozenset(ConceptRelation.__args__)  # type: ignore[attr-defined]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
_PREDICATE_RE = re.compile(r"^[a-z][a-z0-9_]{0,79}$")


def normalise_name(name: str) -> str:
    """The key a concept is merged on: case-folded, whitespace collapsed, edge punctuation dropped."""
    return " ".join(name.casefold().split()).strip(" .,;:!?\"'")


def check_id(value: object, field: str = "id") -> str:
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InvalidInput(f"{field}: must be 1-128 characters of letters, digits, '_', '.', ':' or '-'")
    return value


def lone_surrogate(text: str) -> bool:
    """True if ``text`` holds a lone surrogate (U+D800-U+DFFF): JSON can carry one, UTF-8 cannot, and every
    store and model encodes text as UTF-8 (it once answered 500 there)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# Invisible characters a name may keep: the joiners Persian, Indic scripts and emoji sequences spell with.
_JOINERS = frozenset("\u200c\u200d")


def _invisible(value: str) -> str | None:
    """The first control, format (bidi overrides, zero-width spaces, BOM ...) or surrogate character."""
    if value.isascii():
        return next((c for c in value if c < " " or c == "\x7f"), None)
    return next((c for c in value if c not in _JOINERS and unicodedata.category(c) in ("Cc", "Cf", "Cs")), None)


def check_name(value: object, field: str, limit: int = MAX_NAME_CHARS, *, drop_invisible: bool = False) -> str:
    """A name (of a source, a concept, a space ...) with whitespace collapsed, non-empty and at most ``limit``.

    Control and format characters are refused: a right-to-left override in a source name made it display
    reversed ("bob\u202egnp.exe" reads "bobexe.png"), a zero-width space made two names look one.
    ``drop_invisible`` removes them instead, for names a language model took from stored text (concepts,
    topics), so text with a soft hyphen or a stray mark is still extracted.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be a string")
    value = " ".join(value.split())
    if not value:
        raise InvalidInput(f"{field}: must not be empty")
    if len(value) > limit:
        raise InvalidInput(f"{field}: longer than {limit} characters")
    if (found := _invisible(value)) is not None:
        if not drop_invisible:
            raise InvalidInput(f"{field}: must not contain control or format characters (U+{ord(found):04X})")
        value = " ".join("".join(c for c in value if _invisible(c) is None).split())
        if not value:
            raise InvalidInput(f"{field}: must not be empty")
    return value


def check_text(value: object, field: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be a string")
    if not value.strip():
        raise InvalidInput(f"{field}: must not be empty")
    if len(value) > limit:
        raise InvalidInput(f"{field}: longer than {limit} characters")
    if "\x00" in value:
        raise InvalidInput(f"{field}: must not contain NUL characters")
    if lone_surrogate(value):
        raise InvalidInput(f"{field}: must not contain lone surrogates (U+D800-U+DFFF are not text)")
    return value


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceSpec(_Record):
    """Who said it: an agent, a user or a system component."""

    name: str
    kind: Literal["user", "agent", "system"] = "user"

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: object) -> str:
        return check_name(v, "source.name")


class ConceptComponent(_Record):
    """A sub-concept a concept decomposes into (``RELATED_TO {relation}``)."""

    name: str
    relation: ConceptRelation

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: object) -> str:
        return check_name(v, "component.name", drop_invisible=True)


class ConceptSpec(_Record):
    """A concept to get-or-create by normalised name or alias."""

    name: str
    kind: str = "thing"
    aliases: tuple[str, ...] = ()
    components: tuple[ConceptComponent, ...] = ()

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: object) -> str:
        return check_name(v, "concept.name", drop_invisible=True)

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: object) -> str:
        return check_name(v, "concept.kind", 40, drop_invisible=True).lower()

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, v: object) -> tuple[str, ...]:
        if not isinstance(v, (list, tuple)):
            raise InvalidInput("concept.aliases: must be a list of strings")
        if len(v) > 20:
            raise InvalidInput("concept.aliases: more than 20 aliases")
        return tuple(check_name(a, "concept.aliases", drop_invisible=True) for a in v)

    @field_validator("components", mode="before")
    @classmethod
    def _components(cls, v: object) -> object:
        if isinstance(v, (list, tuple)) and len(v) > 20:
            raise InvalidInput("concept.components: more than 20 components")
        return v

    @property
    def key(self) -> str:
        return normalise_name(self.name)


Tense = Literal["past", "present", "future"]
# What the text says the statement does to an earlier value of the same attribute: "correction"
# ("sorry", "actually", "I meant", "X is wrong") or "change" ("now", "no longer", "anymore").
# Validation lets a cued statement supersede the contradicted one (truth/currency.py).
Revision = Literal["correction", "change"]
# The inference worker's source: its claims are ASSERTED_BY it and its done-markers hang off it, whether
# the worker asked the model or the extraction inferred them in the same call (``infer_with_extraction``).
INFERENCE_SOURCE = "inference-agent"
# The validation and consolidation workers' sources: their done-markers are their backlogs (``stats``).
VALIDATION_SOURCE = "validation-agent"
CONSOLIDATION_SOURCE = "consolidation-agent"
# The workers' own sources: what they assert is drawn from others' words, never evidence of its own.
WORKER_SOURCES = (INFERENCE_SOURCE, VALIDATION_SOURCE, CONSOLIDATION_SOURCE)
# ISO 8601 calendar date at the precision the text gives: "2019", "2026-10", "2026-11-17".
_VALID_AT_RE = re.compile(r"^\d{4}(?:-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)?$")


def check_valid_at(v: object, field: str = "valid_at") -> str | None:
    """None, or an ISO 8601 date as precise as the text said: ``2019``, ``2026-10``, ``2026-11-17``."""
    if v is None:
        return None
    if not isinstance(v, str) or not _VALID_AT_RE.match(v):
        raise InvalidInput(f"{field}: must be an ISO 8601 date (YYYY, YYYY-MM or YYYY-MM-DD)")
    return v


class StatementSpec(_Record):
    """A reified triple: subject --predicate--> object, with confidence and polarity.

    ``tense``: held in the past, holds now, or is a plan; ``valid_at``: when
    the text says it holds (ISO 8601 date), or None; ``revision``: the text
    marks it as a correction or a change of an earlier value, or None.
    """

    id: str
    subject: str
    predicate: str
    object: str  # shadows the builtin in this class's body: validators below annotate with Any
    confidence: float = 1.0
    negated: bool = False
    tense: Tense = "present"
    valid_at: str | None = None
    revision: Revision | None = None

    @field_validator("valid_at", mode="before")
    @classmethod
    def _valid_at(cls, v: Any) -> str | None:  # not `object`: a field of this class is named object
        return check_valid_at(v, "statement.valid_at")

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> str:
        return check_id(v, "statement.id")

    @field_validator("subject", "object", mode="before")
    @classmethod
    def _ends(cls, v: Any, info: ValidationInfo) -> str:
        return check_name(v, f"statement.{info.field_name}", drop_invisible=True)

    @field_validator("predicate", mode="before")
    @classmethod
    def _predicate(cls, v: Any) -> str:
        v = check_name(v, "statement.predicate", 80)
        v = v.strip().lower().replace(" ", "_").replace("-", "_")
        if not _PREDICATE_RE.match(v):
            raise InvalidInput("statement.predicate: must be snake_case letters, digits and '_'")
        return v

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidInput("statement.confidence: must be a number")
        if math.isnan(v) or not 0.0 <= float(v) <= 1.0:
            raise InvalidInput("statement.confidence: must be between 0 and 1")
        return float(v)

    @field_validator("negated", mode="before")
    @classmethod
    def _negated(cls, v: Any) -> bool:
        if not isinstance(v, bool):
            raise InvalidInput("statement.negated: must be true or false")
        return v

    def sentence(self) -> str:
        """The statement as plain words, e.g. ``user not likes mornings``."""
        verb = self.predicate.replace("_", " ")
        return f"{self.subject} {'not ' if self.negated else ''}{verb} {self.object}"


class StatementLink(_Record):
    """A ``SUPERSEDES`` or ``CONTRADICTS`` edge to an existing statement."""

    target_id: str
    reason: str = ""

    @field_validator("target_id", mode="before")
    @classmethod
    def _target(cls, v: object) -> str:
        return check_id(v, "link.target_id")

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: object) -> str:
        if not isinstance(v, str) or len(v) > 1000:
            raise InvalidInput("link.reason: must be a string of at most 1000 characters")
        return v


class ObservationRecord(_Record):
    """One observation with everything extracted from it, written in one round trip."""

    id: str
    text: str
    source: SourceSpec
    concepts: tuple[ConceptSpec, ...] = ()
    statements: tuple[StatementSpec, ...] = ()
    topics: tuple[str, ...] = ()
    created_at: int | None = Field(None, description="epoch ms; the store's clock when absent")
    metadata: dict[str, str] = Field(default_factory=dict)
    extraction_pending: bool = Field(
        False, description="written raw, before its extraction (which follows once, inline or by a worker)"
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: object) -> str:
        return check_id(v, "observation.id")

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: object) -> str:
        return check_text(v, "observation.text")

    @field_validator("concepts", "statements", mode="before")
    @classmethod
    def _bounded(cls, v: object, info: object) -> object:
        if isinstance(v, (list, tuple)) and len(v) > MAX_ITEMS:
            raise InvalidInput(f"observation.{info.field_name}: more than {MAX_ITEMS} items")  # type: ignore[attr-defined]
        return v

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, v: object) -> tuple[str, ...]:
        if not isinstance(v, (list, tuple)) or len(v) > 50:
            raise InvalidInput("observation.topics: must be a list of at most 50 strings")
        return tuple(check_name(t, "observation.topics", 80, drop_invisible=True) for t in v)

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, v: object) -> dict[str, str]:
        if not isinstance(v, dict) or len(v) > 20:
            raise InvalidInput("observation.metadata: must be a mapping of at most 20 entries")
        return {
            check_name(k, "observation.metadata", 40): check_name(str(x), "observation.metadata", 500)
            for k, x in v.items()
        }


class ClaimRecord(_Record):
    """A statement asserted by a source, with its basis and optional supersession/contradiction targets."""

    statement: StatementSpec
    source: SourceSpec
    text: str = ""
    concepts: tuple[ConceptSpec, ...] = ()
    derived_from: tuple[str, ...] = ()
    supersedes: tuple[StatementLink, ...] = ()
    contradicts: tuple[StatementLink, ...] = ()
    created_at: int | None = None

    @field_validator("derived_from", mode="before")
    @classmethod
    def _basis(cls, v: object) -> tuple[str, ...]:
        if not isinstance(v, (list, tuple)) or len(v) > MAX_ITEMS:
            raise InvalidInput(f"claim.derived_from: must be a list of at most {MAX_ITEMS} ids")
        return tuple(check_id(x, "claim.derived_from") for x in v)

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: object) -> str:
        if v == "":
            return ""
        return check_text(v, "claim.text")
