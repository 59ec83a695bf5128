"""SWIM failure detector with Lifeguard: probe one member per interval, ask others when it is silent.

The detector owns timing and the choice of whom to probe; the verdicts and
their dissemination belong to :class:`~mnemonet.p2p.membership.Membership`.
Messages go through a :class:`ProbeTransport`, and time through an injected
clock and ``sleep``, so tests and the simulator run it with simulated time.
Lifeguard's local health (:class:`~mnemonet.p2p.awareness.Awareness`)
stretches the probe interval and timeouts of a node that is itself in
trouble: missed acks with silent helpers, refutations, event-loop stalls.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mnemonet.p2p.awareness import Awareness
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState

log = logging.getLogger(__name__)


class ProbeTransport(Protocol):
    """How the detector reaches other members (implemented by the network layer)."""

    async def ping(
        self, target: Member, piggyback: list[dict[str, Any]], timeout: float,
    ) -> list[dict[str, Any]] | None:
        """Ping ``target``; return the ack's piggyback, or None on timeout/failure."""

    async def ping_req(
        self, via: Member, target: Member, piggyback: list[dict[str, Any]], timeout: float,
    ) -> bool | None:
        """Ask ``via`` to ping ``target``: True if it got an ack, False if it answered that it got none
        (a nack), None if ``via`` did not answer within ``timeout``."""

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
    awareness_max: Lifeguard: the probe interval and timeouts are stretched
        up to this factor while the node itself looks unhealthy
        (memberlist's ``AwarenessMaxMultiplier``); 1 turns this off.
    stall_threshold: seconds a timer of ours may fire late before it counts
        as an event-loop stall (which raises the health score).
    """

    probe_interval: float = 1.0
    probe_timeout: float = 0.5
    indirect_probes: int = 3
    push_pull_interval: float = 15.0
    awareness_max: int = 8
    stall_threshold: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.probe_timeout <= self.probe_interval:
            raise ValueError("need 0 < probe_timeout <= probe_interval")
        if self.indirect_probes < 0 or self.push_pull_interval <= 0:
            raise ValueError("indirect_probes must be >= 0 and push_pull_interval > 0")
        if self.awareness_max < 1 or self.stall_threshold <= 0:
            raise ValueError("awareness_max must be >= 1 and stall_threshold > 0")

    @property
    def indirect_timeout(self) -> float:
        """How long an indirect probe may take: the rest of the protocol period."""
        return max(self.probe_timeout, self.probe_interval - self.probe_timeout)

    @property
    def nack_wait(self) -> float:
        """How long a prober waits for its helpers: ``indirect_timeout`` plus a quarter of ``probe_timeout``.

        A helper answers "no ack" (a nack) after its own ``probe_timeout``; the
        margin lets that nack arrive before the prober gives up, or Lifeguard
        would read a working helper's answer as missing, the prober's own fault.
        """
        return self.indirect_timeout + self.probe_timeout / 4


def detection_bound(n_members: int, membership: MembershipConfig, detector: DetectorConfig) -> float:
    """Seconds within which every survivor declares a crashed member dead, without message loss.

    Each survivor's round-robin probes every member at least once in any two
    consecutive passes over its shuffled list (2 x (N - 1) periods), a probe
    ends within one period, its suspicion then expires after the (scaled)
    suspicion timeout, and ``tick`` runs once per period. With Lifeguard's
    confirmations, a suspicion runs for that timeout once k other survivors
    confirmed it: they have all suspected within the same window, and their
    suspicions reach every survivor by gossip within about log2(N) periods.
    """
    others = max(1, n_members - 1)
    suspicion = membership.suspicion_timeout
    if membership.suspicion_log_scale:
        suspicion *= max(1.0, math.log10(max(1, n_members)))
    confirming = membership.suspicion_max_mult > 1 and n_members - 2 >= membership.suspicion_confirmations > 0
    spread = math.ceil(math.log2(n_members + 1)) if confirming else 0
    return (2 * others + 2 + spread) * detector.probe_interval + suspicion


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
        self._last_called: dict[str, int] = {}  # suspect -> the incarnation its last call was made at
        self.awareness = Awareness(config.awareness_max)
        self._incarnation = membership.local.incarnation
        membership.add_listener(self._on_change)

    def _on_change(self, member: Member, old_state: MemberState | None) -> None:
        local = self.membership.local
        if member.node_id == local.node_id and member.incarnation > self._incarnation:
            # We had to refute a suspicion: others failed to hear from us in time.
            self._incarnation = member.incarnation
            self.awareness.apply(1)

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
        ack = await self.transport.ping(target, piggyback, self.awareness.scale(cfg.probe_timeout))
        if ack is not None:
            self.membership.apply_many(ack)
            self.awareness.apply(-1)
            return True
        helpers = [m for m in self.membership.alive(include_local=False) if m.node_id != target.node_id]
        helpers = self._rng.sample(helpers, min(cfg.indirect_probes, len(helpers)))
        if not helpers:
            self.awareness.apply(1)  # nobody to tell whether the fault is there or here
            return False
        timeout = self.awareness.scale(cfg.nack_wait)
        results = await asyncio.gather(*(
            self.transport.ping_req(via, target, self.membership.take_piggyback(), timeout) for via in helpers
        ))
        if any(results):
            return True
        # Helpers that answered "no ack" (a nack) are working, so the target is
        # likely down; helpers that did not answer at all point at us.
        self.awareness.apply(sum(1 for r in results if r is None))
        return False

    def _next_target(self) -> Member | None:
        last_call = self._suspect_at_its_deadline()
        if last_call is not None:
            return last_call
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

    def _suspect_at_its_deadline(self) -> Member | None:
        """A suspect whose suspicion ends before our next probes, probed once first: its last call.

        Under heavy loss a suspect's refutation can miss a member that heard the suspicion (newer
        news crowds it out of gossip), and that member alone declares a live member dead. Probed
        directly, the suspect hears the suspicion (the buddy ping) and its ack carries the
        refutation, its own news first. A crashed suspect answers nothing and dies on time: one
        probe per suspicion and member, and only suspicions that lasted this long (most are
        refuted well before) take one.
        """
        suspects = self.membership.suspects()
        self._last_called = {m.node_id: i for m in suspects if (i := self._last_called.get(m.node_id)) is not None}
        horizon = self._clock() + 2 * self.awareness.scale(self.config.probe_interval)
        for member in suspects:
            deadline = self.membership.suspicion_deadline(member.node_id)
            if self._last_called.get(member.node_id) != member.incarnation and deadline is not None \
                    and deadline <= horizon:
                self._last_called[member.node_id] = member.incarnation
                return member
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
                self.membership.merge_view(remote)

    async def run(self) -> None:
        """Probe every ``probe_interval`` and push-pull every ``push_pull_interval`` until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._every(lambda: self.awareness.scale(self.config.probe_interval),
                                          self.probe_round, watch_stalls=True))
            group.create_task(self._every(lambda: self.config.push_pull_interval, self.push_pull_round))

    async def _every(self, interval: Callable[[], float], round_fn: Callable[[], Awaitable[None]],
                     watch_stalls: bool = False) -> None:
        # Fixed rate: a slow round shortens the following pause rather than
        # stretching the protocol period.
        due = self._clock()
        while True:
            try:
                await round_fn()
            except Exception:  # a failing peer must not stop failure detection
                log.exception("membership round %s failed", round_fn.__name__)
            due += interval()
            pause = max(0.0, due - self._clock())
            before = self._clock()
            await self._sleep(pause)
            if self._clock() - before - pause > self.config.stall_threshold:
                # Our event loop was blocked (CPU-heavy work): our own view of
                # who answers in time is not to be trusted for a while. Start
                # the schedule afresh instead of bursting through missed rounds.
                if watch_stalls:
                    self.awareness.apply(1)
                due = self._clock()

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
