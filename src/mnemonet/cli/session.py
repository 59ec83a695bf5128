"""One CLI conversation: runs parsed lines against ``MemoryAPI`` and writes what happened.

Every failure a user can cause or meet (bad input, a refused secret, no store
peer yet, a failing provider) becomes one line starting with ``error:``; a
traceback only ever goes to the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mnemonet.cli import render
from mnemonet.cli.commands import Command, parse_line
from mnemonet.llm.errors import LanguageModelError
from mnemonet.model.api import MemoryAPI
from mnemonet.model.errors import Forbidden, Unauthorised, is_expected
from mnemonet.model.secrets import SecretRefused
from mnemonet.model.spaces import DEFAULT_SPACE, InSpace, check_space
from mnemonet.p2p.errors import NoCapablePeer, P2PError, RequestTimeout
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 400  # one readable line, whatever a peer put in its message
CONSOLIDATION = "consolidation"  # the backlog entry /settle does not wait for


def describe_error(exc: Exception) -> str:
    """One line saying what went wrong and, where it helps, what to do."""
    detail = " ".join(str(exc).split())
    if isinstance(exc, Forbidden | Unauthorised):
        line = (f"refused: {detail} (a CLI node acts with the client token given as --token or MNEMONET_TOKEN; "
                "make one with run_node.py token create NAME --scopes ...)")
    elif isinstance(exc, NoCapablePeer):
        line = f"no capable peer yet ({detail}); is a store node running and joined? try again in a moment"
    elif isinstance(exc, RequestTimeout):
        line = f"timed out: {detail}"
    elif isinstance(exc, P2PError):
        line = f"network ({exc.code}): {detail}"
    elif _is_secret_refusal(exc):
        line = f"refused, nothing stored: {detail}"
    elif isinstance(exc, ValueError):
        line = f"invalid input: {detail}"
    elif isinstance(exc, LanguageModelError):
        line = f"language model failed: {detail}"
    else:
        line = f"{type(exc).__name__}: {detail}"
    line = "error: " + line
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


def _is_secret_refusal(exc: Exception) -> bool:
    # A remote refusal arrives as a plain ValueError carrying the same message.
    return isinstance(exc, SecretRefused) or "appears to contain a secret" in str(exc)


class CliSession:
    """Parses and runs CLI lines; ``source`` is who plain text is recorded as."""

    def __init__(self, api: MemoryAPI, health: Callable[[], dict[str, Any]], settings: Settings,
                 write: Callable[[str], None], source: str = "user",
                 forget: Callable[[str], None] | None = None) -> None:
        self._root_api = api
        self.api: MemoryAPI = api  # bound to the current space by /space
        self.space = DEFAULT_SPACE
        self.source = source
        self._health = health
        self._settings = settings
        self._write = lambda line: write(render.terminal_safe(line))  # stored text is other agents' text
        self._forget = forget  # drops a line from the input history (one the store refused as a secret)
        self.failed = False  # the last line's command failed (a script stops there)

    @property
    def prompt(self) -> str:
        """The prompt names the current source, and the space when it is not the default."""
        return f"{self.source}> " if self.space == DEFAULT_SPACE else f"{self.space}:{self.source}> "

    async def run_line(self, line: str) -> bool:
        """Run one line and write its output (``failed`` says whether it failed); ``False`` once the user asked
        to quit."""
        self.failed = False
        try:
            command = parse_line(line, self._settings.max_text_chars, self._settings.max_name_chars)
            if command is None:
                return True
            if command.name == "quit":
                return False
            if command.note:
                self._write(command.note)
            self._emit(await self._run(command))
        except Exception as exc:  # CancelledError is a BaseException and passes through
            self.failed = True
            if not isinstance(exc, ValueError) and not is_expected(exc):  # a bug: its stack goes to the log
                log.warning("cli command failed: %s", exc, exc_info=exc)
            if self._forget is not None and _is_secret_refusal(exc):
                self._forget(line)
            self._write(describe_error(exc))
        return True

    def _emit(self, lines: list[str]) -> None:
        for line in lines:
            self._write(line)

    async def _run(self, command: Command) -> list[str]:
        limit = self._settings.cli_list_limit
        name, arg = command.name, command.arg
        if name == "observe":
            return render.observed(await self.api.observe(arg, self.source), self.source)
        if name == "remember":
            return render.answer(await self.api.remember(arg, self.source))
        if name == "claim":
            return render.claimed(await self.api.claim(arg, self.source))
        if name == "retract":
            target, _, reason = arg.partition(" ")
            if not reason.strip():
                raise ValueError("retract: usage /retract ID REASON (say why it is taken back)")
            return render.retracted(await self.api.retract(target, reason.strip(), self.source))
        if name == "brief":
            return (await self.api.brief(arg or None)).text.splitlines()
        if name == "recent":
            return (render.observations("recent observations", await self.api.get_recent_observations(limit))
                    + render.statements("recent statements", await self.api.get_recent_statements(limit)))
        if name == "contradictions":
            return render.contradictions(await self.api.get_unresolved_contradictions(limit))
        if name == "concept":
            return await self._concept(arg, limit)
        if name == "peers":
            return render.peers(self._health())
        if name == "stats":
            return render.stats(await self.api.stats())
        if name == "settle":
            return await self._settle(arg)
        if name == "source":
            self.source = arg
            return [f"now speaking as {arg!r}"]
        if name == "space":
            return await self._switch_space(arg)
        if name == "spaces":
            return [render.space_line(s, current=s.name == self.space) for s in await self._root_api.spaces()]
        if name in ("share", "unshare"):
            change = self._root_api.share_space if name == "share" else self._root_api.unshare_space
            view = await change(self.space, check_space(arg), self.source)
            return [f"space {view.name!r} reads {', '.join(view.reads) or 'no other space'}"]
        if name == "help":
            return render.help_lines()
        raise AssertionError(f"unhandled command {name!r}")  # parse_line only returns known names

    async def _settle(self, arg: str) -> list[str]:
        """Wait until the writes' own work in the space is done (``stats`` backlog: vectors, extraction,
        inference, validation), at most the given or default seconds.

        Consolidation is left out: its worker waits for ``consolidation_quiet_period`` after the last write
        before it summarises, and a summary never answers, so waiting for it made every /settle after a
        write last that long. The workers run on other peers and only the store knows what they have left,
        so this polls it; a worker that never comes (no inference peer, say) shows as a timeout naming what
        is left.
        """
        settings = self._settings
        within = settings.cli_settle_timeout
        if arg:
            try:
                within = float(arg)
            except ValueError:
                within = -1.0
            if not 0 < within <= settings.cli_settle_max_timeout:  # also refuses nan and inf
                raise ValueError(f"settle: SECONDS must be a number above 0 and at most "
                                 f"{settings.cli_settle_max_timeout:g}")
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            backlog = (await self.api.stats()).get("backlog")
            if not isinstance(backlog, dict):
                return ["cannot settle: the store does not report its backlog"]
            left = {k: v for k, v in backlog.items() if v and k != CONSOLIDATION}
            waited = loop.time() - started
            if not left:
                if due := backlog.get(CONSOLIDATION) or 0:
                    return [f"settled: the writes' work is done ({waited:.1f}s); consolidation follows "
                            f"({due} concept{'s' if due != 1 else ''} due a summary)"]
                return [f"settled: the workers have nothing left to do ({waited:.1f}s)"]
            if waited >= within:
                what = ", ".join(f"{k}={v}" for k, v in left.items())
                return [f"not settled after {within:g}s: still pending {what}"]
            await asyncio.sleep(min(settings.cli_settle_poll_interval, within - waited))

    async def _switch_space(self, name: str) -> list[str]:
        """Work in ``name`` from now on; a CLI node is a peer of the cluster, so it may create the space."""
        name = check_space(name)
        known = {s.name for s in await self._root_api.spaces()}
        created = name not in known
        if created:
            await self._root_api.create_space(name, self.source)
        self.space = name
        self.api = self._root_api if name == DEFAULT_SPACE else InSpace(self._root_api, name)
        return [f"{'created space' if created else 'now in space'} {name!r}"]

    async def _concept(self, name: str, limit: int) -> list[str]:
        """Statements about ``name``; when there are none, the known concepts whose names contain it."""
        found = await self.api.get_concept_statements(name, limit)
        if found:
            return render.statements(f"statements about {name!r}", found)
        similar = [c.name for c in await self.api.get_concepts() if name.lower() in c.name.lower()][:limit]
        hint = f"; concepts with that in their name: {', '.join(similar)}" if similar else ""
        return [f"no statements about {name!r}{hint}"]
