"""One bounded import request: every line of a file's text observed under its import key, each with its outcome.

The keys are those ``run_node.py import`` gives the same file
(``import:<identity>:<line>``), so a retried request, or a request after
the command line imported the file, finds what is written and writes the rest.
A line refused for its content (a secret, too long, its key used for other
text, a speaker the caller may not speak for) is reported with its number
and reason, and the others go on; a failure of the store itself fails the
request, and what it wrote stays written for the retry to find.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal

from mnemonet.model.api import ImportLine, ImportReport, ObserveResult
from mnemonet.model.errors import Conflict, InvalidInput
from mnemonet.model.records import check_name
from mnemonet.service.import_formats import (
    FORMATS,
    Item,
    Unreadable,
    content_identity,
    import_key,
    parse_items,
    session_chains,
)
from mnemonet.settings import Settings

# observe(text, source, key, metadata, defer_extraction)
Observe = Callable[[str, str, str, dict[str, str], bool], Awaitable[ObserveResult]]


async def import_text(
    observe: Observe, settings: Settings, content: object, fmt: object, *, text_field: str, source_field: str,
    default_source: str, as_source: str | None, defer_extraction: bool,
) -> ImportReport:
    """Observe each line of ``content`` (at most ``import_concurrency`` at once, the lines of one session one
    after another: ``session_chains``); the report in line order."""
    items = _parse(settings, content, fmt, text_field, source_field, default_source)
    identity = content_identity(content.encode("utf-8")) if isinstance(content, str) else ""
    slots = asyncio.Semaphore(settings.import_concurrency)

    async def one(item: Item | Unreadable) -> ImportLine:
        if isinstance(item, Unreadable):
            return ImportLine(line=item.line, status="unreadable", reason=item.reason)
        if as_source is not None and item.source != as_source:
            return ImportLine(line=item.line, status="refused", reason=f"source {item.source!r} is not this "
                              f"token's name {as_source!r} (needs the speak-for scope)")
        async with slots:
            try:
                result = await observe(item.text, item.source, import_key(identity, item.line), item.metadata,
                                       defer_extraction)
            except (InvalidInput, Conflict) as exc:  # this line's content: the others go on
                return ImportLine(line=item.line, status="refused", reason=str(exc))
        return ImportLine(line=item.line, status="ok" if result.created else "duplicate",
                          observation_id=result.observation_id, pending=result.pending)

    async def chain(chained: list[Item | Unreadable]) -> list[ImportLine]:
        return [await one(item) for item in chained]

    try:
        async with asyncio.TaskGroup() as group:  # a store failure stops the rest; what is written stays
            tasks = [group.create_task(chain(c)) for c in session_chains(items, settings.search_session_key)]
    except BaseExceptionGroup as failed:  # the boundary maps the failure itself (503, 504 ...), not a group
        raise failed.exceptions[0] from None
    lines = sorted((line for t in tasks for line in t.result()), key=lambda line: line.line)
    counts = {status: sum(line.status == status for line in lines)
              for status in ("ok", "duplicate", "refused", "unreadable")}
    return ImportReport(lines=lines, **counts)


def _parse(settings: Settings, content: object, fmt: object, text_field: str, source_field: str,
           default_source: str) -> list[Item | Unreadable]:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content: must be a non-empty string (the file's text)")
    if len(content) > settings.import_request_max_chars:
        raise InvalidInput(f"content: longer than {settings.import_request_max_chars} characters "
                           "(setting import_request_max_chars); send the file in parts")
    if fmt not in FORMATS:
        raise InvalidInput(f"format: must be one of {', '.join(FORMATS)}")
    form: Literal["jsonl", "locomo", "chat"] = fmt  # checked just above
    for value, field in ((text_field, "text_field"), (source_field, "source_field"),
                         (default_source, "default_source")):
        check_name(value, field)
    try:
        items = list(parse_items(content, form, text_field=text_field, source_field=source_field,
                                 default_source=default_source))
    except ValueError as exc:  # a LoCoMo text that is not LoCoMo as a whole
        raise InvalidInput(f"content: {exc}") from None
    if not items:
        raise InvalidInput("content: no line to import")
    if len(items) > settings.import_request_max_lines:
        raise InvalidInput(f"content: {len(items)} lines, at most {settings.import_request_max_lines} per request "
                           "(setting import_request_max_lines); send the file in parts")
    return items
