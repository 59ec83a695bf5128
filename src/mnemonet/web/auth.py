"""Who may read the dashboard data: a client token with the ``read`` scope, and the page's own origin for WebSockets.

Browsers cannot set an ``Authorization`` header on a WebSocket, so the page
sends the token as the ``key`` query parameter there (it keeps the token in the
URL fragment, ``/ui#key=...``, which browsers never send to the server) and as a
bearer header on plain requests. A keyless (loopback) node lets every local
page in; its Host check (``mnemonet.p2p.web_guard``) keeps rebinding pages out.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, QueryParams

from mnemonet.model.errors import Forbidden
from mnemonet.model.spaces import check_space
from mnemonet.p2p.tokens import TokenError, TokenVerifier


async def may_read(tokens: TokenVerifier, credential: str) -> bool:
    """True when ``credential`` is a valid token with the read scope (or the node is keyless)."""
    try:
        return (await tokens.authenticate(credential.strip())).allows("read")
    except TokenError:
        return False


async def readable_space(tokens: TokenVerifier, credential: str, asked: str | None) -> str:
    """The memory space a dashboard request reads: ``asked``, else the token's first.

    Call after ``may_read``; ``InvalidInput`` for a malformed name, ``Forbidden`` for a space the
    token may not use.
    """
    caller = await tokens.authenticate(credential.strip())
    space = check_space(asked) if asked is not None else caller.home_space
    if not caller.allows_space(space):
        raise Forbidden(f"this token may not use space {space!r}")
    return space


def bearer_token(headers: Headers) -> str:
    """The token of an ``Authorization: Bearer`` header, or an empty string."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" else ""


def request_token(headers: Headers, query: QueryParams) -> str:
    """The key a dashboard request carries: bearer header first, else the ``key`` query parameter."""
    return bearer_token(headers) or query.get("key", "")


def same_origin(headers: Headers) -> bool:
    """A browser's WebSocket must come from a page of this node (WebSockets ignore CORS).

    Without this, any web site open in the same browser could read a keyless
    development node's memory through ``ws://127.0.0.1:9000/v1/ws``. Clients
    that are not browsers send no ``Origin`` and are let through to the key check.
    """
    origin = headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
