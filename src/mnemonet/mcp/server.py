"""``mnemonet mcp``: an MCP server (stdio) that reaches the memory through the nodes' HTTP API with a token.

Why a client and not a peer: a peer holds the cluster key, which makes and
revokes tokens and signs every envelope, and an MCP config sits in every
agent's settings file. As a client the server holds only a token, so a leaked
config leaks exactly that token's scopes, revocable on its own. It keeps
working when one node dies by calling the next of its URLs (``--url A,B``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

from mnemonet.mcp.tools import MemoryTools
from mnemonet.model.api import ClaimResult, MemoryAPI, ObserveResult, RetractResult
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.tokens import claimed_expiry, claimed_scopes
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
mnemonet is a shared, append-only memory for a team of agents and their users.
Write what you learn with `observe` (things seen or said) and `claim` (your own conclusions).
Read with `remember` for a direct answer, or `search` then `load` to browse: search returns
compact hits (id, kind, score, one line), load returns the full items with provenance.
Start a session with `brief` (what memory holds now, what is in conflict, what changed), or `recent` to
catch up, and check `contradictions` before relying on a fact.
Nothing is overwritten: a newer statement supersedes an older one, conflicts stay visible;
take a mistake back with `retract`. Every tool takes an optional `space` (a team's own memory);
leave it out to use your token's first space."""

DESCRIPTIONS = {
    "observe": (
        "Record something that happened or that someone said, in plain language "
        "(e.g. 'the user prefers morning meetings', 'the nightly build failed on test_io'). "
        "Use it for raw facts you witnessed or were told; mnemonet extracts statements from the text. "
        "Returns the observation id and the extracted statements. Pass idempotency_key to make retries safe."
    ),
    "claim": (
        "Assert a conclusion or belief of your own as one statement (e.g. 'Alice leads the payments team'), "
        "citing the ids it rests on in `basis` when you have them. To flag a conflict between two existing "
        "statements, claim 'STATEMENT A contradicts STATEMENT B' with their sentences. "
        "Use observe for raw input, claim for what you inferred."
    ),
    "retract": (
        "Take back a statement or observation that was wrong (yours or one you were told to fix), by its id "
        "from remember/search/recent, saying why. Nothing is deleted: the retraction is recorded, and the item "
        "(and statements resting only on it) is no longer current, answered or used as a basis. Retrying is safe."
    ),
    "remember": (
        "Ask the memory a question in natural language and get a short written answer, the ids it cites, "
        "and any open contradictions that bear on it. Use it when you want an answer; "
        "use search + load when you want to browse the underlying items yourself."
    ),
    "search": (
        "Step 1 of 2 for browsing memory: hybrid (meaning + keyword) search over observations, statements, "
        "concepts and summaries. Returns compact hits only: id, kind, score and one line of text, best first. "
        "Then call load with the ids you actually need."
    ),
    "load": (
        "Step 2 of 2: the full items for ids from search, recent or remember's cited list: text or "
        "subject/predicate/object, confidence, source, derived_from, and what supersedes or contradicts it. "
        "Ids not found are listed in `missing`."
    ),
    "recent": (
        "The newest observations and statements, newest first. Use it at the start of a task to catch up "
        "on what other agents and the user recorded lately."
    ),
    "brief": (
        "What a new session should know, in one short text within a token budget: the current facts about a "
        "subject (or, with no subject, about the team's most recent and most used subjects), the open conflicts "
        "(rely on neither side), what changed in the last `since_hours`, and the most used concepts. Only current "
        "facts: what was replaced or taken back is never stated as a fact. Every line cites short ids for load. "
        "Call it at the start of a session."
    ),
    "contradictions": (
        "Open contradictions: pairs of current statements that conflict, with sources and confidence. "
        "Check before relying on a fact; resolve one by observing or claiming the correct statement."
    ),
}


def build_mcp_server(memory: MemoryAPI, settings: Settings) -> MCPServer:
    """An MCP server whose tools call ``memory`` (any ``MemoryAPI``)."""
    tools = MemoryTools(memory, settings)
    level = settings.log_level.upper()
    server: MCPServer = MCPServer(
        "mnemonet", title="mnemonet shared memory", instructions=INSTRUCTIONS,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "INFO",  # type: ignore[arg-type]
    )
    for name, description in DESCRIPTIONS.items():
        server.add_tool(getattr(tools, name), name=name, description=description)
    return server


class _SourceFromToken(HttpMemoryClient):
    """For a token without ``speak-for``: writes go out without ``source``, so the node records the token's name.

    The node refuses any other source from such a token; sending the tool's ``source`` ("agent", "user")
    would fail every write, while the token's name is who wrote it anyway.
    """

    async def observe(self, text: str, source: str | None = None, *, idempotency_key: str | None = None,
                      metadata: dict[str, str] | None = None, space: str | None = None,
                      defer_extraction: bool = False, writer: str = "") -> ObserveResult:
        return await super().observe(text, None, idempotency_key=idempotency_key, metadata=metadata, space=space,
                                     defer_extraction=defer_extraction)

    async def claim(self, text: str, source: str | None = None, *, idempotency_key: str | None = None,
                    basis: list[str] | None = None, space: str | None = None, writer: str = "") -> ClaimResult:
        return await super().claim(text, None, idempotency_key=idempotency_key, basis=basis, space=space)

    async def retract(self, id: str, reason: str, source: str | None = None, *,
                      space: str | None = None, any_source: bool = False) -> RetractResult:
        return await super().retract(id, reason, None, space=space)


def node_client(settings: Settings, on_refused: Callable[[str], None] | None = None) -> HttpMemoryClient:
    """The HTTP client of ``settings.node_url`` with ``settings.token``; speaks for others only if the token may."""
    urls = [u for u in settings.node_url.split(",") if u.strip()]
    scopes = claimed_scopes(settings.token) if settings.token else None
    # No token: a keyless node treats a local caller as trusted with every scope, speak-for included.
    speaks_for = not settings.token or (scopes is not None and "speak-for" in scopes)
    cls = HttpMemoryClient if speaks_for else _SourceFromToken
    return cls(urls, settings.token, timeout=settings.request_timeout, on_refused=on_refused)


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout against the nodes of ``settings.node_url`` until EOF or a signal, or until its
    token stops being valid: then the session is closed, the process ending with ``TOKEN_ENDED``.

    The token expires at the second its claims say. A revocation reaches this process when a node refuses
    the token as revoked, on the session's next call (it holds nothing between calls): that call is answered
    with the refusal if it can be before the session ends. A token never valid here (another cluster's,
    malformed) is not a session to close: each call answers why, so its user can fix the configuration.
    """
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[str] = loop.create_future()

    def end(why: str) -> None:
        if not ended.done():
            ended.set_result(why)

    expires = claimed_expiry(settings.token) if settings.token else None
    timer = None if expires is None else loop.call_later(max(0.0, expires - time.time()), end, "token expired")
    async with node_client(settings, lambda why: end(why) if why in _SESSION_ENDS else None) as memory:
        log.info("mcp server calling %s", settings.node_url)
        serving = asyncio.create_task(build_mcp_server(memory, settings).run_stdio_async())
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, serving.cancel)
        try:
            # A signal cancels only the serving task, not this coroutine.
            either: list[asyncio.Future[Any]] = [serving, ended]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if ended.done():
                _end_session(ended.result())
            if not serving.cancelled():
                serving.result()  # re-raise why serving failed
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if timer is not None:
                timer.cancel()
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)


TOKEN_ENDED = 3  # the exit status of a session its token ended (revoked or expired)


def _end_session(why: str) -> None:
    # The process ends here: the MCP SDK reads stdin in a thread that no cancellation interrupts, so serving
    # would wait for the client's next line. Ending closes stdout, and the client sees the session gone.
    log.warning("%s: this MCP session is closed (a valid token starts a new one)", why)
    logging.shutdown()
    os._exit(TOKEN_ENDED)


# The refusals (``TokenError`` messages) of a token that was valid and no longer is.
_SESSION_ENDS = frozenset({"token revoked", "token expired"})
