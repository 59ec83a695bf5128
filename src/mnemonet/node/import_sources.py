"""Reading the files ``run_node.py import`` takes: each yields numbered items to observe.

Every item carries the line (or, for LoCoMo, the turn) it came from, so a
refusal names where to look, and the idempotency key of ``file identity +
line`` makes a re-run after a crash write nothing twice and skip nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Format = Literal["jsonl", "locomo", "chat"]
FORMATS: tuple[Format, ...] = ("jsonl", "locomo", "chat")
_CHAT_LINE = re.compile(r"^\s*([^:\n]{1,80}?)\s*:\s*(.+?)\s*$")


@dataclass(frozen=True)
class Item:
    """One observation to write: where it came from, its text, speaker and metadata."""

    line: int
    text: str
    source: str
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unreadable:
    """A line that is not an item of the format (reported, never silently skipped)."""

    line: int
    reason: str


def file_identity(path: Path) -> str:
    """SHA-256 of the file's bytes: the same file gives the same keys wherever it lies; an edited one, new keys."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:32]


def read_items(path: Path, fmt: Format, *, text_field: str = "text", source_field: str = "source",
               default_source: str = "import") -> Iterator[Item | Unreadable]:
    """The items of ``path`` in order, with unreadable lines in their place."""
    if fmt == "jsonl":
        return _jsonl(path, text_field, source_field, default_source)
    if fmt == "chat":
        return _chat(path, default_source)
    if fmt == "locomo":
        return _locomo(path)
    raise ValueError(f"format: expected one of {FORMATS}, got {fmt!r}")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                yield number, line.rstrip("\n")


def _jsonl(path: Path, text_field: str, source_field: str, default_source: str) -> Iterator[Item | Unreadable]:
    for number, line in _lines(path):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Unreadable(number, f"not JSON: {exc.msg}")
            continue
        if not isinstance(row, dict) or not isinstance(row.get(text_field), str):
            yield Unreadable(number, f"no string field {text_field!r}")
            continue
        source = row.get(source_field)
        yield Item(number, row[text_field], source if isinstance(source, str) and source else default_source)


def _chat(path: Path, default_source: str) -> Iterator[Item | Unreadable]:
    """``Speaker: text`` per line; a line without a speaker is said by ``default_source``."""
    for number, line in _lines(path):
        m = _CHAT_LINE.match(line)
        yield Item(number, m.group(2), m.group(1)) if m else Item(number, line.strip(), default_source)


def _locomo(path: Path) -> Iterator[Item | Unreadable]:
    """Every turn of every conversation, numbered from 1 in file order; metadata as the retrieval bench keeps it."""
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
        number = 0
        out = []
        for sample in samples:
            conv = sample["conversation"]
            sessions = sorted((int(m.group(1)), v) for k, v in conv.items()
                              if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list))
            for n, session in sessions:
                for turn in session:
                    number += 1
                    out.append(Item(number, str(turn["text"]), str(turn["speaker"]), {
                        "dia_id": str(turn["dia_id"]), "session": f"{sample['sample_id']}:session_{n}",
                        "session_date": str(conv.get(f"session_{n}_date_time", "")),
                    }))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # the whole file is one JSON document
        raise ValueError(f"{path}: not a LoCoMo file ({type(exc).__name__}: {exc})") from exc
    yield from out
