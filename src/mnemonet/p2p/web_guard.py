"""What keeps web pages away from a node: Host names, cross-origin writes and the JSON content type.

A browser will send a ``text/plain`` or form POST to any address without asking
(no CORS preflight), and a DNS-rebinding page talks to ``127.0.0.1`` under its
own domain name. So:

- the ``Host`` header must be one of the node's own names (``HostGuard``), or a
  rebinding page's requests are refused before any route runs;
- a request whose ``Origin`` is not the node itself is refused for writes
  (``cross_origin``): browsers always send ``Origin`` on cross-origin POSTs;
- a POST must be ``application/json`` (``is_json``), which a page cannot send
  cross-origin without a preflight this node never grants.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(value: str) -> str:
    """The name part of a ``Host`` header (or URL netloc), lower case, without port or IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") > 1:  # a bare IPv6 address
        return value
    return value.partition(":")[0]


def own_names(bind_host: str, advertise_url: str, extra: Iterable[str]) -> frozenset[str]:
    """The names a client may call this node by: loopback, the bind host, the machine, the advertise URL, extras."""
    names = set(LOOPBACK_NAMES)
    names.update(host_name(n) for n in extra if n.strip())
    if advertise_url:
        names.add(host_name(urlsplit(advertise_url).netloc))
    if bind_host in ("0.0.0.0", "::", ""):
        names.add(socket.gethostname().lower())  # what _advertised_host puts in the node's URL
    else:
        names.add(host_name(bind_host))
    return frozenset(n for n in names if n)


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return name == "localhost"


class HostGuard:
    """ASGI middleware: refuse HTTP and WebSocket requests whose ``Host`` is not one of ``names``."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        self._app = app
        self._names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            name = host_name(Headers(scope=scope).get("host", ""))
            if name not in self._names and not _is_loopback(name):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008, "reason": "host is not this node"})
                    return
                response = JSONResponse(
                    {"error": {"code": "forbidden", "message": f"Host {name!r} is not a name of this node "
                               "(add it to MNEMONET_ALLOWED_HOSTS)"}}, status_code=403)
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


def cross_origin(headers: Headers) -> bool:
    """True when a browser says the request comes from a page of another origin than this node."""
    origin = headers.get("origin")
    if origin is None:
        return False  # not a browser (or a same-origin GET): tokens and Host decide
    return urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


def is_json(headers: Headers) -> bool:
    """True when the body is declared ``application/json`` (parameters such as charset allowed)."""
    return headers.get("content-type", "").partition(";")[0].strip().lower() == "application/json"
