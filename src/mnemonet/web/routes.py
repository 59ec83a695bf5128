"""The dashboard's routes on a node's app.

- ``GET /`` redirects to ``GET /ui``: the page (static HTML, JS and CSS under ``/ui/static``, no auth:
  it holds no data).
- ``WS /v1/ws``: a snapshot on connect, then ``member``, ``members``, ``event`` and ``store`` updates, until
  its token is revoked or expires (closed with ``CLOSE_UNAUTHORIZED``, as for a wrong token).
- ``GET /v1/graph?concept=NAME``: statements about a concept, each with its status
  (``current``, ``contradicted``, ``superseded`` or ``retracted``) and the observations it stands on; without
  ``concept``, the known concept names.
- ``GET /v1/stats``: the store's counters.

Each shows one memory space: ``?space=NAME`` (on the WebSocket too), else the token's first.

Data routes take a client token with the ``read`` scope like the client API (``Authorization:
Bearer``), or as the ``key`` query parameter on the WebSocket, which browsers cannot give headers.

The page corrects memory through the client API itself, ``POST /v1/retract`` and ``POST /v1/forget``
(``p2p/server.py``), with the token it holds: the same scopes, owners and spaces (``p2p/authority.py``), the
same refusal of other sites' pages (``p2p/web_guard.py``). The write events those calls flood (``retraction``,
``erasure``) reach every open dashboard through the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError

from mnemonet.model.errors import MnemonetError, describe
from mnemonet.model.ids import is_observation_id
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.model.views import StatementView
from mnemonet.web.auth import bearer_token, may_read, readable_space, request_token, same_origin
from mnemonet.web.hub import RESYNC, DashboardClient, DashboardHub, DashboardNode, TooManyClients

log = logging.getLogger(__name__)

STATIC = Path(str(resources.files("mnemonet.web") / "static"))

# WebSocket close codes the page understands (4000-4999 are free for applications).
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN_ORIGIN = 4403
CLOSE_TOO_MANY = 4429
CLOSE_FORBIDDEN_SPACE = 4400


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def statement_status(statement: StatementView) -> str:
    """How the dashboard draws a statement: retracted (struck through) wins over superseded (greyed), which
    wins over contradicted (highlighted)."""
    if statement.withdrawn:
        return "retracted"
    if statement.superseded_by:
        return "superseded"
    if statement.contradicted_by:
        return "contradicted"
    return "current"


def mount_dashboard(app: FastAPI, node: DashboardNode) -> DashboardHub:
    """Add the page and its endpoints to ``app``; returns the hub that feeds the WebSocket."""
    hub = DashboardHub(node)
    settings = node.settings

    async def unauthorised(request: Request) -> JSONResponse | None:
        if await may_read(node.tokens, bearer_token(request.headers)):
            return None
        return _error(401, "unauthorized", "missing or wrong 'Authorization: Bearer <token with read scope>'")

    app.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse("/ui")  # browsers keep the #key=... fragment across the redirect

    @app.get("/ui", include_in_schema=False)
    async def page() -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

    async def space_of(request: Request, asked: str | None) -> str | None:
        # None is the default space: the one every MemoryAPI reads when named none.
        space = await readable_space(node.tokens, bearer_token(request.headers), asked)
        return None if space == DEFAULT_SPACE else space

    @app.get("/v1/stats")
    async def stats(request: Request, space: str | None = None) -> JSONResponse:
        """The store's counters (bearer token, read scope)."""
        if (denied := await unauthorised(request)) is not None:
            return denied
        try:
            return JSONResponse({"result": await node.client.stats(space=await space_of(request, space))})
        except MnemonetError as exc:
            return _error(exc.status, exc.code, exc.message)

    @app.get("/v1/graph")
    async def graph(request: Request, concept: str | None = None, space: str | None = None) -> JSONResponse:
        """Statements about ``concept`` with their status; without it, known concept names (read token)."""
        if (denied := await unauthorised(request)) is not None:
            return denied
        try:
            in_space = await space_of(request, space)
            if concept is None:
                concepts = await node.client.get_concepts(settings.ui_graph_limit, space=in_space)
                return JSONResponse({"result": {"concepts": [c.name for c in concepts]}})
            name = concept.strip()
            if not name or len(name) > settings.max_name_chars:
                return _error(400, "bad_input", f"concept: must be 1..{settings.max_name_chars} characters")
            statements = await node.client.get_concept_statements(name, settings.ui_graph_limit, space=in_space)
        except (MnemonetError, ValidationError) as exc:  # a bug's ValueError is not the caller's to read
            wire = describe(exc)
            return _error(wire.status, wire.code, wire.message)
        views = [{**s.model_dump(mode="json"), "sentence": s.sentence(), "status": statement_status(s),
                  "observations": [i for i in s.derived_from if is_observation_id(i)]}  # what "forget" can erase
                 for s in statements]
        return JSONResponse({"result": {"concept": name, "statements": views}})

    @app.websocket("/v1/ws")
    async def live(websocket: WebSocket) -> None:
        # Accept first so the page sees why it was refused in the close code.
        await websocket.accept()
        if not same_origin(websocket.headers):
            await websocket.close(CLOSE_FORBIDDEN_ORIGIN, "origin is not this node")
            return
        credential = request_token(websocket.headers, websocket.query_params)
        if not await may_read(node.tokens, credential):
            await websocket.close(CLOSE_UNAUTHORIZED, "missing or wrong token (read scope)")
            return
        try:
            space = await readable_space(node.tokens, credential, websocket.query_params.get("space"))
        except MnemonetError as exc:
            await websocket.close(CLOSE_FORBIDDEN_SPACE, exc.message[:120])
            return
        try:
            client = hub.connect(space)
        except TooManyClients as exc:
            await websocket.close(CLOSE_TOO_MANY, str(exc))
            return
        try:
            await _serve(websocket, hub, client, node.tokens.until_invalid(credential))
        finally:
            await hub.disconnect(client)

    return hub


async def _serve(websocket: WebSocket, hub: DashboardHub, client: DashboardClient,
                 token_ends: Coroutine[Any, Any, str]) -> None:
    """Send the snapshot, then queued updates, until the browser goes away or its token stops being valid
    (revoked or expired: the socket is closed, ``CLOSE_UNAUTHORIZED``, saying which)."""
    sender = asyncio.create_task(_send_updates(websocket, hub, client))
    receiver = asyncio.create_task(_drain(websocket))
    watcher = asyncio.create_task(token_ends)
    try:
        await asyncio.wait({sender, receiver, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sender, receiver, watcher):
            task.cancel()
        await asyncio.gather(sender, receiver, watcher, return_exceptions=True)
    if not watcher.cancelled() and watcher.exception() is None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):  # gone meanwhile: nothing to close
            await websocket.close(CLOSE_UNAUTHORIZED, watcher.result()[:120])
        return
    if not sender.cancelled() and (exc := sender.exception()) is not None \
            and not isinstance(exc, (WebSocketDisconnect, RuntimeError, OSError)):  # closed under our feet
        log.warning("dashboard connection failed: %r", exc)


async def _send_updates(websocket: WebSocket, hub: DashboardHub, client: DashboardClient) -> None:
    await websocket.send_json(await hub.snapshot(client.space))
    while True:
        message = await client.next_message()
        if message is RESYNC:
            message = await hub.snapshot(client.space)
        await websocket.send_json(message)


async def _drain(websocket: WebSocket) -> None:
    # The page sends nothing; reading is how a closed connection is noticed.
    while (await websocket.receive())["type"] != "websocket.disconnect":
        pass
