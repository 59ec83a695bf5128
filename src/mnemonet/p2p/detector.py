"""SWIM failure detector: probe one member per interval, ask others when it is silent.

The detector owns timing and the choice of whom to probe; the verdicts and
their dissemination belong to :class:`~mnemonet.p2p.membership.Membership`.
Messages go through a :class:`ProbeTransport`, and time through an injected
clock and ``sleep``, so tests and the simulator run it with simulated time.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState

log = logging.getLogger(__name__)


class ProbeTransport(Protocol):
    """How the detector reaches other members (implemented by the network layer)."""

    async def ping(
        self, target: Member, piggyback: list[dict[str, Any]], timeout: float
    ) -> list[dict[str, Any]] | None:
        """Ping ``target``; return the ack's piggyback, or None on timeout/failure."""

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> bool:
        """Ask ``via`` to ping ``target``; True if ``via`` got an ack within ``timeout``."""

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Send our full state to ``target`` and return its full state, None on failure."""


@dataclass(frozen=True)
class DetectorConfig:
    """Timers and fanout of the failure detector (mapped from ``Settings``).

    probe_interval: seconds between probes; each probes one member.
    probe_timeout: seconds to wait for a direct ack before probing indirectly
        (also the timeout of the ping a member sends for someone else's
        indirect probe).
    indirect_probes: members asked to ping a silent target (SWIM's k).
    push_pull_interval: seconds between full-state exchanges with one
        random member (anti-entropy).
    """

    probe_interval: float = 1.0
    probe_timeout: float = 0.5
    indirect_probes: int = 3
    push_pull_interval: float = 15.0

    def __post_init__(self) -> None:
        if not 0 < self.probe_timeout <= self.probe_interval:
            raise ValueError("need 0 < probe_timeout <= probe_interval")
        if self.indirect_probes < 0 or self.push_pull_interval <= 0:
            raise ValueError("indirect_probes must be >= 0 and push_pull_interval > 0")

    @property
    def indirect_timeout(self) -> float:
        """How long an indirect probe may take: the rest of the protocol period."""
        return max(self.probe_timeout, self.probe_interval - self.probe_timeout)


def detection_bound(n_members: int, membership: MembershipConfig, detector: DetectorConfig) -> float:
    """Seconds within which every survivor declares a crashed member dead, without message loss.

    Each survivor's round-robin probes every member at least once in any two
    consecutive passes over its shuffled list (2 x (N - 1) periods), a probe
    ends within one period, its suspicion then expires after the (scaled)
    suspicion timeout, and ``tick`` runs once per period.
    """
    others = max(1, n_members - 1)
    suspicion = membership.suspicion_timeout
    if membership.suspicion_log_scale:
        suspicion *= max(1.0, math.log10(max(1, n_members)))
    return (2 * others + 2) * detector.probe_interval + suspicion


class FailureDetector:
    """One node's SWIM probe loop and the server side of probes."""

    def __init__(
        self,
        membership: Membership,
        transport: ProbeTransport,
        config: DetectorConfig,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        rng: random.Random,
    ) -> None:
        self.membership = membership
        self.transport = transport
        self.config = config
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._probe_order: list[str] = []  # shuffled ids; SWIM probes round-robin over it

    # -- client side -----------------------------------------------------

    async def probe_round(self) -> None:
        """One protocol period: probe the next member, suspect it if nobody gets an ack."""
        target = self._next_target()
        if target is not None:
            acked = await self._probe(target)
            if not acked:
                self.membership.suspect(target.node_id)
        self.membership.tick()

    async def _probe(self, target: Member) -> bool:
        cfg = self.config
        piggyback = self.membership.take_piggyback()
        if target.state is MemberState.SUSPECT:
            # Lifeguard's buddy system: tell a suspect directly, so it can refute
            # before the suspicion reaches it by gossip.
            others = [u for u in piggyback if u["node_id"] != target.node_id]
            piggyback = [target.to_wire(), *others][: self.membership.config.max_piggyback]
        ack = await self.transport.ping(target, piggyback, cfg.probe_timeout)
        if ack is not None:
            self.membership.apply_many(ack)
            return True
        helpers = [m for m in self.membership.alive(include_local=False) if m.node_id != target.node_id]
        helpers = self._rng.sample(helpers, min(cfg.indirect_probes, len(helpers)))
        if not helpers:
            return False
        results = await asyncio.gather(*(
            self.transport.ping_req(via, target, self.membership.take_piggyback(), cfg.indirect_timeout)
            for via in helpers
        ))
        return any(results)

    def _next_target(self) -> Member | None:
        # Walk the shuffled list, skipping members that died or left since it
        # was built; reshuffle after each full pass (SWIM's round-robin probing).
        for _ in range(2):
            while self._probe_order:
                member = self._routable_peer(self._probe_order.pop())
                if member is not None:
                    return member
            self._probe_order = [m.node_id for m in self.membership.alive(include_local=False)]
            self._rng.shuffle(self._probe_order)
        return None

    def _routable_peer(self, node_id: str) -> Member | None:
        member = self.membership.get(node_id)
        if member is None or member.node_id == self.membership.local.node_id:
            return None
        return member if member.state in (MemberState.ALIVE, MemberState.SUSPECT) else None

    async def push_pull_round(self) -> None:
        """Exchange full state with one random routable member, then with one random dead one.

        The second exchange is Serf's reconnect: after a partition heals, each
        side holds the other dead and probes only the living, so without it
        the two would never talk again. A dead member that answers learns it
        was declared dead and refutes; the next exchange brings it back.
        """
        peers = self.membership.alive(include_local=False)
        dead = [m for m in self.membership.members(include_dead=True) if m.state is MemberState.DEAD]
        for group in (peers, dead):
            if not group:
                continue
            remote = await self.transport.push_pull(self._rng.choice(group), self.membership.snapshot())
            if remote is not None:
                self.membership.apply_many(remote)

    async def run(self) -> None:
        """Probe every ``probe_interval`` and push-pull every ``push_pull_interval`` until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._every(self.config.probe_interval, self.probe_round))
            group.create_task(self._every(self.config.push_pull_interval, self.push_pull_round))

    async def _every(self, interval: float, round_fn: Callable[[], Awaitable[None]]) -> None:
        # Fixed rate: a slow round shortens the following pause rather than
        # stretching the protocol period.
        due = self._clock()
        while True:
            try:
                await round_fn()
            except Exception:  # a failing peer must not stop failure detection
                log.exception("membership round %s failed", round_fn.__name__)
            due += interval
            await self._sleep(max(0.0, due - self._clock()))

    # -- server side -----------------------------------------------------

    def handle_ping(self, piggyback: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answer a ping: merge its updates, return ours for the ack."""
        self.membership.apply_many(piggyback)
        return self.membership.take_piggyback()

    async def handle_ping_req(self, target_id: str, piggyback: list[dict[str, Any]]) -> bool:
        """Ping ``target_id`` on a peer's behalf; True if it acked."""
        self.membership.apply_many(piggyback)
        target = self._routable_peer(target_id)
        if target is None:
            return False
        ack = await self.transport.ping(target, self.membership.take_piggyback(), self.config.probe_timeout)
        if ack is None:
            return False
        self.membership.apply_many(ack)
        return True

    def handle_push_pull(self, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answer a push-pull: merge the peer's full state, return ours."""
        self.membership.apply_many(snapshot)
        return self.membership.snapshot()
