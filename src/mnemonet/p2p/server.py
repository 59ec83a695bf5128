"""The node's HTTP + WebSocket server: health, join, the peer endpoint and the client API.

Routes:
- ``GET /health``: without a token only ``state`` and ``status`` (ok/degraded/failing from a round
  trip to each database; 503 while failing); with a ``read`` token also the node id, capabilities,
  members, local dependencies, workers and each check.
- ``GET /metrics``: Prometheus text format (``read`` token).
- ``POST /v1/join``: a join envelope in, a welcome envelope out.
- ``POST /v1/peer`` / ``WS /v1/peer``: peer envelopes, one-shot or over a neighbour link.
- ``POST /v1/{method}``: the MemoryAPI for programs that are not peers (each one, its aliases and
  its argument and result schemas in ``GET /openapi.json``, from ``p2p/openapi.py``), JSON keyword
  arguments in (``application/json`` only), ``{"result": ...}`` or ``{"error": {"code", "message"}}``
  out. Each method needs a token scope (its ``scope`` in ``mnemonet.p2p.registry``); the token's name
  is the ``source`` of its writes. A saturated node answers 503 ``busy`` with ``Retry-After``;
  ``X-Request-Id`` (given or made) names the call in every log line of every node it reaches.

A keyless node (loopback only) verifies no tokens: every local call acts with every scope, and
only the Host, Origin and content-type checks (``web_guard``) keep web pages out.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from mnemonet.model.errors import Busy, InvalidInput, describe, is_expected, status_of
from mnemonet.model.spaces import DEFAULT_SPACE, check_space
from mnemonet.p2p.cluster import JOIN_PATH
from mnemonet.p2p.docs import mount_docs
from mnemonet.p2p.envelope import Kind
from mnemonet.p2p.limits import KeyedLimiter, ReadBudget, retry_after_header
from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.metrics import CONTENT_TYPE, NodeMetrics
from mnemonet.p2p.openapi import openapi_document
from mnemonet.p2p.peer_access import reset_client_credential, set_client_credential
from mnemonet.p2p.registry import SERVER_FILLED, client_method
from mnemonet.p2p.tokens import METHOD_SCOPE, Token, TokenError, TokenVerifier
from mnemonet.p2p.tracing import current_request_id, end_request, start_request
from mnemonet.p2p.transport import PEER_PATH, Transport
from mnemonet.p2p.web_guard import HostGuard, cross_origin, is_json

log = logging.getLogger(__name__)


class ServedNode(Protocol):
    """What the server needs from the node."""

    node_id: str
    transport: Transport
    cluster_key: str
    max_body_bytes: int
    client_limits: KeyedLimiter
    peer_reads: ReadBudget
    peer_read_timeout: float
    metrics: NodeMetrics
    tokens: TokenVerifier
    # Names the Host header may carry; None when the node does not check (keyed, no allowed_hosts set).
    host_names: frozenset[str] | None

    def health(self) -> dict[str, Any]:
        """The ``/health`` document."""
        ...

    async def health_checks(self) -> dict[str, Any]:
        """``status`` (ok/degraded/failing) and ``checks`` of the local dependencies, from real round trips."""
        ...

    async def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        """Route one MemoryAPI call."""
        ...


def _error(code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status_of(code))


def _address(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


def _busy(exc: Busy) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": exc.code, "message": exc.message, "retry_after": exc.retry_after}}, status_code=exc.status,
        headers={"retry-after": retry_after_header(exc.retry_after)},
    )


class BodyTooLarge(Exception):
    """A request body over the size limit."""


class ClientGone(Exception):
    """The client hung up before its whole request body arrived (an ordinary event: one log line)."""


async def _read_body(request: Request, limit: int, charge: Callable[[int], None] | None = None) -> bytes:
    # Read in chunks and stop at the limit, so a huge body is never held in memory;
    # ``charge`` books each chunk against a shared budget (it raises ``Busy`` when that is spent).
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            if charge is not None:
                charge(len(chunk))
            chunks.append(chunk)
    except ClientDisconnect:  # left to the framework it was a 62-line traceback, each time
        raise ClientGone(f"{request.url.path}: the client hung up after {size} of {declared or '?'} bytes") from None
    return b"".join(chunks)


def bearer(headers: Headers) -> str:
    """The credential of an ``Authorization: Bearer`` header, or an empty string."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _forbidden(message: str) -> JSONResponse:
    return _error("forbidden", message)


def check_source(caller: Token, kwargs: dict[str, Any]) -> str | None:
    """Make the token's name the ``source`` of a write; the refusal message if another one is asked for."""
    if not caller.name:
        return None  # keyless local caller: speaks for anyone
    source = kwargs.setdefault("source", caller.name)
    if source != caller.name and not caller.allows("speak-for"):
        return f"source {source!r} is not this token's name {caller.name!r} (needs the speak-for scope)"
    return None


def _import_as(caller: Token, kwargs: dict[str, Any]) -> None:
    """An import's lines are said by the token's name unless it may speak for others (``check_source``, per line:
    a line naming another speaker is refused alone). Lines naming no speaker are ``default_source``'s, as in
    ``run_node.py import``, so the same file gets the same observations through either."""
    kwargs["as_source"] = caller.name if caller.name and not caller.allows("speak-for") else None


AUDITED_SCOPES = frozenset({"write", "admin"})


def _written(method: str, kwargs: dict[str, Any], result: Any) -> str:
    """What an audited call wrote, by id (never its text)."""
    if method == "revoke_token":
        return str(kwargs.get("token_id", ""))
    if method in ("create_space", "delete_space"):
        return str(kwargs.get("name", ""))
    if method in ("share_space", "unshare_space"):
        return f"{kwargs.get('name', '')} reads {kwargs.get('reads', '')}"
    if method == "import_file":
        return f"{result.ok} lines written, {result.duplicate} already there"
    for attr in ("observation_id", "statement_id", "retraction_id", "tombstone_id"):
        if (value := getattr(result, attr, None)) is not None:
            return str(value)
    return ""


def create_app(node: ServedNode) -> FastAPI:
    """The FastAPI app of one node."""
    app = FastAPI(title="mnemonet node", version="1", description=__doc__, docs_url=None, redoc_url=None)
    mount_docs(app)  # Swagger UI with its assets served from the package, not a CDN
    document = openapi_document(app.version)
    # The generic ``/v1/{method}`` route would document one path; the registry documents each method.
    app.openapi = lambda: document  # type: ignore[method-assign]
    if node.host_names is not None:
        app.add_middleware(HostGuard, names=node.host_names)

    def _gone(request: Request, exc: ClientGone) -> JSONResponse:
        # Logged like a refusal: one line per client address, then one summary per refusal_log_interval.
        node.transport.refusals.refused(_address(request), f"an incomplete request ({exc})")
        return _error("bad_input", str(exc))  # sent to no one: the connection is gone

    async def reader(request: Request) -> bool:
        try:
            return (await node.tokens.authenticate(bearer(request.headers))).allows("read")
        except TokenError:
            return False

    @app.get("/health")
    async def health(request: Request) -> JSONResponse:
        """``state`` and ``status`` (ok/degraded/failing from each dependency's round trip) for anyone,
        answered 503 while a dependency is failing so health checks see it; with a read token also
        node id, capabilities, members, dependencies and each check."""
        checks = await node.health_checks()
        document = node.health()
        if await reader(request):
            document = {**document, **checks}
        else:
            document = {"state": document["state"], "status": checks["status"]}
        return JSONResponse(document, status_code=503 if checks["status"] == "failing" else 200)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        if not await reader(request):
            return _error("unauthorized", "metrics need 'Authorization: Bearer <token with read scope>'")
        return Response(node.metrics.render(), media_type=CONTENT_TYPE)

    async def peer_envelope(request: Request, accept: Callable[[Kind], bool]) -> Response:
        # The body is authenticated only once it is read whole: bound how many are read at once,
        # the bytes they hold together, and how long one may take (a slow or unfinished upload).
        try:
            with node.peer_reads.read() as charge:
                async with asyncio.timeout(node.peer_read_timeout):
                    raw = await _read_body(request, node.max_body_bytes, charge)
        except BodyTooLarge:
            return _error("too_large", f"body exceeds {node.max_body_bytes} bytes")
        except Busy as exc:
            return _busy(exc)
        except TimeoutError:
            return _error("body_timeout", f"body not received within {node.peer_read_timeout}s")
        except ClientGone as exc:
            return _gone(request, exc)
        status, body = await node.transport.handle_http(raw, accept, _address(request))
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
        """Call a MemoryAPI method with its keyword arguments as a JSON object (bearer token with its scope)."""
        token = start_request(request.headers.get("x-request-id"))
        try:
            credential = set_client_credential(bearer(request.headers))  # routed admin calls carry it on
            try:
                response = await _client_call(method, request)
            finally:
                reset_client_credential(credential)
        finally:
            request_id = current_request_id()
            end_request(token)
        response.headers["x-request-id"] = request_id or ""
        return response

    async def _client_call(method: str, request: Request) -> JSONResponse:
        if cross_origin(request.headers):
            return _forbidden("cross-origin calls are refused (Origin is not this node)")
        try:
            caller = await node.tokens.authenticate(bearer(request.headers))
        except TokenError as exc:
            node.transport.refusals.refused(_address(request), f"a client token for {method}: {exc}")
            return _error("unauthorized", str(exc))
        remote = client_method(method)
        if remote is None or remote.scope is None:
            return _error("unknown_method", f"unknown method {method!r}; GET /openapi.json lists every method")
        method = remote.name  # an alias answers as the method it names
        if not caller.allows(scope := remote.scope):
            return _forbidden(f"{method} needs a token with the {scope!r} scope")
        if not is_json(request.headers):
            # A web page can send text/plain or a form anywhere without asking; JSON needs a preflight.
            return _error("unsupported_media_type", "send the arguments as 'content-type: application/json'")
        try:
            raw = await _read_body(request, node.max_body_bytes)
        except BodyTooLarge:
            return _error("too_large", f"body exceeds {node.max_body_bytes} bytes")
        except ClientGone as exc:
            return _gone(request, exc)
        try:
            kwargs = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return _error("bad_input", f"body is not JSON: {exc}")
        except RecursionError:  # deeper than the parser can go: bad input, not a server fault
            return _error("bad_input", "body is not JSON this node reads: nested too deeply")
        if not isinstance(kwargs, dict):
            return _error("bad_input", "body must be a JSON object of keyword arguments")
        if method in ("observe", "claim", "retract") and (refusal := check_source(caller, kwargs)) is not None:
            return _forbidden(refusal)
        if method == "import_file":
            _import_as(caller, kwargs)
        if method == "remember" and caller.name:
            kwargs.setdefault("source", caller.name)  # the asker: its "I" in the question, "you" in the answer
        if "by" in SERVER_FILLED.get(method, ()):
            kwargs["by"] = caller.name or "local"  # who did it is the caller, never what it says
        if method == "forget" and kwargs.get("whole_space") is True and "space" not in kwargs:
            # The token's first space is every other call's default; an erasure names what it erases.
            return _error("bad_input", "forget: whole_space erases the space named by space; name it")
        if "space" in method_spec(method).params:
            try:
                space = check_space(kwargs.setdefault("space", caller.home_space))
            except InvalidInput as exc:
                return _error("bad_input", str(exc))
            if not caller.allows_space(space):
                return _forbidden(f"this token may not use space {space!r} (its spaces: {', '.join(caller.spaces)})")
            if space == DEFAULT_SPACE:
                del kwargs["space"]  # naming no space means the default one, to every MemoryAPI
        # Per client address: programs that are not peers share nothing else a limit could key on.
        client = _address(request)
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
            await audit(caller, method, wire.code, "")
            return _error(wire.code, wire.message)
        finally:
            node.client_limits.release(client)
        if method == "revoke_token":
            node.tokens.revoke([kwargs["token_id"]])  # here at once; elsewhere at the next refresh
        if method == "spaces" and not caller.allows("admin"):
            result = [view for view in result if caller.allows_space(view.name)]  # other teams' names stay theirs
        await audit(caller, method, "ok", _written(method, kwargs, result))
        return JSONResponse({"result": method_spec(method).dump_result(result)})

    async def audit(caller: Token, method: str, outcome: str, detail: str) -> None:
        """Append the audit record of a write or admin call this node served (reads are not audited)."""
        if METHOD_SCOPE[method] not in AUDITED_SCOPES:
            return
        record = {"who": caller.name or "local", "method": method, "node": node.node_id, "outcome": outcome,
                  "detail": detail}
        try:
            await node.call("record_audit", record)
        except Exception as exc:  # the call itself is done: its answer must not depend on the audit write
            log.error("audit record not written for %s by %s: %r", method, record["who"], exc)

    return app
