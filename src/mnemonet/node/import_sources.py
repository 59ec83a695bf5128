"""The files ``run_node.py import`` reads, parsed as ``POST /v1/import`` parses a body (``service/import_formats``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from mnemonet.service.import_formats import Format, Item, Unreadable, content_identity, parse_items


def file_identity(path: Path) -> str:
    """The identity of a file's bytes: its lines' idempotency keys start with it."""
    return content_identity(path.read_bytes())


def read_items(path: Path, fmt: Format, *, text_field: str = "text", source_field: str = "source",
               default_source: str = "import") -> Iterator[Item | Unreadable]:
    """The items of ``path`` in order, with unreadable lines in their place."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return parse_items(text, fmt, text_field=text_field, source_field=source_field, default_source=default_source)
