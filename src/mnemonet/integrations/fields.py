"""Structured values carried in an observation's metadata, exactly as given.

Metadata is a mapping of at most 20 strings of at most 500 characters each, with runs of whitespace
collapsed (``ObservationRecord``). A JSON value is written with ``%`` and every whitespace character
escaped as ``%XXXX``, so it survives the collapse, and cut into pieces under numbered keys.
"""

from __future__ import annotations

import json
import re
from typing import Any

PIECE_CHARS = 500  # the most one metadata value holds
_ESCAPED = re.compile(r"%([0-9A-F]{4})")


def escape(text: str) -> str:
    """``text`` with ``%`` and whitespace as ``%XXXX``: no whitespace left to collapse."""
    return "".join(f"%{ord(c):04X}" if c == "%" or c.isspace() else c for c in text)


def unescape(text: str) -> str:
    """The text ``escape`` was given."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def pieces(text: str, limit: int = PIECE_CHARS) -> list[str]:
    """``escape(text)`` cut into pieces of at most ``limit`` characters, never inside an escape."""
    out: list[str] = []
    current = ""
    for c in text:
        part = escape(c)
        if len(current) + len(part) > limit:
            out.append(current)
            current = ""
        current += part
    return [*out, current] if current or not out else out


def put_json(metadata: dict[str, str], prefix: str, value: Any, most_pieces: int) -> None:
    """Write ``value`` as JSON under ``prefix0``, ``prefix1`` ...; ``ValueError`` if it needs more pieces."""
    cut = pieces(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if len(cut) > most_pieces:
        raise ValueError(f"value too large to keep with a memory: {len(cut)} pieces of {PIECE_CHARS} characters "
                         f"escaped, at most {most_pieces}")
    metadata.update({f"{prefix}{n}": piece for n, piece in enumerate(cut)})


def get_json(metadata: dict[str, str], prefix: str) -> Any:
    """The value ``put_json`` wrote under ``prefix``; ``KeyError`` if there is none."""
    cut: list[str] = []
    while (piece := metadata.get(f"{prefix}{len(cut)}")) is not None:
        cut.append(piece)
    if not cut:
        raise KeyError(prefix)
    return json.loads("".join(unescape(piece) for piece in cut))
