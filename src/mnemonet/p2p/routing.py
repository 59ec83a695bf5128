"""Which capability each remote method needs, and which peer serves it.

Only the methods named here can be called over the network: a request for
any other name is refused, so no one calls arbitrary service methods by name.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemonet.p2p.errors import UnknownMethod
from mnemonet.p2p.tokens import METHOD_SCOPE

if TYPE_CHECKING:
    from mnemonet.p2p.membership import Member, Membership

STORE_METHODS = (
    "observe", "claim", "remember", "recall", "search", "load", "get_recent_observations",
    "get_recent_statements", "get_unresolved_contradictions", "get_concepts",
    "get_concept_statements", "stats", "clear", "revoke_token", "revoked_tokens", "record_audit", "audit_log",
    "record_inference", "pending_observations", "pending_statements", "mark_processed", "link_statements",
    "pending_consolidation", "record_summary", "pending_extractions", "complete_extraction",
    "predicate_profile", "record_predicate", "retract", "forget", "tombstones",
)
LLM_METHODS = (
    "llm.extract_observation", "llm.parse_claim", "llm.answer", "llm.infer_claims",
    "llm.judge_pairs", "llm.summarise", "llm.predicate_cardinality",
)

METHOD_CAPABILITY: dict[str, str] = {
    **{m: "store" for m in STORE_METHODS},
    "infer": "llm",
    **{m: "llm" for m in LLM_METHODS},
    "embed.embed": "embed",
}

# The methods the client HTTP API exposes, each behind a token scope; worker-internal methods
# (record_inference, pending_*, mark_processed, link_statements, record_summary) are not among them.
CLIENT_METHODS: frozenset[str] = frozenset(METHOD_SCOPE)



def capability_of(method: str) -> str:
    """The capability ``method`` needs; ``UnknownMethod`` if it is not allowed."""
    try:
        return METHOD_CAPABILITY[method]
    except KeyError:
        raise UnknownMethod(f"unknown method {method!r}") from None


@dataclass
class PeerLoad:
    """What routing knows about one peer: requests in flight and smoothed latency (seconds)."""

    in_flight: int = 0
    latency: float | None = None


class Router:
    """Picks the peer for a method: least in-flight requests, then lowest recent latency."""

    def __init__(self, membership: Membership, ewma_alpha: float, rng: random.Random | None = None) -> None:
        self._membership = membership
        self._alpha = ewma_alpha
        self._rng = rng or random.Random()
        self._load: dict[str, PeerLoad] = {}

    def candidates(self, method: str, exclude: Iterable[str] = ()) -> list[Member]:
        """Live remote peers able to serve ``method``, best first."""
        capability = capability_of(method)
        skip = set(exclude)
        peers = [m for m in self._membership.alive(capability, include_local=False) if m.node_id not in skip]
        self._rng.shuffle(peers)  # ties broken at random so equal peers share the load
        return sorted(peers, key=self._rank)

    def _rank(self, member: Member) -> tuple[int, float]:
        load = self._load.get(member.node_id)
        if load is None:
            return (0, 0.0)
        # Untried peers rank as fast so they get a first sample.
        return (load.in_flight, load.latency if load.latency is not None else 0.0)

    def started(self, node_id: str) -> None:
        """A request to ``node_id`` began."""
        self._load.setdefault(node_id, PeerLoad()).in_flight += 1

    def finished(self, node_id: str, latency: float | None) -> None:
        """A request to ``node_id`` ended; ``latency`` is None when it failed."""
        load = self._load.setdefault(node_id, PeerLoad())
        load.in_flight = max(0, load.in_flight - 1)
        if latency is not None:
            load.latency = latency if load.latency is None else (
                self._alpha * latency + (1 - self._alpha) * load.latency
            )

    def forget(self, node_id: str) -> None:
        """Drop what is known about a peer that left or died."""
        self._load.pop(node_id, None)

    def load_of(self, node_id: str) -> PeerLoad | None:
        """Current load figures for ``node_id``, if any."""
        return self._load.get(node_id)
