"""The formats a bulk import takes (``run_node.py import``, ``POST /v1/import``): numbered items to observe.

Every item carries the line (or, for LoCoMo, the turn) it came from, so a
refusal names where to look, and the idempotency key of ``file identity +
line`` makes a re-run after a crash write nothing twice and skip nothing.
The command line and the HTTP method parse the same text the same way, so
the same file gets the same keys through either.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from mnemonet.model.records import lone_surrogate

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


def content_identity(data: bytes) -> str:
    """SHA-256 of a file's bytes: the same file gives the same keys wherever it lies; an edited one, new keys."""
    return hashlib.sha256(data).hexdigest()[:32]


def import_key(identity: str, line: int) -> str:
    """The idempotency key of one imported line."""
    return f"import:{identity}:{line}"


def session_chains(items: Iterable[Item | Unreadable], key: str) -> list[list[Item | Unreadable]]:
    """The items as chains, each written one line after another while the chains go side by side.

    The lines of one session (metadata ``key``, the node's ``search_session_key``) form one chain in
    file order: a turn is then recorded after the turn before it, so it is embedded with that turn as
    its context and its neighbours in search are the turns around it, as when the conversation was
    observed turn by turn. Written concurrently, a turn would often go before its predecessor was
    recorded and lose both. Every other line is a chain of its own. Chains come in the order of their
    first line.
    """
    chains: list[list[Item | Unreadable]] = []
    by_session: dict[str, list[Item | Unreadable]] = {}
    for item in items:
        session = item.metadata.get(key) if isinstance(item, Item) else None
        if session is None:
            chains.append([item])
        elif session in by_session:
            by_session[session].append(item)
        else:
            by_session[session] = [item]
            chains.append(by_session[session])
    return chains


def parse_items(text: str, fmt: Format, *, text_field: str = "text", source_field: str = "source",
                default_source: str = "import") -> Iterator[Item | Unreadable]:
    """The items of a file's text in order, with unreadable lines in their place (``ValueError`` for a
    LoCoMo text that is not LoCoMo as a whole)."""
    if fmt == "jsonl":
        return _jsonl(text, text_field, source_field, default_source)
    if fmt == "chat":
        return _chat(text, default_source)
    if fmt == "locomo":
        return _locomo(text)
    raise ValueError(f"format: expected one of {FORMATS}, got {fmt!r}")


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # Numbered as a file read in text mode numbers them (universal newlines), not as str.splitlines(),
    # which also splits at form feeds and other separators: the keys must not depend on who reads the file.
    # A byte order mark (files saved on Windows) is no part of the first line's speaker or text.
    text = text.removeprefix("\ufeff")
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if line.strip():
            yield number, line


def _jsonl(text: str, text_field: str, source_field: str, default_source: str) -> Iterator[Item | Unreadable]:
    for number, line in _lines(text):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Unreadable(number, f"not JSON: {exc.msg}")
            continue
        except RecursionError:  # deeper than the parser goes: this line's shape, not a fault of the node
            yield Unreadable(number, "not JSON this node reads: nested too deeply")
            continue
        if not isinstance(row, dict) or not isinstance(row.get(text_field), str):
            yield Unreadable(number, f"no string field {text_field!r}")
            continue
        source = row.get(source_field)
        source = source if isinstance(source, str) and source else default_source
        if lone_surrogate(row[text_field]) or lone_surrogate(source):
            # An escape such as "\\ud800" is valid JSON but no text: no store can encode it.
            yield Unreadable(number, "text or source holds a lone surrogate (U+D800-U+DFFF are not text)")
            continue
        yield Item(number, row[text_field], source)


def _chat(text: str, default_source: str) -> Iterator[Item | Unreadable]:
    """``Speaker: text`` per line; a line without a speaker is said by ``default_source``."""
    for number, line in _lines(text):
        m = _CHAT_LINE.match(line)
        yield Item(number, m.group(2), m.group(1)) if m else Item(number, line.strip(), default_source)


def _locomo(text: str) -> Iterator[Item | Unreadable]:
    """Every turn of every conversation, numbered from 1 in file order; metadata as the retrieval bench keeps it."""
    try:
        samples = json.loads(text)
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
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # one JSON document
        raise ValueError(f"not a LoCoMo file ({type(exc).__name__}: {exc})") from None
    yield from out
