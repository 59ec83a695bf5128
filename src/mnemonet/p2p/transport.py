"""Moving envelopes between peers: over a WebSocket link when one exists, else one HTTP POST.

``call`` sends an envelope and waits for the envelope whose ``reply_to``
names it; ``send`` is one-way. A link carries envelopes only once both ends
have proven the cluster key (``handshake``), and only from the peer it proved
to be. Incoming envelopes are decoded (refusals are counted: over HTTP they
get an unsigned error body, on a link the link is closed, never a signed reply
that could be replayed elsewhere), replies resolve the waiting call, and
everything else goes to the node's handler in its own task so a slow request
never holds up pings on the same link.

Flow control: a link carries at most ``max_inflight_per_link`` unanswered
requests (a ``Window`` per link, on the sender's side); a request beyond them
waits for a reply to free a place, up to ``link_room_timeout``. The receiver
serves that many from one link, so a full link slows its sender down instead
of having its requests refused (issue 31: a bulk import lost 342 extractions
and 75 index writes to "more than 64 envelopes in flight on this link").
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import httpx
from starlette.websockets import WebSocket

from mnemonet.model.errors import describe, is_expected, status_of
from mnemonet.p2p import handshake
from mnemonet.p2p.envelope import Codec, Envelope, EnvelopeError, Kind
from mnemonet.p2p.errors import Busy, RemoteError
from mnemonet.p2p.limits import RoomClosed, Window
from mnemonet.p2p.links import AcceptedLink, DialledLink, Link, LinkClosed
from mnemonet.p2p.network import SOCKETS, Network
from mnemonet.p2p.refusals import RefusalLog
from mnemonet.settings import Settings

if TYPE_CHECKING:
    from mnemonet.p2p.membership import Member

log = logging.getLogger(__name__)

Handler = Callable[[Envelope], Awaitable[Envelope | None]]

PEER_PATH = "/v1/peer"


class PeerUnavailable(ConnectionError):
    """The peer could not be reached, or its link closed before it answered."""


class PeerTimeout(TimeoutError):
    """The peer did not answer within the timeout."""


def error_payload(code: str, message: str) -> dict[str, Any]:
    """The payload of an error reply."""
    return {"error": {"code": code, "message": message}}


def raise_for_error(env: Envelope) -> Envelope:
    """``env`` unchanged, or ``RemoteError`` when it carries an error."""
    err = env.payload.get("error")
    if isinstance(err, dict):
        raise RemoteError(str(err.get("message", "")), str(err.get("code", "error")))
    return env


def _settle(outcome: asyncio.Future[Envelope | None], attempt: asyncio.Future[Envelope | None]) -> None:
    """Pass an attempt's reply or error on to its call, unless the call was abandoned or cancelled first."""
    if attempt.cancelled():
        if not outcome.done():
            outcome.cancel()
        return
    error = attempt.exception()  # retrieved even when no one waits for it any more
    if outcome.done():
        return
    if error is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(attempt.result())


def _stamped(env: Envelope) -> Envelope:
    """``env`` timestamped now. A request that waited for room on a full link, or for it to fall back to
    HTTP, could be older than ``max_message_age`` when sent: the peer refused it as stale and closed the link
    (issue 31: under a bulk import on two loaded cores, requests waited 30-40 s)."""
    return env.model_copy(update={"ts": time.time()})


def ws_url(http_url: str) -> str:
    """The peer WebSocket endpoint of a node's HTTP URL."""
    base = http_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://"):] + PEER_PATH
    if base.startswith("http://"):
        return "ws://" + base[len("http://"):] + PEER_PATH
    raise ValueError(f"not an http(s) URL: {http_url!r}")


class Transport:
    """Links, pending calls and the HTTP fallback of one node."""

    def __init__(self, node_id: str, codec: Codec, settings: Settings, handler: Handler,
                 network: Network = SOCKETS) -> None:
        self.node_id = node_id
        self._network = network
        self._codec = codec
        self._settings = settings
        self._handler = handler
        self._links: dict[str, list[Link]] = {}
        self._windows: dict[Link, Window] = {}  # per open link: the requests sent on it and not answered yet
        self._accepted: set[AcceptedLink] = set()  # inbound links past the handshake
        self._handshaking = 0  # inbound sockets still proving themselves: their own small cap
        self._pending: dict[str, tuple[asyncio.Future[Envelope], Link | None]] = {}
        self._posts: dict[str, set[asyncio.Future[Envelope | None]]] = {}  # peer id -> HTTP calls waiting on it
        self._tasks: set[asyncio.Task[Any]] = set()
        self._url_overrides: dict[str, str] = {}
        self._http: httpx.AsyncClient | None = None
        self._closing = False
        # Shared with the client API (bad tokens): one place keeps a flood of refusals from flooding the log.
        self.refusals = RefusalLog(log, settings.refusal_log_interval, settings.limiter_max_keys)

    # -- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        """Open the HTTP client used for joins and for peers without a link."""
        self._closing = False
        self._http = self._network.http_client(
            timeout=httpx.Timeout(self._settings.control_timeout, connect=self._settings.link_connect_timeout),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    async def close(self, abort: bool = False) -> None:
        """Close every link, fail pending calls and cancel handler tasks; ``abort`` drops sockets like a crash."""
        self._closing = True
        self.refusals.close()
        closing = []
        for link in self.links():
            if abort and isinstance(link, DialledLink):
                link.abort()
            else:
                closing.append(link.close(1001, "node stopping"))
        # Together: a peer that never answers the close costs one close timeout, not one per link.
        await asyncio.gather(*closing)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for fut, _ in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(PeerUnavailable("node stopping"))
        self._pending.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in a task the transport cancels on close."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- addresses and links -------------------------------------------------------
    def remember_url(self, node_id: str, url: str) -> None:
        """Reach ``node_id`` at ``url`` (the address a seed actually answered at), not its advertised one."""
        self._url_overrides[node_id] = url.rstrip("/")

    def address(self, member: Member) -> str:
        """The URL this node uses to reach ``member``."""
        return self._url_overrides.get(member.node_id, member.url.rstrip("/"))

    def links(self) -> list[Link]:
        """Every open link (each past its handshake, so each knows its peer)."""
        return [link for group in self._links.values() for link in group if link.is_open]

    def link_to(self, peer_id: str) -> Link | None:
        """An open link to ``peer_id``, if any."""
        for link in self._links.get(peer_id, ()):
            if link.is_open:
                return link
        return None

    def neighbours(self) -> list[str]:
        """Peer ids with an open link."""
        return [peer for peer, group in self._links.items() if any(link.is_open for link in group)]

    def outbound_count(self) -> int:
        """Open links this node dialled."""
        return sum(1 for link in self.links() if link.outbound)

    def _register(self, link: Link) -> None:
        if link.peer_id is not None:
            self._links.setdefault(link.peer_id, []).append(link)
            self._windows[link] = Window(self._settings.max_inflight_per_link)

    def _forget(self, link: Link) -> None:
        if isinstance(link, AcceptedLink):
            self._accepted.discard(link)
        window = self._windows.pop(link, None)
        if window is not None:
            window.close()  # requests waiting for room try HTTP instead
        group = self._links.get(link.peer_id or "", [])
        if link in group:
            group.remove(link)
            if not group:
                del self._links[link.peer_id or ""]
        for fut, via in list(self._pending.values()):
            if via is link and not fut.done():
                fut.set_exception(PeerUnavailable(f"link to {link.peer_id} closed before it answered"))

    async def dial(self, member: Member) -> Link:
        """Open a link to ``member`` and start reading from it; ``ConnectionError`` on failure."""
        link = await self._network.dial(
            member.node_id, ws_url(self.address(member)),
            timeout=self._settings.link_connect_timeout, max_bytes=2 * self._settings.max_envelope_bytes,
        )
        try:
            async with asyncio.timeout(self._settings.link_handshake_timeout):
                await handshake.dial(link, self._codec.key, self.node_id, member.node_id,
                                     self._settings.link_send_timeout)
        except (handshake.HandshakeFailed, TimeoutError) as exc:
            await link.close(handshake.POLICY, "handshake failed")
            raise PeerUnavailable(f"no link to {member.node_id}: {exc or 'handshake timed out'}") from None
        if self._closing:
            await link.close()
            raise PeerUnavailable("node stopping")
        self._register(link)
        self.spawn(self._read(link), f"link-{member.node_id}")
        return link

    async def _read(self, link: Link) -> None:
        try:
            await link.run(self._on_message)
        finally:
            self._forget(link)

    async def accept(self, websocket: WebSocket) -> None:
        """Serve a link a peer opened: handshake, then read until it closes.

        Sockets still in their handshake have their own cap and deadline, and
        only proven links take an inbound slot: idle sockets from anyone
        cannot crowd out peers.
        """
        s = self._settings
        if self._closing or self._handshaking >= s.max_pending_links or len(self._accepted) >= s.max_inbound_links:
            await websocket.close(1013, "too many links")  # 1013: try again later
            return
        self._handshaking += 1
        link = AcceptedLink(websocket)
        try:
            async with asyncio.timeout(s.link_handshake_timeout):
                await websocket.accept()
                link.peer_id = await handshake.accept(link, self._codec.key, self.node_id, s.link_send_timeout)
        except (handshake.HandshakeFailed, TimeoutError, OSError) as exc:  # OSError: gone before the accept
            self._codec.refused["handshake"] += 1
            where = websocket.client.host if websocket.client is not None else "unknown"
            self.refusals.refused(where, f"a link: {exc or 'handshake timed out'}")
            await link.close(handshake.POLICY, "handshake failed")
            return
        finally:
            self._handshaking -= 1
        if self._closing or len(self._accepted) >= s.max_inbound_links:
            await link.close(1013, "too many links")
            return
        self._accepted.add(link)
        self._register(link)
        await self._read(link)

    async def close_links_to(self, peer_id: str) -> None:
        """Close every link to ``peer_id`` (it left or died)."""
        for link in list(self._links.get(peer_id, ())):
            await link.close(1000, "peer gone")

    # -- sending -------------------------------------------------------------------
    async def send_on(self, link: Link, env: Envelope) -> None:
        """Send ``env`` on one link; ``PeerUnavailable`` if it is closed."""
        try:
            await link.send(self._codec.encode(env), self._settings.link_send_timeout)
        except LinkClosed as exc:
            raise PeerUnavailable(str(exc)) from None

    async def send(self, member: Member, env: Envelope) -> None:
        """One-way: over the link if there is one, else an HTTP POST."""
        link = self.link_to(member.node_id)
        if link is not None:
            try:
                await self.send_on(link, env)
                return
            except PeerUnavailable:
                pass  # the link just died; HTTP may still reach the peer
        await self._post(member, env, self._settings.control_timeout)

    async def call(self, member: Member, env: Envelope, timeout: float) -> Envelope:
        """Send ``env`` and wait for its reply (which may carry an error; see ``raise_for_error``).

        ``timeout`` bounds the send too, and a request's wait for room on a full
        link (``Busy`` past ``link_room_timeout``). A send cut short by it leaves the link
        whole (a message is queued whole or not at all) and open: only a send
        that waits its full ``link_send_timeout`` drops a link as stuck, never a
        short probe budget. A call still waiting when its peer is declared dead
        (``abandon_calls_to``) fails then with ``PeerUnavailable``, so its caller
        fails over at detection time rather than at its own timeout.
        """
        link = self.link_to(member.node_id)
        if link is not None:
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[Envelope] = loop.create_future()
            self._pending[env.id] = (fut, link)
            window = self._windows.get(link) if env.kind is Kind.REQUEST else None
            sent = False
            try:
                async with asyncio.timeout(timeout):
                    if window is not None:
                        await self._room(window, member.node_id, env.id)
                        env = _stamped(env)
                    await link.send(self._codec.encode(env), self._settings.link_send_timeout)
                    sent = True
                    return await fut
            except (LinkClosed, RoomClosed):
                pass  # not delivered, so HTTP is a safe second try
            except TimeoutError:
                raise PeerTimeout(f"{member.node_id} did not answer {env.kind} within {timeout}s") from None
            finally:
                self._pending.pop(env.id, None)
                if window is not None and not sent:
                    window.give_back(env.id)  # never reached the peer: no reply will free its place
                if fut.done() and not fut.cancelled():
                    fut.exception()  # failed while the send was still under way: retrieved, not warned about
        reply = await self._abandonable(member.node_id, self._post(member, _stamped(env), timeout))
        if reply is None:
            raise PeerUnavailable(f"{member.node_id} sent no reply to {env.kind}")
        return reply

    async def _room(self, window: Window, peer_id: str, request_id: str) -> None:
        """A place on a link for one request: waits while the link carries ``window.size`` unanswered ones."""
        wait = self._settings.link_room_timeout
        try:
            await window.take(request_id, wait)
        except TimeoutError:
            raise Busy(f"the link to {peer_id} carried {window.size} unanswered requests for {wait:g}s "
                       "(max_inflight_per_link, link_room_timeout): the peer is overloaded",
                       self._settings.busy_retry_after) from None

    async def _abandonable(self, peer_id: str, post: Coroutine[Any, Any, Envelope | None]) -> Envelope | None:
        """Await an HTTP call to ``peer_id`` that ``abandon_calls_to`` can fail early (a link call's
        future is failed directly)."""
        outcome: asyncio.Future[Envelope | None] = asyncio.get_running_loop().create_future()
        waiting = self._posts.setdefault(peer_id, set())
        waiting.add(outcome)
        attempt = asyncio.ensure_future(post)
        attempt.add_done_callback(lambda done: _settle(outcome, done))
        try:
            return await outcome
        finally:
            attempt.cancel()  # abandoned or the caller cancelled: stop waiting on the peer
            waiting.discard(outcome)
            if not waiting:
                self._posts.pop(peer_id, None)

    def abandon_calls_to(self, peer_id: str, why: str) -> None:
        """Fail every call waiting on ``peer_id`` now (it was declared dead)."""
        gone = PeerUnavailable(f"{peer_id} {why} before it answered")
        waiting = [fut for fut, via in self._pending.values() if via is not None and via.peer_id == peer_id]
        for fut in [*waiting, *self._posts.get(peer_id, ())]:
            if not fut.done():
                fut.set_exception(gone)

    async def post_url(self, url: str, path: str, env: Envelope, timeout: float) -> Envelope | None:
        """POST ``env`` to ``url + path``; its reply envelope, or None for 204."""
        if self._http is None:
            raise PeerUnavailable("transport is not started")
        try:
            resp = await self._http.post(
                url.rstrip("/") + path, content=self._codec.encode(env), timeout=timeout,
                headers={"content-type": "application/octet-stream"},
            )
        except httpx.TimeoutException:
            raise PeerTimeout(f"{url} did not answer within {timeout}s") from None
        except httpx.HTTPError as exc:
            raise PeerUnavailable(f"cannot reach {url}: {exc}") from None
        if resp.status_code == 204:
            return None
        if resp.status_code != 200:
            try:
                err = resp.json()["error"]
                if err["code"] == Busy.code:  # the peer's read budget or limits: another peer may have room
                    raise Busy(str(err["message"]), float(err.get("retry_after", self._settings.busy_retry_after)))
                raise RemoteError(str(err["message"]), str(err["code"]))
            except (ValueError, KeyError, TypeError):
                raise RemoteError(f"{url} answered HTTP {resp.status_code}", "http_error") from None
        try:
            reply = self._codec.decode(resp.content)
        except EnvelopeError as exc:
            raise RemoteError(f"{url} sent a refused reply: {exc}", "bad_reply") from None
        if reply.reply_to != env.id:
            raise RemoteError(f"{url} answered another envelope", "bad_reply")
        return reply

    async def _post(self, member: Member, env: Envelope, timeout: float) -> Envelope | None:
        return await self.post_url(self.address(member), PEER_PATH, env, timeout)

    # -- receiving -----------------------------------------------------------------
    async def _on_message(self, link: Link, raw: bytes) -> None:
        try:
            env = self._codec.decode(raw)
        except EnvelopeError as exc:
            await self._refuse(link, exc)
            return
        if env.sender != link.peer_id:
            # The link proved who is at its other end; a signed envelope in another's name is not theirs to send.
            self._codec.refused["wrong_sender"] += 1
            await self._refuse(link, EnvelopeError("wrong_sender", f"{env.sender} on the link of {link.peer_id}"))
            return
        if env.reply_to is not None:
            window = self._windows.get(link)
            if window is not None:
                window.give_back(env.reply_to)  # a late reply too: the peer has served it
            pending = self._pending.get(env.reply_to)
            if pending is not None and not pending[0].done():
                pending[0].set_result(env)
            return  # a late reply to a call that timed out: nothing waits for it
        # Requests are counted apart from pings, gossip and events: the sender's window knows only requests.
        request = env.kind is Kind.REQUEST
        if (link.in_flight if request else link.control_in_flight) >= self._settings.max_inflight_per_link:
            # A sender keeps to its window, so this is one that does not. Refuse rather than wait: the reader
            # must keep reading replies, or two busy peers deadlock. For the same reason the refusal is sent
            # by its own task, never awaited here.
            self.spawn(self._try_send(link, env.reply(Kind.RESPONSE, self.node_id, error_payload(
                "busy", f"more than {self._settings.max_inflight_per_link} {'requests' if request else 'envelopes'} "
                "in flight on this link"))), "reply-busy")
            return
        if request:
            link.in_flight += 1
        else:
            link.control_in_flight += 1
        self.spawn(self._handle_on_link(link, env, request), f"handle-{env.kind}")

    async def _handle_on_link(self, link: Link, env: Envelope, request: bool) -> None:
        try:
            reply = await self._dispatch(env)
        finally:
            # Counted down before the reply goes out: the sender may use the place as soon as it has the reply.
            if request:
                link.in_flight -= 1
            else:
                link.control_in_flight -= 1
        if reply is not None:
            await self._try_send(link, reply)

    async def _dispatch(self, env: Envelope) -> Envelope | None:
        try:
            return await self._handler(env)
        except Exception as exc:  # a handler bug must cost one reply, never the link or the node
            request_id = env.payload.get("request_id")
            if not is_expected(exc):
                log.exception("handler failed for %s from %s (request id %s): %s",
                              env.kind, env.sender, request_id, exc)
            wire = describe(exc, request_id if isinstance(request_id, str) else env.id)
            return env.reply(Kind.RESPONSE, self.node_id, error_payload(wire.code, wire.message))

    async def _try_send(self, link: Link, env: Envelope) -> None:
        try:
            await self.send_on(link, env)
        except PeerUnavailable:
            log.debug("could not reply on closed link to %s", link.peer_id)

    async def _refuse(self, link: Link, exc: EnvelopeError) -> None:
        # Only the proven peer writes on this link, and it holds the key: a refused envelope means a broken
        # or hostile peer. Close with a code; a signed error reply could be replayed to another node.
        self.refusals.refused(f"peer {link.peer_id}", f"an envelope on its link (closing it): {exc}")
        await link.close(handshake.POLICY, f"refused: {exc.code}")

    async def handle_http(self, raw: bytes, accept: Callable[[Kind], bool],
                          origin: str = "unknown") -> tuple[int, bytes]:
        """Serve one POSTed envelope whose kind ``accept`` allows: (status, body); ``origin``: the sender's address."""
        try:
            env = self._codec.decode(raw)
        except EnvelopeError as exc:
            self.refusals.refused(origin, f"an envelope over HTTP: {exc}")
            return status_of(exc.code), json.dumps(error_payload(exc.code, exc.message)).encode()
        if env.reply_to is not None or not accept(env.kind):
            return 400, json.dumps(error_payload("invalid", f"{env.kind} is not accepted at this endpoint")).encode()
        reply = await self._dispatch(env)
        return (204, b"") if reply is None else (200, self._codec.encode(reply))

