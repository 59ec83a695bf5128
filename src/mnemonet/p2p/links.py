"""WebSocket links to neighbours: dialled with ``websockets``, accepted through Starlette.

A link only moves bytes. What the bytes mean is the transport's business; it
hands each received message to a callback and learns when the link closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

log = logging.getLogger(__name__)

OnMessage = Callable[["Link", bytes], Awaitable[None]]


class LinkClosed(ConnectionError):
    """Sending on a link that has closed."""


class Link:
    """One WebSocket to a neighbour; ``peer_id`` is known when dialled, learned when accepted."""

    def __init__(self, peer_id: str | None, outbound: bool) -> None:
        self.peer_id = peer_id
        self.outbound = outbound
        self.in_flight = 0  # requests from the peer being served
        self.control_in_flight = 0  # other envelopes from the peer being handled (pings, gossip, events)
        self.closed = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None

    @property
    def is_open(self) -> bool:
        """False once either side has closed the link."""
        return not self.closed.is_set()

    async def send(self, data: bytes, timeout: float) -> None:
        """Send one message; ``LinkClosed`` if the link is gone or stuck.

        A peer that stops reading fills the socket's buffers and a send would
        wait forever (holding the send lock, so every later send would too):
        past ``timeout`` the link is dropped as stuck and traffic moves to
        another link or to HTTP.
        """
        if self.closed.is_set():
            raise LinkClosed(f"link to {self.peer_id} is closed")
        try:
            async with asyncio.timeout(timeout), self._send_lock:
                await self._send(data)
        except TimeoutError:
            self.drop()
            raise LinkClosed(f"link to {self.peer_id} stuck: a send waited over {timeout}s") from None
        except (ConnectionClosed, WebSocketDisconnect, RuntimeError, OSError) as exc:
            self.closed.set()
            raise LinkClosed(f"link to {self.peer_id} failed: {exc}") from None

    def drop(self) -> None:
        """Give up on the link without a closing handshake (it could wait on the same stuck socket)."""
        self.closed.set()
        if self._reader is not None:
            self._reader.cancel()  # its owner then closes the socket

    async def receive(self) -> bytes | None:
        """One message, or None once the link is closed (the handshake reads this way, before ``run``)."""
        try:
            return await self._recv()
        except (ConnectionClosed, WebSocketDisconnect, OSError):
            self.closed.set()
            return None

    async def run(self, on_message: OnMessage) -> None:
        """Read until the link closes, handing each message to ``on_message``."""
        self._reader = asyncio.current_task()
        try:
            while True:
                data = await self._recv()
                if data is None:
                    return
                await on_message(self, data)
        except (ConnectionClosed, WebSocketDisconnect, OSError):
            return
        finally:
            self.closed.set()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close the link; safe to call more than once."""
        if self.closed.is_set():
            return
        self.closed.set()
        try:
            await self._close(code, reason)
        except (ConnectionClosed, WebSocketDisconnect, RuntimeError, OSError):
            pass  # already gone: nothing left to close

    async def _send(self, data: bytes) -> None:
        raise NotImplementedError

    async def _recv(self) -> bytes | None:
        raise NotImplementedError

    async def _close(self, code: int, reason: str) -> None:
        raise NotImplementedError


class DialledLink(Link):
    """A link this node opened with the ``websockets`` client."""

    def __init__(self, peer_id: str, conn: ClientConnection) -> None:
        super().__init__(peer_id, outbound=True)
        self._conn = conn

    @classmethod
    async def open(cls, peer_id: str, ws_url: str, *, timeout: float, max_bytes: int) -> DialledLink:
        """Dial ``ws_url``; ``ConnectionError`` when it cannot be reached."""
        try:
            conn = await connect(
                ws_url, open_timeout=timeout, max_size=max_bytes, proxy=None, compression=None,
                close_timeout=timeout,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise ConnectionError(f"cannot link to {peer_id} at {ws_url}: {exc}") from None
        return cls(peer_id, conn)

    async def _send(self, data: bytes) -> None:
        await self._conn.send(data)

    async def _recv(self) -> bytes | None:
        message = await self._conn.recv()
        return message.encode() if isinstance(message, str) else message

    async def _close(self, code: int, reason: str) -> None:
        await self._conn.close(code, reason)

    def drop(self) -> None:
        super().drop()
        self.abort()

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake (a crash, for tests and kill)."""
        self.closed.set()
        self._conn.transport.abort()


class AcceptedLink(Link):
    """A link a peer opened to this node's ``/v1/peer`` endpoint."""

    def __init__(self, websocket: WebSocket) -> None:
        super().__init__(None, outbound=False)
        self._ws = websocket

    async def _send(self, data: bytes) -> None:
        await self._ws.send_bytes(data)

    async def _recv(self) -> bytes | None:
        message = await self._ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        if message.get("bytes") is not None:
            return message["bytes"]
        return (message.get("text") or "").encode()

    async def _close(self, code: int, reason: str) -> None:
        await self._ws.close(code, reason)
