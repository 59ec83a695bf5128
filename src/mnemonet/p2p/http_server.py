"""uvicorn serving one ASGI app on a socket, in a task of the running event loop.

HTTP/1.1 is spoken by uvicorn's h11 protocol with one addition: a connection
has ``header_timeout`` seconds from its start, or from the end of its
previous response, to send a whole request head. uvicorn bounds only the
idle time between requests (``timeout_keep_alive``, reset by any byte), so
clients sending headers a line at a time held connections for ever
(slowloris, issue 31: 50 held for 60 s and more).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol


class _Config(uvicorn.Config):
    """uvicorn's configuration and the seconds a request head may take to arrive."""

    def __init__(self, app: ASGIApp, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(app, http=_HeadTimedH11, **kwargs)
        self.header_timeout = header_timeout


class _HeadTimedH11(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head is not whole within its deadline."""

    def __init__(self, config: _Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._header_timeout = config.header_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        # A whole head has been read once h11 moved past waiting for one (a request is under way).
        if self.conn.their_state is not h11.IDLE:
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()  # the next request on this kept-alive connection

    def _await_head(self) -> None:
        self._head_arrived()
        self._head_deadline = self.loop.call_later(self._header_timeout, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


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

    def __init__(self, app: ASGIApp, host: str, port: int, *, ws_max_bytes: int, graceful_timeout: float,
                 idle_timeout: float, header_timeout: float) -> None:
        self._app = app
        self._idle_timeout = idle_timeout
        self._header_timeout = header_timeout
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
        config = _Config(
            self._app, lifespan="off", log_level="warning", ws_max_size=self._ws_max_bytes,
            timeout_graceful_shutdown=max(1, int(self._graceful_timeout)), access_log=False,
            timeout_keep_alive=max(1, int(self._idle_timeout)), header_timeout=self._header_timeout,
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
        server = self._server
        server.should_exit = True
        if force:
            server.force_exit = True
        try:
            await self._task
            if force:
                await self._end_requests(server)
        finally:
            self._server = None
            self._task = None

    async def _end_requests(self, server: _Server) -> None:
        """Cancel the requests a forced stop left running, as a crash would end them.

        uvicorn leaves them pending; dropped with the server, they were destroyed mid-await by the
        garbage collector, where no ``finally`` of theirs can release what it holds.
        """
        requests = set(server.server_state.tasks)
        for task in requests:
            task.cancel()
        if requests:
            await asyncio.wait(requests, timeout=self._graceful_timeout)

