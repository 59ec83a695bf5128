"""The node's HTTP + WebSocket server: health, join, the peer endpoint and the client API.

Routes:
- ``GET /health`` (no auth): node id, capabilities, state, members, local dependencies.
- ``GET /metrics`` (no auth, like ``/health``): Prometheus text format.
- ``POST /v1/join``: a join envelope in, a welcome envelope out.
- ``POST /v1/peer`` / ``WS /v1/peer``: peer envelopes, one-shot or over a neighbour link.
- ``POST /v1/{method}``: the MemoryAPI for programs that are not peers, JSON keyword
  arguments in, ``{"result": ...}`` or ``{"error": {"code", "message"}}`` out. A saturated node
  answers 503 ``busy`` with ``Retry-After``; ``X-Request-Id`` (given or made) names the call in
  every log line of every node it reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import uvicorn
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, Response

from mnemonet.model.errors import Busy, describe, is_expected, status_of
from mnemonet.p2p.cluster import JOIN_PATH
from mnemonet.p2p.envelope import Kind
from mnemonet.p2p.limits import KeyedLimiter, retry_after_header
from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.metrics import CONTENT_TYPE, NodeMetrics
from mnemonet.p2p.routing import CLIENT_METHODS
from mnemonet.p2p.tracing import current_request_id, end_request, start_request
from mnemonet.p2p.transport import PEER_PATH, Transport

log = logging.getLogger(__name__)


class ServedNode(Protocol):
    """What the server needs from the node."""

    transport: Transport
    cluster_key: str
    max_body_bytes: int
    client_limits: KeyedLimiter
    metrics: NodeMetrics

    def health(self) -> dict[str, Any]:
        """The ``/health`` document."""
        ...

    async def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        """Route one MemoryAPI call."""
        ...


def _error(code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status_of(code))


def _busy(exc: Busy) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": exc.code, "message": exc.message, "retry_after": exc.retry_after}}, status_code=exc.status,
        headers={"retry-after": retry_after_header(exc.retry_after)},
    )


class BodyTooLarge(Exception):
    """A request body over the size limit."""


async def _read_body(request: Request, limit: int) -> bytes:
    # Read in chunks and stop at the limit, so a huge body is never held in memory.
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _authorised(request: Request, key: str) -> bool:
    if not key:
        return True  # no key configured: loopback-only development mode
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())


def create_app(node: ServedNode) -> FastAPI:
    """The FastAPI app of one node."""
    app = FastAPI(title="mnemonet node", version="1", description=__doc__)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Node id, capabilities, state, members as this node sees them, and local dependency states."""
        return node.health()

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(node.metrics.render(), media_type=CONTENT_TYPE)

    async def peer_envelope(request: Request, accept: Callable[[Kind], bool]) -> Response:
        try:
            raw = await _read_body(request, node.max_body_bytes)
        except BodyTooLarge:
            return _error("too_large", f"body exceeds {node.max_body_bytes} bytes")
        status, body = await node.transport.handle_http(raw, accept)
        media = "application/octet-stream" if status == 200 else "application/json"
        return Response(body, status_code=status, media_type=media)

    @app.post(JOIN_PATH, include_in_schema=False)
    async def join(request: Request) -> Response:
        return await peer_envelope(request, lambda kind: kind is Kind.JOIN)

    @app.post(PEER_PATH, include_in_schema=False)
    async def peer(request: Request) -> Response:
        return await peer_envelope(request, lambda kind: kind is not Kind.JOIN)

    @app.websocket(PEER_PATH)
    async def peer_link(websocket: WebSocket) -> None:
        await node.transport.accept(websocket)

    @app.post("/v1/{method}")
    async def client_call(method: str, request: Request) -> JSONResponse:
        """Call a MemoryAPI method with its keyword arguments as a JSON object (bearer cluster key)."""
        token = start_request(request.headers.get("x-request-id"))
        try:
            response = await _client_call(method, request)
        finally:
            request_id = current_request_id()
            end_request(token)
        response.headers["x-request-id"] = request_id or ""
        return response

    async def _client_call(method: str, request: Request) -> JSONResponse:
        if not _authorised(request, node.cluster_key):
            return _error("unauthorized", "missing or wrong 'Authorization: Bearer <cluster key>'")
        if method not in CLIENT_METHODS:
            return _error("unknown_method", f"unknown method {method!r}")
        try:
            raw = await _read_body(request, node.max_body_bytes)
        except BodyTooLarge:
            return _error("too_large", f"body exceeds {node.max_body_bytes} bytes")
        try:
            kwargs = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return _error("bad_input", f"body is not JSON: {exc}")
        if not isinstance(kwargs, dict):
            return _error("bad_input", "body must be a JSON object of keyword arguments")
        # Per client address: programs that are not peers share nothing else a limit could key on.
        client = request.client.host if request.client is not None else "unknown"
        try:
            node.client_limits.acquire(client)
        except Busy as exc:
            node.metrics.observe_request(method, "busy")
            return _busy(exc)
        try:
            result = await node.call(method, kwargs)
        except Busy as exc:
            return _busy(exc)
        except Exception as exc:
            if not is_expected(exc) and not getattr(exc, "_mnemonet_logged", False):
                log.exception("%s failed: %s", method, exc)
            # A bug answers 500 with the request id only: its text may carry internals (paths, queries, keys).
            wire = describe(exc, current_request_id())
            return _error(wire.code, wire.message)
        finally:
            node.client_limits.release(client)
        return JSONResponse({"result": method_spec(method).dump_result(result)})

    return app


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the node's process owns SIGINT/SIGTERM (graceful leave)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class HttpServer:
    """uvicorn serving one app in a task of the running event loop."""

    def __init__(self, app: FastAPI, host: str, port: int, *, ws_max_bytes: int, graceful_timeout: float) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._ws_max_bytes = ws_max_bytes
        self._graceful_timeout = graceful_timeout
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    async def start(self, started_within: float = 10.0) -> int:
        """Bind (port 0 picks a free one) and serve; returns the bound port."""
        sock = _bind(self._host, self._port)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, lifespan="off", log_level="warning", ws_max_size=self._ws_max_bytes,
            timeout_graceful_shutdown=max(1, int(self._graceful_timeout)), access_log=False,
        )
        self._server = _Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name=f"uvicorn-{self.port}")
        async with asyncio.timeout(started_within):
            while not self._server.started:
                if self._task.done():
                    self._task.result()  # re-raise why it could not start
                    raise RuntimeError("HTTP server stopped during startup")
                await asyncio.sleep(0.01)
        return self.port

    async def stop(self, force: bool = False) -> None:
        """Stop serving; ``force`` skips waiting for open connections (a crash, for kill)."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        if force:
            self._server.force_exit = True
        try:
            await self._task
        finally:
            self._server = None
            self._task = None

