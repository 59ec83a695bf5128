"""Data types of the vector store and the checks every row passes before it is written."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemonet.model.errors import InvalidInput
from mnemonet.settings import Settings

KINDS = frozenset({"observation", "statement", "concept", "summary"})
REEMBED_HINT = "re-embed everything with `python run_node.py reembed`"
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class DimensionMismatch(InvalidInput):
    """A vector or model does not match the one the index was built for."""


@dataclass(frozen=True)
class VectorItem:
    """One indexed text, keyed by its graph id.

    ``context`` is text the vector sees but keyword search and hits do not
    (e.g. the turn a reply answers): the vector is ``contextual_vector`` of
    the text's and the context's embeddings, so a re-embed reproduces it.
    ``vector`` None: a keyword-only row (``model`` empty), found by its words
    and through the graph, never by k-NN.
    """

    id: str
    kind: str
    text: str
    model: str
    vector: Sequence[float] | None
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)
    context: str = ""


def contextual_vector(
    own: Sequence[float] | np.ndarray, context: Sequence[float] | np.ndarray | None, own_chars: int,
    context_chars: int,
) -> list[float]:
    """A text's vector in its context: the two embeddings averaged by length, then normalised.

    Embedders pool over tokens, so this is the weight each part has in a vector of the two texts
    embedded as one, without embedding the context again: a turn's context is the turn before,
    embedded moments earlier (bench/README.md "Ingest" measures what it keeps of recall).
    """
    if context is None or context_chars <= 0:
        return [float(x) for x in own]
    mixed = own_chars * np.asarray(own, dtype=np.float64) + context_chars * np.asarray(context, dtype=np.float64)
    norm = float(np.linalg.norm(mixed))
    return (mixed / norm).tolist() if norm > 0 else [float(x) for x in own]


@dataclass(frozen=True)
class VectorHit:
    """A search result with why it matched: its rank in each list (1-based, None if absent)."""

    id: str
    kind: str
    text: str
    score: float
    vector_rank: int | None
    keyword_rank: int | None
    created_at: int
    metadata: dict[str, Any]


def tie_order(vector_rank: int | None, keyword_rank: int | None, created_at: int, item_id: str) -> tuple[Any, ...]:
    """How hits of equal score are ordered: by what they matched, not by their ids.

    The better rank in the dense list first, then in the keyword list, then the older item; the id
    only if all of that is equal. Ids are random (observations) or derive from the space (keyed
    items), so ordering ties by id made the same memory rank differently in another space or store.
    """
    missing = float("inf")
    return (vector_rank or missing, keyword_rank or missing, created_at, item_id)


def quote_schema(schema: str) -> str:
    """Return the schema as a quoted SQL identifier, refusing anything but ``[a-z_][a-z0-9_]*``."""
    if not isinstance(schema, str) or not _SCHEMA_RE.match(schema):
        raise InvalidInput(f"schema: {schema!r} must match {_SCHEMA_RE.pattern}")
    return f'"{schema}"'


def as_vector(vector: Sequence[float], field_name: str) -> np.ndarray:
    """A float32 copy of ``vector``; refuses non-numeric, non-finite, empty or zero vectors."""
    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field_name}: expected a sequence of numbers") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInput(f"{field_name}: expected a non-empty one-dimensional sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{field_name}: contains NaN or infinity")
    if not float(np.dot(arr, arr)) > 0.0:
        raise InvalidInput(f"{field_name}: zero vector has no direction for cosine search")
    return arr


def check_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """Validate a kinds filter; None means all kinds."""
    if kinds is None:
        return None
    if isinstance(kinds, str) or not kinds:
        raise InvalidInput(f"kinds: expected a non-empty list drawn from {sorted(KINDS)}")
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InvalidInput(f"kinds: unknown kind(s) {bad}; expected {sorted(KINDS)}")
    return list(kinds)


def check_since(since: int | None) -> int | None:
    """Validate a created_at lower bound (epoch ms)."""
    if since is None:
        return None
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise InvalidInput("since: expected a non-negative epoch-milliseconds integer")
    return since


def check_k(k: int, settings: Settings) -> int:
    """Validate a result count."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= settings.vector_max_k:
        raise InvalidInput(f"k: expected an integer from 1 to {settings.vector_max_k} (setting vector_max_k)")
    return k


def check_query(query: str, settings: Settings) -> str:
    """Validate a keyword query text."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query: must be a non-empty string")
    if len(query) > settings.max_text_chars:
        raise InvalidInput(f"query: longer than {settings.max_text_chars} characters (setting max_text_chars)")
    return query


def check_item(item: VectorItem, settings: Settings, i: int) -> tuple[np.ndarray | None, str]:
    """Validate one row; return its vector (None for a keyword-only row) and its metadata as JSON."""
    where = f"items[{i}]"
    if not isinstance(item, VectorItem):
        raise InvalidInput(f"{where}: expected a VectorItem, got {type(item).__name__}")
    if not isinstance(item.id, str) or not item.id.strip() or len(item.id) > settings.vector_max_id_chars:
        raise InvalidInput(
            f"{where}.id: must be a non-empty string of at most {settings.vector_max_id_chars} characters")
    if item.kind not in KINDS:
        raise InvalidInput(f"{where}.kind: {item.kind!r} is not one of {sorted(KINDS)}")
    if not isinstance(item.text, str) or not item.text.strip():
        raise InvalidInput(f"{where}.text: must be a non-empty string")
    if len(item.text) > settings.max_text_chars:
        raise InvalidInput(f"{where}.text: longer than {settings.max_text_chars} characters (setting max_text_chars)")
    if not isinstance(item.context, str) or len(item.context) > settings.max_text_chars:
        raise InvalidInput(f"{where}.context: must be a string of at most {settings.max_text_chars} characters")
    if item.vector is None:
        if item.model != "" or item.context:
            raise InvalidInput(f"{where}: a keyword-only row (no vector) has no model and no context")
    elif not isinstance(item.model, str) or not item.model.strip():
        raise InvalidInput(f"{where}.model: must be a non-empty string")
    if isinstance(item.created_at, bool) or not isinstance(item.created_at, int) or item.created_at < 0:
        raise InvalidInput(f"{where}.created_at: expected a non-negative epoch-milliseconds integer")
    if not isinstance(item.metadata, dict):
        raise InvalidInput(f"{where}.metadata: expected a dict")
    try:
        meta = json.dumps(item.metadata, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}.metadata: not JSON-serialisable ({exc})") from exc
    if len(meta) > settings.vector_max_metadata_chars:
        raise InvalidInput(
            f"{where}.metadata: {len(meta)} characters of JSON exceed {settings.vector_max_metadata_chars} "
            "(setting vector_max_metadata_chars)"
        )
    return (None if item.vector is None else as_vector(item.vector, f"{where}.vector")), meta


def mismatch(what: str, got: object, model: str, dimension: int) -> DimensionMismatch:
    """The error for a vector or model the index was not built for, with the way out."""
    return DimensionMismatch(
        f"{what} {got!r} does not match the vector index (model {model!r}, dimension {dimension}); "
        f"one index holds one model's vectors: {REEMBED_HINT}, or configure the embedder the index was built with"
    )

