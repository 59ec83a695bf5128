"""The audit trail: the node that serves a client's write or admin call appends its record, there and then.

Nothing a peer sends is taken as a record: there is no remote append. Who is
the client's token as the serving node verified it (the HTTP API's check when
the call entered here, else the credential the relaying peer carried, checked
again here); what is the method this node ran, with the ids it wrote, how it
ended and the spaces it touched (``p2p/authority.py``), so an admin of some
spaces reads the records of those. Reads are not audited.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from mnemonet.model.errors import describe
from mnemonet.p2p.authority import every_space, touched
from mnemonet.p2p.registry import REGISTRY
from mnemonet.p2p.tokens import Token

log = logging.getLogger(__name__)

AUDITED_SCOPES = frozenset({"write", "admin"})


class AuditLog(Protocol):
    """Where records go: the store node's memory (``MemoryService.record_audit``)."""

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str,
                           spaces: list[str] | None = None) -> None: ...


def audited(method: str) -> bool:
    """True for a client method whose calls leave a record (its scope writes or administers)."""
    remote = REGISTRY.get(method)
    return remote is not None and remote.scope in AUDITED_SCOPES


def written(method: str, kwargs: dict[str, Any], result: Any) -> str:
    """What an audited call wrote, by id (never its text)."""
    if method == "revoke_token":
        return str(kwargs.get("token_id", ""))
    if method in ("create_space", "delete_space"):
        return str(kwargs.get("name", ""))
    if method in ("share_space", "unshare_space"):
        return f"{kwargs.get('name', '')} reads {kwargs.get('reads', '')}"
    if method == "import_file" and result is not None:
        return f"{result.ok} lines written, {result.duplicate} already there"
    for attr in ("observation_id", "statement_id", "retraction_id", "tombstone_id"):
        if (value := getattr(result, attr, None)) is not None:
            return str(value)
    return ""


def record_spaces(caller: Token, method: str, kwargs: dict[str, Any]) -> list[str]:
    """The spaces a record is filed under: those the call named; for a call naming none (revoking a token,
    reading the log), the caller's, or none for a token of every space (then only such tokens read it)."""
    remote = REGISTRY[method]
    if remote.reach is not None and remote.reach.kind == "named":
        return list(touched(remote, kwargs))
    return [] if every_space(caller) else list(caller.spaces)


async def append(log_to: AuditLog, node_id: str, caller: Token, method: str, kwargs: dict[str, Any],
                 result: Any = None, error: BaseException | None = None) -> None:
    """Write the record of ``method`` served here for ``caller``: ok with what it wrote, or the error's code.

    The call is done either way: its answer never depends on the audit write (a failure is logged).
    """
    who = caller.name or "local"
    try:
        await log_to.record_audit(
            who=who, method=method, node=node_id, outcome="ok" if error is None else describe(error).code,
            detail=written(method, kwargs, result) if error is None else "",
            spaces=record_spaces(caller, method, kwargs))
    except Exception as exc:
        log.error("audit record not written for %s by %s: %r", method, who, exc)
