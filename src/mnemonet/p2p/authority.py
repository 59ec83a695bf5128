"""How far a client token reaches: the memory spaces a call touches, checked against the token's spaces.

The one place that decides it, from each method's declared reach (``Remote.reach`` in
``p2p/registry.py``); the HTTP API runs ``authorise`` on every client call before it is routed.
A token names the spaces it may use (``*``: every space). Within them its scopes apply as they
are: a ``read`` token reads its spaces, an ``admin`` token manages them (creates, deletes, shares
between two of them, erases, reads their audit records and tombstones, revokes tokens of theirs).
Beyond them it reaches nothing, whatever a method's arguments are called. Only a token for every
space manages the network as a whole: other holders' tokens, the revocation list, the whole audit
log, every space's name.

It also fills in the arguments the node decides from the token (``SERVER_FILLED``), whatever the body said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemonet.model.errors import Forbidden, InvalidInput
from mnemonet.model.spaces import DEFAULT_SPACE, SpaceView, check_space
from mnemonet.model.views import TombstoneView
from mnemonet.p2p.registry import SERVER_FILLED, Remote
from mnemonet.p2p.tokens import ANY_SPACE, PREFIX, Token, TokenError, TokenVerifier


def every_space(caller: Token) -> bool:
    """True for a token of every space (``*``): the only kind that manages the network as a whole."""
    return ANY_SPACE in caller.spaces


def touched(remote: Remote, kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The spaces a ``named`` call's arguments name, checked (``InvalidInput`` for a malformed one); a ``space``
    left out is the default space. Empty for a call of another reach."""
    if remote.reach is None or remote.reach.kind != "named":
        return ()
    names = []
    for arg in remote.reach.args:
        value = kwargs.get(arg, DEFAULT_SPACE if arg == "space" else None)
        if value is not None:  # a missing required argument is refused with the others, when the call is bound
            names.append(check_space(value, arg))
    return tuple(dict.fromkeys(names))


def authorise(caller: Token, remote: Remote, kwargs: dict[str, Any], tokens: TokenVerifier) -> None:
    """``Forbidden`` if ``caller`` may not make this call for the spaces it touches; else fill in ``kwargs``.

    ``space`` left out becomes the token's first space (and is dropped again when that is the default
    space, as every MemoryAPI reads no space); a token string given to ``revoke_token`` becomes its id.
    """
    reach = remote.reach
    if reach is None or reach.kind == "cluster":
        if not every_space(caller):
            raise Forbidden(f"{remote.name} concerns the whole network: it needs a token for every space ('*'), "
                            f"not one for {', '.join(caller.spaces)}")
    elif reach.kind == "named":
        if "space" in reach.args:
            kwargs.setdefault("space", caller.home_space)
        for space in touched(remote, kwargs):
            if not caller.allows_space(space):
                raise Forbidden(f"this token may not use space {space!r} (its spaces: {', '.join(caller.spaces)})")
        if kwargs.get("space") == DEFAULT_SPACE:
            del kwargs["space"]  # naming no space means the default one, to every MemoryAPI
    elif reach.kind == "token":
        _revocable(caller, kwargs, tokens)
    _fill(caller, remote.name, kwargs)


def _revocable(caller: Token, kwargs: dict[str, Any], tokens: TokenVerifier) -> None:
    # A token string is read for its claims (signed by this cluster; expired or revoked ones too) and named by
    # its id from here on; an id alone says nothing of its spaces, so only a token of every space revokes by id.
    given = kwargs.get("token_id")
    if isinstance(given, str) and given.startswith(PREFIX + "."):
        try:
            target = tokens.signed(given)
        except TokenError as exc:  # the token revoked is bad input; the caller's own is fine
            raise InvalidInput(f"token_id: {exc}") from None
        kwargs["token_id"] = target.id
        if not every_space(caller) and (every_space(target) or not set(target.spaces) <= set(caller.spaces)):
            raise Forbidden(f"this token may not revoke one for {', '.join(target.spaces)} (its spaces: "
                            f"{', '.join(caller.spaces)})")
    elif not every_space(caller):
        raise Forbidden("a token for some spaces revokes another by the token itself (token_id: the mnt1.… "
                        "string), so its spaces can be checked; by id only a token for every space ('*') does")


def _fill(caller: Token, method: str, kwargs: dict[str, Any]) -> None:
    filled = SERVER_FILLED.get(method, frozenset())
    if "by" in filled:
        kwargs["by"] = caller.name or "local"  # who did it is the caller, never what it says
    if "as_source" in filled:
        # An import's lines are said by the token's name unless it may speak for others (a line naming another
        # speaker is refused alone). Lines naming no speaker are ``default_source``'s, as in ``run_node.py
        # import``, so the same file gets the same observations through either.
        kwargs["as_source"] = caller.name if caller.name and not caller.allows("speak-for") else None
    if "writer" in filled:
        # A key names one token's write: another token's same key is another item, and a conflict names only
        # the caller's own. A keyless node's caller has no name: its keys stay unscoped (and it sends none,
        # so a store node from before the argument still takes the call).
        kwargs.pop("writer", None)
        if caller.name:
            kwargs["writer"] = caller.name
    if "spaces" in filled:
        kwargs.pop("spaces", None)
        if not every_space(caller):
            kwargs["spaces"] = list(caller.spaces)
    if "any_source" in filled:
        kwargs.pop("any_source", None)
        if caller.allows("admin"):  # an admin of the space (its spaces were checked above)
            kwargs["any_source"] = True


def visible(caller: Token, method: str, result: Any) -> Any:
    """``result`` cut to what ``caller``'s spaces may see: the spaces listed, the tombstones of erased spaces."""
    if every_space(caller):
        return result
    if method == "spaces":
        return [view for view in result if isinstance(view, SpaceView) and caller.allows_space(view.name)]
    if method == "tombstones":
        return [t for t in result if isinstance(t, TombstoneView) and caller.allows_space(t.space)]
    return result
