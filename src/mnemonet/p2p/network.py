"""How a node meets the network: serve its app, send HTTP requests, dial links.

``SOCKETS`` is the real network: uvicorn on a socket, ``httpx`` over TCP,
``websockets`` links. ``mnemonet.p2p.memory_network`` offers the same three
over in-memory queues, for multi-node tests where the network is not the
point (memberlist's ``MockNetwork``). A node takes one ``Network`` and never
asks which it has.
"""

from __future__ import annotations

from typing import Protocol

import httpx
from starlette.types import ASGIApp

from mnemonet.p2p.http_server import HttpServer
from mnemonet.p2p.links import DialledLink, Link


class Server(Protocol):
    """Serves one app until stopped."""

    async def start(self) -> int:
        """Start serving; the bound port."""

    async def stop(self, force: bool = False) -> None:
        """Stop serving; ``force`` drops open connections as a crash does."""


class Network(Protocol):
    def server(self, app: ASGIApp, host: str, port: int, *, ws_max_bytes: int, graceful_timeout: float,
               idle_timeout: float, header_timeout: float) -> Server:
        """A server for ``app`` at ``host:port`` (port 0: any free one)."""

    def http_client(self, *, timeout: httpx.Timeout, limits: httpx.Limits) -> httpx.AsyncClient:
        """An HTTP client that reaches the servers of this network."""

    async def dial(self, peer_id: str, ws_url: str, *, timeout: float, max_bytes: int) -> Link:
        """Open a link to ``ws_url``; ``ConnectionError`` when it cannot be reached."""


class SocketNetwork:
    """The real network."""

    def server(self, app: ASGIApp, host: str, port: int, *, ws_max_bytes: int, graceful_timeout: float,
               idle_timeout: float, header_timeout: float) -> Server:
        return HttpServer(app, host, port, ws_max_bytes=ws_max_bytes, graceful_timeout=graceful_timeout,
                          idle_timeout=idle_timeout, header_timeout=header_timeout)

    def http_client(self, *, timeout: httpx.Timeout, limits: httpx.Limits) -> httpx.AsyncClient:
        # Peer traffic goes direct, never through a proxy from the environment.
        return httpx.AsyncClient(trust_env=False, timeout=timeout, limits=limits)

    async def dial(self, peer_id: str, ws_url: str, *, timeout: float, max_bytes: int) -> Link:
        return await DialledLink.open(peer_id, ws_url, timeout=timeout, max_bytes=max_bytes)


SOCKETS = SocketNetwork()
