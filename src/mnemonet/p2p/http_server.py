"""uvicorn serving one ASGI app on a socket, in a task of the running event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp


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
                 idle_timeout: float) -> None:
        self._app = app
        self._idle_timeout = idle_timeout
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
            timeout_keep_alive=max(1, int(self._idle_timeout)),
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

