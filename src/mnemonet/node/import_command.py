"""``run_node.py import FILE``: bulk import of a file into a running network through its HTTP API.

Lines are observed concurrently (``import_concurrency``), the lines of one
conversation session one after another in file order (``session_chains``: each
turn then gets the turn before it as its context, as when observed live), each with the
idempotency key ``import:<file sha256>:<line>``: a re-run after Ctrl-C or a
crash writes nothing twice and leaves no gap, because what is done answers
as already there. Lines the node refuses (a secret, too long, a speaker the
token may not speak for) are reported with their number and the import goes
on; a node that stops answering midway stops it, to be resumed by running it
again. A node that is not there at all, or a token it refuses, stops it
before the first line.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import httpx

from mnemonet.model.errors import InvalidInput
from mnemonet.model.spaces import check_space
from mnemonet.node.import_sources import file_identity, read_items
from mnemonet.service.import_formats import FORMATS, Item, Unreadable, import_key, session_chains
from mnemonet.settings import Settings, flag_type, load_settings

FLAGS = ("import_concurrency", "import_progress_interval", "import_max_retries", "import_retry_backoff")
# Statuses a retry may cure: the node is busy or restarting.
_RETRY = {429, 500, 502, 503, 504}


class ImportStopped(Exception):
    """The import cannot go on: ``resumable`` when a re-run of the same command resumes from here (the node
    stopped answering midway), not when it would stop the same way (no node at the URL, a refused token)."""

    def __init__(self, message: str, *, resumable: bool = True) -> None:
        super().__init__(message)
        self.resumable = resumable


@dataclass
class Tally:
    """What the import did so far."""

    total: int
    new: int = 0
    already: int = 0
    refused: int = 0
    unreadable: int = 0
    pending: int = 0  # written lines whose extraction the inference worker still has to do

    @property
    def done(self) -> int:
        return self.new + self.already + self.refused + self.unreadable


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run_node.py import", argument_default=argparse.SUPPRESS,
        description="Import a file into a running mnemonet network (resumable: re-run the same command).")
    parser.add_argument("file", type=Path, help="the file to import")
    parser.add_argument("--format", dest="fmt", choices=FORMATS, default="jsonl",
                        help="jsonl (one JSON object a line), locomo (LoCoMo JSON), chat ('Speaker: text' lines) "
                             "(default: jsonl)")
    parser.add_argument("--url", default="http://127.0.0.1:9000",
                        help="any node of the network (default: http://127.0.0.1:9000)")
    parser.add_argument("--token", default="", help="a client token with the write scope (env MNEMONET_TOKEN)")
    parser.add_argument("--text-field", default="text", help="jsonl: the field holding the text (default: text)")
    parser.add_argument("--source-field", default="source",
                        help="jsonl: the field naming the speaker (default: source)")
    parser.add_argument("--default-source", default="import",
                        help="the source of lines that name none (default: import)")
    parser.add_argument("--space", type=_space_arg, default=None,
                        help="the memory space to import into (the token must allow it); default: the token's first")
    parser.add_argument("--defer-extraction", action="store_true", default=False,
                        help="record each line at once and leave its extraction to the inference worker "
                             "(no model call per line; statements appear as the worker catches up)")
    for name in FLAGS:
        parser.add_argument("--" + name.removeprefix("import_").replace("_", "-"), dest=name, type=flag_type(name),
                            help=f"{Settings.model_fields[name].description} (env MNEMONET_{name.upper()})")
    return parser


def _space_arg(value: str) -> str:
    # Checked here so a typo stops the import before any line is sent, not at every line.
    try:
        return check_space(value, "--space")
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


class Progress:
    """A bar with rate and ETA redrawn in place on a terminal; a plain line per interval otherwise."""

    def __init__(self, tally: Tally, out: TextIO, interval: float) -> None:
        self.tally, self.out, self.interval = tally, out, interval
        self.started = time.monotonic()
        self.tty = out.isatty()

    def line(self) -> str:
        t = self.tally
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = t.done / elapsed
        eta = (t.total - t.done) / rate if rate > 0 else float("inf")
        eta_text = f"{int(eta // 60)}m{int(eta % 60):02d}s" if eta != float("inf") else "?"
        head = f"{t.done}/{t.total} lines"
        if self.tty:
            filled = int(30 * t.done / t.total) if t.total else 30
            head = f"[{'#' * filled}{'.' * (30 - filled)}] {head}"
        return f"{head}  {rate:.1f}/s  ETA {eta_text}  new {t.new}, already there {t.already}, refused {t.refused}"

    def show(self) -> None:
        print(("\r" + self.line()) if self.tty else self.line(), end="" if self.tty else "\n", file=self.out,
              flush=True)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.show()


async def _observe(
    http: httpx.AsyncClient, url: str, key: str, item: Item, settings: Settings, space: str | None, defer: bool
) -> httpx.Response:
    body: dict[str, object] = {"text": item.text, "source": item.source, "idempotency_key": key,
                               "metadata": item.metadata or None}
    if space is not None:  # none sent: the node's default (the token's first space)
        body["space"] = space
    if defer:
        body["defer_extraction"] = True
    delay = settings.import_retry_backoff
    for attempt in range(settings.import_max_retries + 1):
        try:
            resp = await http.post(f"{url}/v1/observe", json=body)
            if resp.status_code not in _RETRY:
                return resp
            why = f"HTTP {resp.status_code}"
        except httpx.TransportError as exc:
            why = f"{type(exc).__name__}: {exc}"
        if attempt == settings.import_max_retries:
            raise ImportStopped(f"line {item.line}: the node did not take it ({why})")
        await asyncio.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


async def _reach(http: httpx.AsyncClient, url: str) -> None:
    """One call before the first line, so a wrong ``--url`` is said at once rather than after every retry."""
    try:
        await http.get(f"{url}/health")
    except httpx.TransportError as exc:
        raise ImportStopped(f"no node at {url} ({type(exc).__name__}: {exc or 'no answer'})",
                            resumable=False) from None


def _line_refusal(resp: httpx.Response) -> bool:
    """A 403 about this line alone: it names a speaker the token may not speak for (the server's ``check_source``).
    Any other 403 (a scope or space the token lacks) would refuse every line."""
    return resp.status_code == 403 and "speak-for" in _error_text(resp)


def _error_text(resp: httpx.Response) -> str:
    try:
        return str(resp.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return resp.text[:200]


async def run_import(
    path: Path, fmt: str, url: str, token: str, settings: Settings, out: TextIO, err: TextIO, *,
    text_field: str = "text", source_field: str = "source", default_source: str = "import",
    space: str | None = None, defer_extraction: bool = False,
) -> Tally:
    """Import ``path``; progress to ``out``, refused and unreadable lines to ``err``. Raises ``ImportStopped``."""
    identity = file_identity(path)
    items = list(read_items(path, fmt, text_field=text_field, source_field=source_field,  # type: ignore[arg-type]
                            default_source=default_source))
    tally = Tally(total=len(items))
    progress = Progress(tally, out, settings.import_progress_interval)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    queue: asyncio.Queue[list[Item | Unreadable]] = asyncio.Queue()
    for chain in session_chains(items, settings.search_session_key):
        queue.put_nowait(chain)

    async def worker(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            for item in queue.get_nowait():
                await one(http, item)

    async def one(http: httpx.AsyncClient, item: Item | Unreadable) -> None:
        if isinstance(item, Unreadable):
            tally.unreadable += 1
            print(f"line {item.line}: unreadable: {item.reason}", file=err)
            return
        resp = await _observe(http, url.rstrip("/"), import_key(identity, item.line), item, settings,
                              space, defer_extraction)
        if resp.status_code == 200:
            result = resp.json()["result"]
            created = result.get("created", True)
            tally.pending += bool(result.get("pending"))
            tally.new, tally.already = tally.new + created, tally.already + (not created)
        elif resp.status_code in (401, 403) and not _line_refusal(resp):
            raise ImportStopped(f"the node refused the token: {_error_text(resp)}", resumable=False)
        elif 400 <= resp.status_code < 500:  # this line's content or speaker: report it and go on
            tally.refused += 1
            print(f"line {item.line}: refused: {_error_text(resp)}", file=err)
        else:
            raise ImportStopped(f"line {item.line}: HTTP {resp.status_code}: {_error_text(resp)}")

    ticker = asyncio.create_task(progress.run())
    try:
        async with httpx.AsyncClient(headers=headers, timeout=settings.request_timeout, trust_env=False) as http:
            await _reach(http, url.rstrip("/"))
            await asyncio.gather(*(worker(http) for _ in range(settings.import_concurrency)))
    finally:
        ticker.cancel()
        progress.show()
        if progress.tty:
            print(file=out)
    return tally


def main(argv: Sequence[str]) -> int:
    args = vars(build_parser().parse_args(argv))
    # --token wins over MNEMONET_TOKEN, read like every other setting (an empty flag means "not given").
    settings = load_settings(**{k: args.pop(k) for k in FLAGS if k in args}, token=args.pop("token") or None)
    path: Path = args["file"]
    if not path.is_file():
        print(f"import: no file {path}", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        tally = asyncio.run(run_import(
            path, args["fmt"], args["url"], settings.token, settings, sys.stdout, sys.stderr,
            text_field=args["text_field"], source_field=args["source_field"], default_source=args["default_source"],
            space=args["space"], defer_extraction=args["defer_extraction"]))
    except ImportStopped as exc:
        advice = "; run the same command again to resume" if exc.resumable else ""
        print(f"import stopped: {exc}{advice}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a file that is not of its --format as a whole (LoCoMo)
        print(f"import: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nimport interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    seconds = time.monotonic() - started
    written = tally.new + tally.already
    print(f"imported {written} of {tally.total} lines ({tally.new} new, {tally.already} already there), "
          f"{tally.refused} refused, {tally.unreadable} unreadable, in {seconds:.1f}s "
          f"({written / max(seconds, 1e-9):.1f}/s)")
    if tally.pending:
        print(f"{tally.pending} with extraction pending: the inference worker extracts them "
              "(a network needs an inference node for that)")
    if written == 0:  # a wrong --format, an empty file, every line refused: a script must see it failed
        why = ("the file has no lines to import" if not tally.total
               else f"none of the {tally.total} lines could be read as {args['fmt']} (is --format right?)"
               if tally.unreadable == tally.total
               else f"{tally.refused} lines refused, {tally.unreadable} unreadable, of {tally.total}")
        print(f"import: nothing imported: {why}", file=sys.stderr)
        return 1
    return 0
