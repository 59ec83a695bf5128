"""Small helpers the job modules of ``MemoryService`` share.

Checks of what a caller gives (a source's name, metadata, a list limit), the
statement and the sentence a triple makes, and the index entries of what is
written. Pure functions: no store, no model.
"""

from __future__ import annotations

import time
from typing import Literal

from mnemonet.llm.base import Triple
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import is_observation_id
from mnemonet.model.records import ObservationRecord, SourceSpec, StatementSpec, check_name
from mnemonet.model.secrets import check_no_secrets
from mnemonet.model.views import ObservationView, StatementView
from mnemonet.service.indexing import IndexEntry

MAX_LIMIT = 500
MAX_LOAD_IDS = 100


def source_spec(name: str, kind: Literal["user", "agent", "system"]) -> SourceSpec:
    """A source by name; names are stored and shown to every reader, so they are scanned for secrets too."""
    checked = check_name(name, "source")
    check_no_secrets(checked, "source")
    return SourceSpec(name=checked, kind=kind)


def worker_spec(source: str) -> SourceSpec:
    """A worker agent's source (``kind`` agent)."""
    return source_spec(source, "agent")


def checked_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
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


def check_limit(limit: int) -> int:
    """A caller's ``limit``: an integer from 1 to ``MAX_LIMIT``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit: must be an integer between 1 and {MAX_LIMIT}")
    return limit


def now_ms() -> int:
    return int(time.time() * 1000)


def statement_spec(statement_id: str, t: Triple) -> StatementSpec:
    """The statement a triple makes, under ``statement_id``."""
    return StatementSpec(
        id=statement_id, subject=t.subject, predicate=t.predicate, object=t.object,
        confidence=t.confidence, negated=t.negated, tense=t.tense, valid_at=t.valid_at, revision=t.revision,
    )


def sentence_of(t: Triple) -> str:
    """A triple as the sentence ``subject [not] predicate object``."""
    return f"{t.subject} {'not ' if t.negated else ''}{t.predicate.replace('_', ' ')} {t.object}"


def statement_entry(s: StatementView, derived_vectors: bool) -> IndexEntry:
    """``derived_vectors`` False: a statement standing on an observation says what the observation's text
    says, so it is found through that observation's vector and by its own words, without a vector."""
    on_observation = any(is_observation_id(d) for d in s.derived_from)
    return IndexEntry(s.id, "statement", s.sentence(), s.created_at, {"source": s.source or ""},
                      vector=derived_vectors or not on_observation)


def raw_entry(record: ObservationRecord) -> IndexEntry:
    """The index entry of an observation just written (its text, before any extraction)."""
    return observation_entry(ObservationView(
        id=record.id, text=record.text, created_at=record.created_at or now_ms(), source=record.source.name,
        metadata=record.metadata))


def observation_entry(o: ObservationView) -> IndexEntry:
    """An observation's index entry."""
    # Indexed as "<source>: <text>": who said it matters to questions (measured in bench/README.md,
    # the speaker prefix doubles dense recall@10 on LoCoMo).
    text = f"{o.source}: {o.text}" if o.source else o.text
    return IndexEntry(o.id, "observation", text, o.created_at, {"source": o.source or "", **o.metadata})
