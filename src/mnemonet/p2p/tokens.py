"""Client tokens: signed, scoped, expiring credentials any node verifies without a lookup.

The cluster key authenticates peers only. Clients (HTTP, scripts, the dashboard)
hold a token made from it::

    mnt1.<base64url(JSON claims)>.<base64url(HMAC-SHA256(token key, "mnt1." + claims part))>

The token key is ``HMAC-SHA256(cluster key, "mnemonet-token-v1")``, so a token
never reveals the cluster key and a leaked token cannot sign envelopes or other
tokens. The claims carry the token id (for revocation), the caller's name (its
``source``), its scopes, the memory spaces it may use (``*``: any; tokens made
before spaces existed may use ``default`` only) and its expiry.

Revocation: ``token revoke`` writes the id into the store (``revoke_token``).
Each node reads the list back when it checks a token and its copy is older than
``token_revocation_refresh`` seconds, waiting at most ``control_timeout`` for
it. So a revoked token stops working on every node within
``token_revocation_refresh`` seconds (at once on the node it was revoked
through) wherever a store is reachable; where none is, the node keeps its last
list, and such a token can reach no memory anyway. Sessions that outlive one
request (the dashboard's WebSocket) watch their token (``until_invalid``) and
close when it is revoked or expires, on the same terms.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mnemonet.model.errors import InvalidInput, Unauthorised
from mnemonet.model.spaces import DEFAULT_SPACE, parse_spaces
from mnemonet.p2p.registry import REGISTRY

log = logging.getLogger(__name__)

PREFIX = "mnt1"
_KEY_LABEL = b"mnemonet-token-v1"
SCOPES = ("read", "write", "admin", "speak-for")
# Names become ``source`` names: printable, no spaces at the ends, no control characters.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@:+-]{0,199}$")
_ID = re.compile(r"^[0-9a-f]{32}$")
# A token string longer than this is refused unread (a name of 200 chars and every scope fit well inside).
MAX_TOKEN_CHARS = 1024

# The scope each client method needs; a method missing here is not callable by a client at all
# (worker-internal methods are reached only by peers with the capability, over the peer protocol).
METHOD_SCOPE: dict[str, str] = {name: r.scope for name, r in REGISTRY.items() if r.scope is not None}
# A token's spaces that mean "every space".
ANY_SPACE = "*"


class TokenError(Unauthorised, ValueError):
    """A token that is malformed, badly signed, expired or revoked (an HTTP 401)."""


@dataclass(frozen=True)
class Token:
    """The verified claims of one token."""

    id: str
    name: str
    scopes: frozenset[str]
    expires: int  # Unix seconds
    spaces: tuple[str, ...] = (DEFAULT_SPACE,)  # the first is where calls naming no space go

    def allows(self, scope: str) -> bool:
        """True if the token carries ``scope``."""
        return scope in self.scopes

    def allows_space(self, space: str) -> bool:
        """True if the token may read and write (as its scopes allow) in ``space``."""
        return ANY_SPACE in self.spaces or space in self.spaces

    @property
    def home_space(self) -> str:
        """The space a call naming none works in: the token's first."""
        return DEFAULT_SPACE if self.spaces[0] == ANY_SPACE else self.spaces[0]


# The caller on a keyless (loopback-only) node: no identity of its own, so it may speak for any source.
LOCAL_CALLER = Token(id="", name="", scopes=frozenset(SCOPES), expires=0, spaces=(ANY_SPACE,))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def _unb64(text: str) -> bytes:
    """Strict base64url without padding: ``ValueError`` for any other character or a non-canonical end.

    The library decoder drops characters outside the alphabet and ignores the unused bits of the last
    character, so many strings decoded to one signature: a token with junk added still verified.
    """
    if not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def token_key(cluster_key: str) -> bytes:
    """The signing key of tokens, derived from the cluster key (never the cluster key itself)."""
    return hmac.new(cluster_key.encode(), _KEY_LABEL, hashlib.sha256).digest()


def parse_scopes(text: str | Iterable[str]) -> frozenset[str]:
    """Scopes from ``read,write`` (or a list); ``ValueError`` naming an unknown one."""
    items = text.split(",") if isinstance(text, str) else list(text)
    scopes = frozenset(s.strip() for s in items if s.strip())
    unknown = sorted(scopes - set(SCOPES))
    if unknown:
        raise InvalidInput(f"unknown scopes {unknown} (expected some of {list(SCOPES)})")
    if not scopes:
        raise InvalidInput(f"a token needs at least one scope of {list(SCOPES)}")
    return scopes


def token_spaces(text: str | Iterable[str]) -> tuple[str, ...]:
    """Spaces from ``a,b`` (or a list): space names, or ``*`` alone for every space."""
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else list(text))]
    if ANY_SPACE in items:
        if len([s for s in items if s]) > 1:
            raise InvalidInput("spaces: '*' (every space) stands alone")
        return (ANY_SPACE,)
    return parse_spaces(items)


def check_name(name: str) -> str:
    """``name`` if it can be a token's (and so a source's) name; ``ValueError`` otherwise."""
    if not isinstance(name, str) or not _NAME.match(name) or name != name.strip():
        raise InvalidInput("token name: 1..200 characters of letters, digits, space and ._@:+- "
                         "starting with a letter or digit")
    return name


def create_token(cluster_key: str, name: str, scopes: Iterable[str], ttl: float,
                 now: Callable[[], float] = time.time,
                 spaces: str | Iterable[str] = (DEFAULT_SPACE,)) -> tuple[str, Token]:
    """A new token string for ``name`` with ``scopes`` in ``spaces``, valid ``ttl`` seconds, and its claims."""
    if not cluster_key:
        raise InvalidInput("tokens need a cluster key to be signed with (set MNEMONET_CLUSTER_KEY)")
    if not ttl > 0:
        raise InvalidInput("ttl: must be more than 0 seconds")
    token = Token(id=secrets.token_hex(16), name=check_name(name), scopes=parse_scopes(scopes),
                  expires=int(now() + ttl), spaces=token_spaces(spaces))
    claims = {"id": token.id, "name": token.name, "scopes": sorted(token.scopes), "exp": token.expires,
              "spaces": list(token.spaces)}
    body = f"{PREFIX}.{_b64(json.dumps(claims, separators=(',', ':')).encode())}"
    signature = hmac.new(token_key(cluster_key), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(signature)}", token


class TokenVerifier:
    """Checks tokens against the cluster key, the clock and the revocation list."""

    def __init__(self, cluster_key: str, now: Callable[[], float] = time.time, *,
                 fetch_revoked: Callable[[], Awaitable[list[str]]] | None = None,
                 refresh: float = 10.0, fetch_timeout: float = 3.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cluster_key = cluster_key
        self._key = token_key(cluster_key) if cluster_key else b""
        self._now = now
        self.revoked: frozenset[str] = frozenset()
        self.fetch_revoked = fetch_revoked
        self._refresh = refresh
        self._fetch_timeout = fetch_timeout
        self._clock = clock
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()
        self._grown = asyncio.Event()  # set, and replaced, whenever the revocation list grows

    async def authenticate(self, credential: str) -> Token:
        """``caller``, with the revocation list brought up to date first (see the module docstring).

        Only a correctly signed token makes the node read the list, so junk credentials cost no store reads.
        """
        token = self.caller(credential)
        if token is not LOCAL_CALLER and self.fetch_revoked is not None and self._stale():
            async with self._lock:  # one read for all the requests that found the list stale
                if self._stale():
                    await self._fetch(self.fetch_revoked)
            if token.id in self.revoked:
                raise TokenError("token revoked")
        return token

    def _stale(self) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= self._refresh

    async def _fetch(self, fetch: Callable[[], Awaitable[list[str]]]) -> None:
        try:
            async with asyncio.timeout(self._fetch_timeout):
                self.revoke(await fetch())
        except Exception as exc:  # no store reachable: keep the list we have, try again next period
            log.warning("cannot read the token revocation list (keeping %d known): %r", len(self.revoked), exc)
        finally:
            self._fetched_at = self._clock()

    def caller(self, credential: str) -> Token:
        """Who a request's bearer credential names; a keyless node treats every (loopback) caller as local.

        Raises ``TokenError`` saying what is wrong; the cluster key itself gets a hint, since it
        used to be the client password.
        """
        if not self._key:
            return LOCAL_CALLER
        if not credential:
            raise TokenError("missing 'Authorization: Bearer <token>' (make one: "
                             "run_node.py token create NAME --scopes read,write)")
        if hmac.compare_digest(credential.encode(), self._cluster_key.encode()):
            raise TokenError("the cluster key authenticates peers only; clients send a token "
                             "(run_node.py token create NAME --scopes read,write)")
        return self.verify(credential)

    def revoke(self, ids: Iterable[str]) -> None:
        """Add token ids to the revocation list (ids from the store, or revoked through this node)."""
        new = frozenset(ids) - self.revoked
        if new:
            self.revoked = self.revoked | new
            grown, self._grown = self._grown, asyncio.Event()
            grown.set()  # the sessions watching their tokens look again (``until_invalid``)

    async def until_invalid(self, credential: str) -> str:
        """Wait until ``credential`` stops being valid; why (revoked, expired). For sessions that outlive a request.

        A revocation through this node is seen at once, one through another node when the list is read again
        (every ``token_revocation_refresh`` seconds, as for any call), an expiry at its second. A keyless node's
        caller never stops being valid.
        """
        while True:
            try:
                token = await self.authenticate(credential)
            except TokenError as exc:
                return str(exc)
            if token is LOCAL_CALLER:
                await asyncio.Event().wait()  # until the session ends for another reason (cancelled)
            grown = self._grown
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(self._refresh, token.expires - self._now())):
                    await grown.wait()

    def verify(self, text: str) -> Token:
        """The claims of a valid token; ``TokenError`` saying what is wrong otherwise."""
        token = self.signed(text)
        if token.expires <= self._now():
            raise TokenError("token expired")
        if token.id in self.revoked:
            raise TokenError("token revoked")
        return token

    def signed(self, text: str) -> Token:
        """The claims of a token this cluster signed, expired or revoked ones included (revoking a token
        names it by them); ``TokenError`` for anything else."""
        if not self._key:
            raise TokenError("this node has no cluster key, so it verifies no tokens")
        text = text.strip()
        if len(text) > MAX_TOKEN_CHARS or text.count(".") != 2 or not text.startswith(PREFIX + "."):
            raise TokenError("not a mnemonet token (expected mnt1.<claims>.<signature>; "
                             "make one with `run_node.py token create NAME --scopes read`)")
        body, _, signature = text.rpartition(".")
        expected = hmac.new(self._key, body.encode(), hashlib.sha256).digest()
        try:
            given = _unb64(signature)
        except ValueError:
            raise TokenError("token signature is not base64url") from None
        if not hmac.compare_digest(given, expected):
            raise TokenError("token signature does not match this cluster's key")
        try:
            claims = json.loads(_unb64(body.split(".", 1)[1]))
            token = Token(id=str(claims["id"]), name=check_name(claims["name"]),
                          scopes=parse_scopes(claims["scopes"]), expires=int(claims["exp"]),
                          spaces=token_spaces(claims.get("spaces", [DEFAULT_SPACE])))
        except (ValueError, KeyError, TypeError):
            raise TokenError("token claims are malformed") from None
        if not _ID.match(token.id):
            raise TokenError("token id is malformed")
        return token


def parse_ttl(text: str) -> float:
    """Seconds from ``90d``, ``12h``, ``30m``, ``45s`` or a plain number of seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if match is None:
        raise InvalidInput(f"ttl: {text!r} is not a duration such as 90d, 12h, 30m or 3600")
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * unit


def claimed_scopes(text: str) -> frozenset[str] | None:
    """The scopes a token says it has, unverified; None if it is not readable as a token.

    For a client choosing what to send (an adapter without ``speak-for`` leaves ``source`` to the node),
    never for deciding what a caller may do: only ``TokenVerifier`` does that.
    """
    try:
        return parse_scopes(_claims(text)["scopes"])
    except (ValueError, KeyError, TypeError):
        return None


def claimed_name(text: str) -> str | None:
    """The name a token says it has, unverified; None if it is not readable as a token.

    For a client working out the ids of its own keyed writes (``HttpMemoryClient.writer``), never for
    deciding who a caller is: only ``TokenVerifier`` does that.
    """
    try:
        name = _claims(text)["name"]
    except (ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def claimed_expiry(text: str) -> int | None:
    """When a token says it expires (Unix seconds), unverified; None if it is not readable as a token.

    For a client ending its own session then (``mnemonet mcp``), never for deciding what a caller may do.
    """
    try:
        expires = _claims(text)["exp"]
    except (ValueError, KeyError, TypeError):
        return None
    return expires if type(expires) is int else None


def _claims(text: str) -> dict[str, Any]:
    parts = text.strip().split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise ValueError("not a token")
    claims = json.loads(_unb64(parts[1]))
    if not isinstance(claims, dict):
        raise ValueError("claims are not an object")
    return claims
