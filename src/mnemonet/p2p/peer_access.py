"""Which peer may call which method: checked on the serving side, against what the caller announced.

Every peer holds the cluster key, so a signed request only proves that a peer
sent it. Worker-internal methods write on a worker's behalf (a claim, a
``SUPERSEDES`` link, a summary), so the serving node also checks that the
calling peer (the identity its link proved at set-up, or the signed sender of
an HTTP envelope) announced the worker capability that owns the method. Admin
methods need more than a peer: the client's admin token travels with the
routed call and is verified where the call is served, so the cluster key of a
``cli`` node is no admin credential.

Every other routed method (the client methods, the language model and
embedder calls, the audit append and the revocation list every node reads)
is open to any peer: peers relay clients, whose token was checked where it
entered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from contextvars import Token as VarToken

from mnemonet.model.errors import Forbidden
from mnemonet.p2p.registry import REGISTRY
from mnemonet.p2p.tokens import Token, TokenError

# The worker capability a peer must have announced to call each worker-internal method.
WORKER_METHOD_CAPABILITY: dict[str, str] = {r.name: r.caller for r in REGISTRY.values() if r.caller is not None}
# Served only with an admin client token carried in the request (``revoked_tokens`` is not here: every
# node reads the list to refuse revoked tokens, and it holds ids only).
ADMIN_METHODS: frozenset[str] = frozenset(
    r.name for r in REGISTRY.values() if r.scope == "admin" and r.name != "revoked_tokens")

# The bearer credential of the client call this task serves, so a routed admin call can carry it on.
_CREDENTIAL: ContextVar[str] = ContextVar("mnemonet_client_credential", default="")

CapabilitiesOf = Callable[[str], frozenset[str] | None]
Authenticate = Callable[[str], Awaitable[Token]]


def set_client_credential(credential: str) -> VarToken[str]:
    """Remember the client's credential for the calls made while serving it; ``reset`` when done."""
    return _CREDENTIAL.set(credential)


def reset_client_credential(token: VarToken[str]) -> None:
    """Restore the credential in force before ``set_client_credential``."""
    _CREDENTIAL.reset(token)


def forwarded_credential(method: str) -> str | None:
    """The credential a routed call of ``method`` carries: the client's, for admin methods only."""
    return _CREDENTIAL.get() if method in ADMIN_METHODS else None


async def check_peer_call(method: str, sender: str, capabilities_of: CapabilitiesOf, credential: object,
                          authenticate: Authenticate) -> None:
    """``Forbidden`` naming what is missing if peer ``sender`` may not call ``method``.

    ``authenticate`` raises ``TokenError`` (401) for a bad credential; on a keyless node it admits anyone,
    as every envelope there proves nothing either.
    """
    needed = WORKER_METHOD_CAPABILITY.get(method)
    if needed is not None:
        announced = capabilities_of(sender)
        if announced is None or needed not in announced:
            raise Forbidden(f"{method} is served only to peers with the {needed!r} capability; "
                            f"peer {sender} announced {sorted(announced) if announced is not None else 'nothing'}")
    elif method in ADMIN_METHODS:
        given = credential if isinstance(credential, str) else ""
        try:
            caller = await authenticate(given)
        except TokenError:
            if given:
                raise  # a bad token is a 401 saying what is wrong with it
            caller = None
        if caller is None or not caller.allows("admin"):
            raise Forbidden(f"{method} needs a client token with the 'admin' scope; peer {sender} relayed "
                            f"{'one without it' if caller is not None else 'none'} (the cluster key is no "
                            "admin credential)")
