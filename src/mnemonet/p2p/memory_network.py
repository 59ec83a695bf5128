"""A ``Network`` in one process: servers, HTTP requests and links over queues, no sockets.

For multi-node tests where the network is not the point (routing, RPC
failover, events, membership between real ``PeerNode``s): every node runs
its real app, transport, links and handshake, but bytes move through
``asyncio`` queues, so the tests neither wait on the kernel nor compete for
ports (memberlist's ``MockNetwork`` does the same for its tests). What the
real network adds, and what its own tests keep checking over sockets
(tests/p2p/test_links.py, test_link_handshake.py, tests/faults/): TCP and
WebSocket framing, message size limits, buffers that fill when a peer stops
reading, half-open connections.

A stopped server is gone at once: new requests and dials fail as a closed
port does, and with ``force`` (a kill) requests in flight fail as a dropped
connection does and its links close without a closing handshake.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import httpx
from starlette.types import ASGIApp, Message

from mnemonet.p2p.links import Link

CLIENT_HOST = "127.0.0.1"


class MemoryNetwork:
    """Servers by ``host:port``; ports are handed out from a counter, never bound."""

    def __init__(self) -> None:
        self.servers: dict[str, MemoryServer] = {}
        self._ports = itertools.count(1)
        self._clients = itertools.count(1)

    def server(self, app: ASGIApp, host: str, port: int, *, ws_max_bytes: int, graceful_timeout: float,
               idle_timeout: float, header_timeout: float) -> MemoryServer:
        return MemoryServer(self, app, host, port, graceful_timeout=graceful_timeout)

    def http_client(self, *, timeout: httpx.Timeout, limits: httpx.Limits) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=_HttpRouter(self), timeout=timeout)

    async def dial(self, peer_id: str, ws_url: str, *, timeout: float, max_bytes: int,
                   headers: dict[str, str] | None = None) -> Link:
        url = httpx.URL(ws_url)
        server = self._at(url)
        if server is None:
            raise ConnectionError(f"cannot link to {peer_id} at {ws_url}: nothing listens there")
        return await server.open_link(peer_id, url, timeout, headers or {})

    def _at(self, url: httpx.URL) -> MemoryServer | None:
        return self.servers.get(f"{url.host}:{url.port}")

    def client_address(self) -> tuple[str, int]:
        return CLIENT_HOST, next(self._clients)


class MemoryServer:
    """One node's app on the MemoryNetwork."""

    def __init__(self, net: MemoryNetwork, app: ASGIApp, host: str, port: int, *, graceful_timeout: float) -> None:
        self._net = net
        self._graceful_timeout = graceful_timeout
        self._http = httpx.ASGITransport(app=app)
        self.app = app
        self._host = host
        self._port = port
        self._key = ""
        self._tasks: set[asyncio.Task[Any]] = set()  # requests in flight and open links

    async def start(self) -> int:
        port = self._port or next(self._net._ports)
        key = f"{self._host}:{port}"
        if key in self._net.servers:
            raise OSError(f"{key} is in use on this network")
        self._key = key
        self._net.servers[key] = self
        return port

    async def stop(self, force: bool = False) -> None:
        self._net.servers.pop(self._key, None)
        # Links end when their app side returns; a graceful stop lets in-flight requests finish, for as long
        # as the HTTP server would wait for them; then (or at once, forced) they are cancelled, as a crash would.
        if self._tasks and not force:
            await asyncio.wait(set(self._tasks), timeout=self._graceful_timeout)
        left = set(self._tasks)
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=self._graceful_timeout)

    def _track(self, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def handle(self, request: httpx.Request) -> httpx.Response:
        budget = request.extensions.get("timeout", {}).get("read")
        task = self._track(asyncio.ensure_future(self._http.handle_async_request(request)))
        try:
            done, _ = await asyncio.wait({task}, timeout=budget)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            raise httpx.ReadTimeout(f"{request.url} did not answer within {budget}s", request=request)
        if task.cancelled():
            raise httpx.ReadError(f"{request.url} dropped the connection", request=request)
        return task.result()

    async def open_link(self, peer_id: str, url: httpx.URL, timeout: float, headers: dict[str, str]) -> MemoryLink:
        to_app: asyncio.Queue[Message] = asyncio.Queue()
        link = MemoryLink(peer_id, to_app)
        accepted: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        async def send(message: Message) -> None:
            kind = message["type"]
            if kind == "websocket.accept" and not accepted.done():
                accepted.set_result(True)
            elif kind == "websocket.send":
                data = message.get("bytes")
                link.inbox.put_nowait(data if data is not None else (message.get("text") or "").encode())
            elif kind == "websocket.close":
                if not accepted.done():
                    accepted.set_result(False)
                link.inbox.put_nowait(None)

        async def run() -> None:
            scope = {
                "type": "websocket", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                "scheme": "ws", "path": url.path, "raw_path": url.raw_path, "query_string": b"", "root_path": "",
                "headers": [(b"host", url.netloc), *((k.lower().encode(), v.encode()) for k, v in headers.items())],
                "client": self._net.client_address(),
                "server": (url.host, url.port), "subprotocols": [], "state": {},
            }
            try:
                await self.app(scope, to_app.get, send)
            finally:
                if not accepted.done():
                    accepted.set_result(False)
                link.inbox.put_nowait(None)  # the app side is gone: the dialler reads the end of the link

        to_app.put_nowait({"type": "websocket.connect"})
        task = self._track(asyncio.ensure_future(run()))
        try:
            async with asyncio.timeout(timeout):
                if await asyncio.shield(accepted):
                    return link
        except TimeoutError:
            task.cancel()
        raise ConnectionError(f"cannot link to {peer_id} at {url}: not accepted")


class MemoryLink(Link):
    """The dialling end of a link on the MemoryNetwork."""

    def __init__(self, peer_id: str, to_app: asyncio.Queue[Message]) -> None:
        super().__init__(peer_id, outbound=True)
        self._to_app = to_app
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._ended = False

    async def _send(self, data: bytes) -> None:
        if self._ended:
            raise ConnectionError(f"link to {self.peer_id} is closed")
        self._to_app.put_nowait({"type": "websocket.receive", "bytes": data})

    async def _recv(self) -> bytes | None:
        data = await self.inbox.get()
        if data is None:
            self._ended = True
        return data

    async def _close(self, code: int, reason: str) -> None:
        self._end(code)

    def drop(self) -> None:
        super().drop()
        self._end(1006)

    def _end(self, code: int) -> None:
        if not self._ended:
            self._ended = True
            self._to_app.put_nowait({"type": "websocket.disconnect", "code": code})


class _HttpRouter(httpx.AsyncBaseTransport):
    """Hands each request to the server at its host and port, or fails as a closed port does."""

    def __init__(self, net: MemoryNetwork) -> None:
        self._net = net

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        server = self._net._at(request.url)
        if server is None:
            raise httpx.ConnectError(f"nothing listens at {request.url.netloc.decode()}", request=request)
        return await server.handle(request)
