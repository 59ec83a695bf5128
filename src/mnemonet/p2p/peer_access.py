"""Which peer may call which method: checked on the serving side, against what the caller proved.

Every peer holds the cluster key, so a signed envelope only proves that some
peer wrote it, not which: over HTTP its ``sender`` is whatever the writer put
there. Worker-internal methods write on a worker's behalf (a claim, a
``SUPERSEDES`` link, a summary), so they are served only on a link, whose
handshake bound the peer's id (``handshake.py``; the transport refuses an
envelope in another id on it), and only to a peer that announced the worker
capability owning the method. Admin methods need more than a peer: the
client's admin token travels with the routed call and is verified where the
call is served, so the cluster key of a ``cli`` node is no admin credential.
A client's write travels with its token too: the serving node names the
token, never the payload, as who wrote it in the audit log (``audit.py``).

Every other routed method (the client methods, the language model and
embedder calls, the revocation list every node reads) is open to any peer:
peers relay clients, whose token was checked where it entered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from contextvars import Token as VarToken
from dataclasses import dataclass

from mnemonet.model.errors import Forbidden
from mnemonet.p2p.audit import audited
from mnemonet.p2p.registry import REGISTRY
from mnemonet.p2p.tokens import Token, TokenError

# The worker capability a peer must have announced to call each worker-internal method.
WORKER_METHOD_CAPABILITY: dict[str, str] = {r.name: r.caller for r in REGISTRY.values() if r.caller is not None}
# Served only with an admin client token carried in the request (``revoked_tokens`` is not here: every
# node reads the list to refuse revoked tokens, and it holds ids only).
ADMIN_METHODS: frozenset[str] = frozenset(
    r.name for r in REGISTRY.values() if r.scope == "admin" and r.name != "revoked_tokens")


@dataclass(frozen=True)
class ClientCall:
    """The client call this task serves: its bearer credential, and its verified token where this node checked
    it (the HTTP API does; the CLI only carries its session's credential for routed admin calls)."""

    credential: str
    caller: Token | None = None


_CLIENT: ContextVar[ClientCall | None] = ContextVar("mnemonet_client_call", default=None)

CapabilitiesOf = Callable[[str], frozenset[str] | None]
Authenticate = Callable[[str], Awaitable[Token]]


def serve_client(credential: str, caller: Token | None = None) -> VarToken[ClientCall | None]:
    """Mark the calls made from here on as a client's; ``reset_client`` when done."""
    return _CLIENT.set(ClientCall(credential, caller))


def reset_client(token: VarToken[ClientCall | None]) -> None:
    """Restore the client call in force before ``serve_client``."""
    _CLIENT.reset(token)


def client_caller(method: str) -> Token | None:
    """The verified client token a call of ``method`` served on this node acts for: an audited one's only."""
    call = _CLIENT.get()
    return call.caller if call is not None and audited(method) else None


def forwarded_credential(method: str) -> str | None:
    """The credential a routed call of ``method`` carries: the client's, for admin methods (always) and for the
    other audited ones (when this node verified it: a client's, not the CLI's own calls)."""
    call = _CLIENT.get()
    if call is None:
        return None
    if method in ADMIN_METHODS or (audited(method) and call.caller is not None):
        return call.credential
    return None


async def check_peer_call(method: str, sender: str, linked: bool, capabilities_of: CapabilitiesOf,
                          credential: object, authenticate: Authenticate) -> Token | None:
    """The client token a peer's call of ``method`` acts for (None: the peer's own call); ``Forbidden`` naming
    what is missing if peer ``sender`` may not call it. ``linked``: it came on a link proven to be ``sender``'s.

    ``authenticate`` raises ``TokenError`` (401) for a bad credential; on a keyless node it admits anyone,
    as every envelope there proves nothing either.
    """
    needed = WORKER_METHOD_CAPABILITY.get(method)
    if needed is not None:
        if not linked:
            raise Forbidden(f"{method} is served only on a link (its handshake proves the peer's id); an "
                            f"envelope over HTTP proves no sender, and this one claims {sender}")
        announced = capabilities_of(sender)
        if announced is None or needed not in announced:
            raise Forbidden(f"{method} is served only to peers with the {needed!r} capability; "
                            f"peer {sender} announced {sorted(announced) if announced is not None else 'nothing'}")
        return None
    given = credential if isinstance(credential, str) else None
    if method in ADMIN_METHODS:
        try:
            caller = await authenticate(given or "")
        except TokenError:
            if given:
                raise  # a bad token is a 401 saying what is wrong with it
            caller = None
        if caller is None or not caller.allows("admin"):
            raise Forbidden(f"{method} needs a client token with the 'admin' scope; peer {sender} relayed "
                            f"{'one without it' if caller is not None else 'none'} (the cluster key is no "
                            "admin credential)")
        return caller
    if given is not None and audited(method):
        return await authenticate(given)  # a client's write: its token, verified here, is who the audit names
    return None
