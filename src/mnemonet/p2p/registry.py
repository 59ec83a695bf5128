"""The one registry of remote methods: each method's name, capability and client scope.

Everything that exposes or routes a method reads this table: the router (which
capability serves it), the RPC layer and the HTTP API (``p2p/methods.py`` adds
the argument and result types from the interfaces), the token scopes, and the
OpenAPI document. A name missing here cannot be called over the network at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["read", "write", "admin"]


@dataclass(frozen=True)
class Remote:
    """One remote method as declared.

    ``scope`` is the token scope a client needs to call it over HTTP; ``None`` keeps it
    peer-only (worker-internal methods are reached only by peers with the capability).
    """

    name: str
    capability: str
    scope: Scope | None = None


_STORE_CLIENT: tuple[tuple[str, Scope], ...] = (
    ("observe", "write"), ("claim", "write"), ("remember", "read"), ("recall", "read"), ("search", "read"),
    ("load", "read"), ("get_recent_observations", "read"), ("get_recent_statements", "read"),
    ("get_unresolved_contradictions", "read"), ("get_concepts", "read"), ("get_concept_statements", "read"),
    ("stats", "read"), ("clear", "admin"), ("revoke_token", "admin"), ("revoked_tokens", "admin"),
    ("audit_log", "admin"),
)
_STORE_PEER = (
    "record_audit", "record_inference", "pending_observations", "pending_statements", "mark_processed",
    "link_statements", "pending_consolidation", "record_summary", "pending_extractions", "complete_extraction",
    "predicate_profile", "record_predicate",
)
_LLM_PEER = (
    "llm.extract_observation", "llm.parse_claim", "llm.answer", "llm.infer_claims",
    "llm.judge_pairs", "llm.summarise", "llm.predicate_cardinality",
)

REGISTRY: dict[str, Remote] = {
    r.name: r
    for r in (
        *(Remote(name, "store", scope) for name, scope in _STORE_CLIENT),
        *(Remote(name, "store") for name in _STORE_PEER),
        Remote("infer", "llm", "read"),
        *(Remote(name, "llm") for name in _LLM_PEER),
        Remote("embed.embed", "embed"),
    )
}


def declared(name: str) -> Remote | None:
    """The declaration of ``name``; None if it is not a remote method."""
    return REGISTRY.get(name)
