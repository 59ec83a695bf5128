"""MemoryAPI (and provider) calls: served locally when this node can, else routed to a peer with failover."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mnemonet.model.errors import InvalidInput, MnemonetError, describe, is_expected
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.errors import (
    Busy,
    MissingCapability,
    NoCapablePeer,
    RequestTimeout,
    error_from_wire,
)
from mnemonet.p2p.limits import KeyedLimiter, Room, check_batches
from mnemonet.p2p.methods import MethodSpec, method_spec
from mnemonet.p2p.metrics import NodeMetrics
from mnemonet.p2p.peer_access import Authenticate, CapabilitiesOf, check_peer_call, forwarded_credential
from mnemonet.p2p.routing import Router
from mnemonet.p2p.tracing import current_request_id, end_request, start_request
from mnemonet.p2p.transport import PeerTimeout, PeerUnavailable, Transport, error_payload
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

# Errors after which another peer may well succeed.
_RETRYABLE = {"busy", "missing_capability", "wrong_target", "unavailable"}


class Providers(Protocol):
    """Where local implementations come from (built lazily by the node)."""

    def has(self, capability: str) -> bool:
        """True if this node has ``capability``."""
        ...

    async def serving(self, method: str, capability: str) -> object:
        """The object whose attribute serves ``method`` of ``capability`` (MemoryAPI, LanguageModel, Embedder)."""
        ...


# (event type, written ids, space)
OnWrite = Callable[[str, list[str], str], Awaitable[None]]


def error_code(exc: BaseException) -> str | None:
    """The wire code of an error a caller should see as such; None for a bug (answered as ``internal``)."""
    return describe(exc).code if is_expected(exc) else None


def error_reply_payload(exc: BaseException) -> dict[str, Any]:
    """The error payload for ``exc`` (``busy`` says when to retry); a bug's text stays in this node's log."""
    wire = describe(exc, current_request_id())
    payload = error_payload(wire.code, wire.message)
    if isinstance(exc, Busy):
        payload["error"]["retry_after"] = exc.retry_after
    return payload


class RpcServer:
    """Runs allowed methods on this node's providers, for local callers and for peers' requests."""

    def __init__(self, node_id: str, providers: Providers, settings: Settings, *, capabilities_of: CapabilitiesOf,
                 authenticate: Authenticate, on_write: OnWrite | None = None,
                 metrics: NodeMetrics | None = None) -> None:
        self._node_id = node_id
        self._providers = providers
        self._capabilities_of = capabilities_of
        self._authenticate = authenticate
        # Requests served at once: a local (client) call beyond them is refused busy, a peer's waits for room
        # up to ``link_room_timeout`` (the peers' link windows bound how many wait).
        self._room = Room(settings.max_concurrent_requests)
        self._room_timeout = settings.link_room_timeout
        self._busy_retry_after = settings.busy_retry_after
        self._max_batch = settings.max_batch_items
        self._max_depth = settings.max_argument_depth
        self._on_write = on_write
        self._metrics = metrics
        self.peer_limits = KeyedLimiter(
            "peer", max_in_flight=settings.max_inflight_per_peer, rate=settings.peer_rate_limit,
            burst=settings.peer_rate_burst, max_keys=settings.limiter_max_keys, retry_after=settings.busy_retry_after)
        self.served = 0

    @property
    def in_flight(self) -> int:
        """Requests being served now."""
        return self._room.used

    def can_serve(self, method: str) -> bool:
        """True if this node has the capability ``method`` needs."""
        return self._providers.has(method_spec(method).capability)

    async def invoke(self, spec: MethodSpec, kwargs: dict[str, Any], *, from_peer: bool = False) -> Any:
        """Run ``spec`` here with validated ``kwargs``; publishes an event after a write.

        At ``max_concurrent_requests`` a local call is refused busy at once; a peer's (``from_peer``)
        waits for room up to ``link_room_timeout``.
        """
        if not self._providers.has(spec.capability):
            raise MissingCapability(f"node {self._node_id} lacks capability {spec.capability!r} for {spec.name!r}")
        started = time.monotonic()
        try:
            check_batches(spec.name, kwargs, self._max_batch)
            await self._enter(from_peer)
            try:
                provider = await self._providers.serving(spec.name, spec.capability)
                result = await getattr(provider, spec.attr)(**kwargs)
            finally:
                self._room.leave()
        except Exception as exc:
            self.count(spec.name, error_code(exc) or "internal", time.monotonic() - started)
            if error_code(exc) is None:
                log.exception("%s failed on this node: %s", spec.name, exc)
                exc._mnemonet_logged = True  # type: ignore[attr-defined]  # handle() must not log it twice
            raise
        self.count(spec.name, "ok", time.monotonic() - started)
        self.served += 1
        if spec.event is not None and self._on_write is not None:
            ids = result.written_ids()
            if ids:
                await self._on_write(spec.event, ids, kwargs.get("space") or DEFAULT_SPACE)
        return result

    async def _enter(self, wait: bool) -> None:
        if self._room.try_enter():
            return
        if wait:
            try:
                await self._room.enter(self._room_timeout)
                return
            except TimeoutError:
                raise Busy(f"node {self._node_id} served {self._room.size} requests for {self._room_timeout:g}s "
                           "while this one waited (max_concurrent_requests, link_room_timeout)",
                           self._busy_retry_after) from None
        raise Busy(f"node {self._node_id} is serving {self.in_flight} requests", self._busy_retry_after)

    def count(self, method: str, outcome: str, seconds: float | None = None) -> None:
        """Record one served or refused call in the node's metrics."""
        if self._metrics is not None:
            self._metrics.observe_request(method, outcome, seconds)

    async def handle(self, env: Envelope) -> Envelope:
        """Answer one request envelope with a result or an error naming what went wrong.

        The sender's in-flight cap and rate limit apply first; the caller's request id is adopted so
        this node's log lines of the call carry it.
        """
        token = start_request(env.payload.get("request_id"))
        try:
            if env.method is None:
                raise InvalidInput("request without a method")
            spec = method_spec(env.method)
            kwargs = spec.bind(env.payload.get("kwargs", {}), self._max_depth)
            try:
                await check_peer_call(spec.name, env.sender, self._capabilities_of, env.payload.get("credential"),
                                      self._authenticate)
            except MnemonetError as exc:
                self.count(spec.name, exc.code)
                raise
            try:
                self.peer_limits.acquire(env.sender)
            except Busy:
                self.count(spec.name, "busy")
                raise
            try:
                result = await self.invoke(spec, kwargs, from_peer=True)
            finally:
                self.peer_limits.release(env.sender)
            return env.reply(Kind.RESPONSE, self._node_id, {"result": spec.dump_result(result)})
        except Exception as exc:
            # The caller gets the code and, for a bug, the request id only; ``invoke`` logged its own bugs.
            if not is_expected(exc) and not getattr(exc, "_mnemonet_logged", False):
                log.exception("%s request from %s failed: %s", env.method, env.sender, exc)
            return env.reply(Kind.RESPONSE, self._node_id, error_reply_payload(exc))
        finally:
            end_request(token)


class RpcClient:
    """Calls a method locally if this node can serve it, else on the best live capable peer."""

    def __init__(self, node_id: str, server: RpcServer, router: Router, transport: Transport, settings: Settings,
                 metrics: NodeMetrics | None = None) -> None:
        self._node_id = node_id
        self._server = server
        self._router = router
        self._transport = transport
        self._timeout = settings.request_timeout
        self._attempts = settings.rpc_attempts
        self._max_depth = settings.max_argument_depth
        self._metrics = metrics

    @staticmethod
    def _request_id() -> str:
        # The id of the call being served here travels on, so the next node logs under it too.
        return current_request_id() or uuid.uuid4().hex

    def _failover(self, method: str, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.failovers.labels(method, reason).inc()

    async def call(self, method: str, kwargs: dict[str, Any], *, idempotency_key: str | None = None) -> Any:
        """The method's result in the interface's types; errors as the provider would raise them."""
        spec = method_spec(method)
        bound = spec.bind(kwargs, self._max_depth)
        if self._server.can_serve(method):
            return await self._server.invoke(spec, bound)
        wire = {k: spec.params[k].dump_python(v, mode="json") for k, v in bound.items()}
        # One key for every attempt: a write retried on another peer lands on the same ids.
        key = idempotency_key or bound.get("idempotency_key") or uuid.uuid4().hex
        return spec.load_result(await self._remote(spec, wire, key))

    async def _remote(self, spec: MethodSpec, wire: dict[str, Any], key: str) -> Any:
        tried: set[str] = set()
        last: Exception | None = None
        for _ in range(self._attempts):
            candidates = self._router.candidates(spec.name, exclude=tried)
            if not candidates:
                break
            peer = candidates[0]
            tried.add(peer.node_id)
            payload: dict[str, Any] = {"kwargs": wire, "idempotency_key": key, "request_id": self._request_id()}
            if (credential := forwarded_credential(spec.name)) is not None:
                payload["credential"] = credential  # the serving node checks the client's admin scope itself
            env = Envelope(kind=Kind.REQUEST, sender=self._node_id, target=peer.node_id, method=spec.name,
                           payload=payload)
            self._router.started(peer.node_id)
            started = time.monotonic()
            try:
                reply = await self._transport.call(peer, env, self._timeout)
            except Busy as exc:  # its link stayed full past link_room_timeout, or it refused over HTTP: try another
                self._router.finished(peer.node_id, None)
                log.info("%s on %s: %s; trying another peer", spec.name, peer.node_id, exc)
                self._failover(spec.name, "busy")
                last = exc
                continue
            except (PeerUnavailable, PeerTimeout) as exc:
                # A timeout counts as a sample of the full timeout, so a slow peer sinks in the ranking
                # and later calls are routed around it.
                self._router.finished(peer.node_id, self._timeout if isinstance(exc, PeerTimeout) else None)
                log.info("%s on %s failed (%s); trying another peer", spec.name, peer.node_id, exc)
                self._failover(spec.name, "timeout" if isinstance(exc, PeerTimeout) else "unavailable")
                last = exc
                continue
            except asyncio.CancelledError:
                self._router.finished(peer.node_id, None)
                raise
            self._router.finished(peer.node_id, time.monotonic() - started)
            err = reply.payload.get("error")
            if isinstance(err, dict):
                code, message = str(err.get("code", "error")), str(err.get("message", ""))
                retry_after = err.get("retry_after")
                wire_err = error_from_wire(code, message, retry_after if isinstance(retry_after, int | float) else 1.0)
                if code in _RETRYABLE:
                    self._failover(spec.name, code)
                    last = wire_err
                    continue
                raise wire_err
            return reply.payload.get("result")
        if isinstance(last, PeerTimeout):
            raise RequestTimeout(f"{spec.name}: no answer within {self._timeout}s from {sorted(tried)}")
        if isinstance(last, MnemonetError):
            raise last
        if last is not None:
            raise NoCapablePeer(f"{spec.name}: every capable peer tried failed ({sorted(tried)}): {last}")
        raise NoCapablePeer(f"{spec.name}: no live peer with capability {spec.capability!r}")
