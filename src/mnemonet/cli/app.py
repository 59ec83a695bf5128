"""The interactive CLI attached to a started node: prompt (or script) in, rendered results out.

It speaks only ``MemoryAPI`` (the node's ``P2PMemoryClient``) plus the node's
own health document for ``/peers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeVar

from mnemonet.cli.console import LineReader, TerminalHistory, bounded_file_reader, terminal_modes_restored
from mnemonet.cli.session import CliSession
from mnemonet.model.api import MemoryAPI
from mnemonet.p2p.membership import Member, MemberState
from mnemonet.p2p.peer_access import reset_client_credential, set_client_credential
from mnemonet.settings import Settings

T = TypeVar("T")


class _Members(Protocol):
    def alive(self, capability: str | None = None) -> list[Member]: ...

    def add_listener(self, fn: Callable[[Member, MemberState | None], None]) -> None: ...


class CliNode(Protocol):
    """What the CLI uses of a started node (``PeerNode``): its client, health, settings and membership."""

    @property
    def client(self) -> MemoryAPI: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def membership(self) -> _Members: ...

    def health(self) -> dict[str, Any]: ...

_STOPPED: Any = object()
HISTORY_FILE = "cli_history"


def printer(out: TextIO) -> Callable[[str], None]:
    """Write one line and flush, so piped output shows as it happens."""

    def write(line: str) -> None:
        print(line, file=out, flush=True)

    return write


def log_to_file(path: Path) -> None:
    """Send the (JSON-lines) log to ``path`` instead of stderr, so it does not run through the prompt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setStream(open(path, "a", encoding="utf-8"))


async def _until(aw: Awaitable[T], stop: asyncio.Event) -> T:
    """``aw``'s result, or ``_STOPPED`` (and ``aw`` cancelled) if ``stop`` is set first."""
    task = asyncio.ensure_future(aw)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})  # let it unwind; its CancelledError is not ours to raise
    return task.result() if not task.cancelled() else _STOPPED


async def wait_for_store(node: CliNode, within: float, write: Callable[[str], None], stop: asyncio.Event) -> bool:
    """Wait (up to ``within`` seconds) until a live member has ``store``; say so if none came."""
    if node.membership.alive("store"):
        return True
    changed = asyncio.Event()
    node.membership.add_listener(lambda member, old: changed.set())
    write(f"waiting up to {within:g}s for a store peer to join ...")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not node.membership.alive("store") and not stop.is_set():
        remaining = deadline - loop.time()
        if remaining <= 0:
            write("no store peer yet: commands will fail until one joins")
            return False
        changed.clear()
        with contextlib.suppress(TimeoutError):
            await _until(asyncio.wait_for(changed.wait(), remaining), stop)
    return not stop.is_set()


async def attach_cli(node: CliNode, stop: asyncio.Event, script: Path | None = None, *,
                     stdin: TextIO | None = None, out: TextIO | None = None, credential: str = "") -> bool:
    """Run the CLI on a started node until ``/quit``, end of input, or ``stop`` (Ctrl-C).

    With ``script`` (a file, or ``-`` for stdin), or when stdin is not a terminal, lines come from
    there and are echoed after the prompt, so a transcript reads like an interactive session; the
    first command that fails stops it (what follows may rest on it: a space not made, a source not
    set). ``credential`` is a client token the session's calls carry (``--token``, or the demo
    owner's): the store checks the admin scope of routed admin calls on it. Returns False when a
    script stopped at a failed command (the process exits non-zero), True otherwise.
    """
    held = set_client_credential(credential)
    try:
        return await _run_cli(node, stop, script, stdin or sys.stdin, out or sys.stdout)
    finally:
        reset_client_credential(held)


async def _run_cli(node: CliNode, stop: asyncio.Event, script: Path | None, stdin: TextIO, out: TextIO) -> bool:
    write = printer(out)
    settings = node.settings
    interactive = script is None and stdin.isatty()
    await wait_for_store(node, settings.cli_store_wait, write, stop)
    history: TerminalHistory | None = None
    with contextlib.ExitStack() as cleanup:
        if interactive:
            history = TerminalHistory(settings.data_dir / HISTORY_FILE, settings.cli_history_size)
            history.load()
            cleanup.callback(history.save)
            cleanup.enter_context(terminal_modes_restored(stdin))
            reader = LineReader(input)
        else:
            stream = stdin if script is None or str(script) == "-" else cleanup.enter_context(
                open(script, encoding="utf-8", errors="replace"))  # noqa: ASYNC230 - once, before the first prompt
            reader = LineReader(bounded_file_reader(stream, settings.max_text_chars))
        session = CliSession(node.client, node.health, settings, write,
                             forget=history.forget if history is not None else None)
        write("type /help for commands, /quit to leave")
        number = 0
        while True:
            line = await _until(reader.read(session.prompt), stop)
            if line is _STOPPED:
                break
            if line is None:
                if interactive:
                    write("")  # Ctrl-D leaves the cursor after the prompt
                break
            number += 1
            if not interactive:
                write(session.prompt + line)
            if await _until(session.run_line(line), stop) in (False, _STOPPED):
                break
            if not interactive and session.failed:
                write(f"script stopped at line {number}: the command failed")
                return False
    return True
