"""Which capability each remote method needs (from ``p2p/registry.py``), and which peer serves it.

Only the methods declared there can be called over the network: a request for
any other name is refused, so no one calls arbitrary service methods by name.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from mnemonet.p2p.errors import UnknownMethod
from mnemonet.p2p.membership import Member, Membership, MemberState
from mnemonet.p2p.registry import REGISTRY, declared

# Views of the registry for callers that want one aspect of it.
STORE_METHODS = tuple(name for name, r in REGISTRY.items() if r.capability == "store")
LLM_METHODS = tuple(name for name in REGISTRY if name.startswith("llm."))
METHOD_CAPABILITY: dict[str, str] = {name: r.capability for name, r in REGISTRY.items()}
# The methods the client HTTP API exposes, each behind a token scope; worker-internal methods
# (record_inference, pending_*, mark_processed, link_statements, record_summary) are not among them.
CLIENT_METHODS: frozenset[str] = frozenset(name for name, r in REGISTRY.items() if r.scope is not None)


def capability_of(method: str) -> str:
    """The capability ``method`` needs; ``UnknownMethod`` if it is not allowed."""
    remote = declared(method)
    if remote is None:
        raise UnknownMethod(f"unknown method {method!r}")
    return remote.capability


@dataclass
class PeerLoad:
    """What routing knows about one peer: requests in flight and smoothed latency (seconds)."""

    in_flight: int = 0
    latency: float | None = None


class Router:
    """Picks the peer for a method: alive before suspect, then least in-flight requests, then lowest recent
    latency."""

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

    def _rank(self, member: Member) -> tuple[bool, int, float]:
        # A suspect most likely cannot answer (a crash or a partition not yet confirmed): a call sent there
        # waits out its timeout, so suspects are the last resort.
        suspect = member.state is MemberState.SUSPECT
        load = self._load.get(member.node_id)
        if load is None:
            return (suspect, 0, 0.0)
        # Untried peers rank as fast so they get a first sample.
        return (suspect, load.in_flight, load.latency if load.latency is not None else 0.0)

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
