"""FailureDetector over an in-memory transport, in simulated lock-step protocol periods.

Every period each running node runs one ``probe_round`` and the clock moves
one ``probe_interval``. Messages are delivered at once; a message that
would miss its timeout (a dead node, a dropped link, a slow responder) is
answered with the transport's failure value, so no test waits in real time.
"""

from __future__ import annotations

import asyncio
import heapq
import random
from typing import Any

import pytest

from mnemonet.p2p.detector import DetectorConfig, FailureDetector, detection_bound
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Cluster:
    """N nodes sharing one simulated clock and an in-memory network."""

    def __init__(self, n: int, seed: int = 1, dcfg: DetectorConfig | None = None,
                 mcfg: MembershipConfig | None = None) -> None:
        self.clock = Clock()
        self.rng = random.Random(seed)
        self.dcfg = dcfg or DetectorConfig()
        self.mcfg = mcfg or MembershipConfig()
        self.crashed: set[str] = set()
        self.cut: set[tuple[str, str]] = set()  # (from, to) links that drop everything
        self.slow: set[str] = set()  # nodes whose acks arrive after the timeout
        self.ping_reqs: list[tuple[str, str, str]] = []  # (prober, via, target)
        self.verdicts: list[tuple[str, str, MemberState]] = []  # (observer, subject, new state)
        self.nodes: dict[str, FailureDetector] = {}
        ids = [f"n{i}" for i in range(n)]
        for node_id in ids:
            local = Member(node_id, f"http://{node_id}.test:1", frozenset({"store"}), 0, MemberState.ALIVE, 0.0)
            membership = Membership(local, self.mcfg, self.clock)

            def verdict(m: Member, old: MemberState | None, me: str = node_id) -> None:
                self.verdicts.append((me, m.node_id, m.state))

            membership.add_listener(verdict)
            self.nodes[node_id] = FailureDetector(
                membership, Transport(self, node_id), self.dcfg, self.clock, asyncio.sleep,
                random.Random(self.rng.random()),
            )
        # Everyone starts knowing everyone, as after a completed join.
        full = [d.membership.local.to_wire() for d in self.nodes.values()]
        for detector in self.nodes.values():
            detector.membership.apply_many(full)
            while detector.membership.take_piggyback():
                pass
        self.verdicts.clear()

    def up(self, src: str, dst: str) -> bool:
        return dst in self.nodes and dst not in self.crashed and (src, dst) not in self.cut

    async def period(self) -> None:
        order = [n for n in self.nodes if n not in self.crashed]
        self.rng.shuffle(order)
        for node_id in order:
            await self.nodes[node_id].probe_round()
        self.clock.now += self.dcfg.probe_interval

    def state(self, observer: str, subject: str) -> MemberState | None:
        member = self.nodes[observer].membership.get(subject)
        return None if member is None else member.state

    def survivors(self) -> list[str]:
        return [n for n in self.nodes if n not in self.crashed]


class Transport:
    """One node's ProbeTransport inside a Cluster."""

    # Methods mirror ProbeTransport; the cluster decides what gets through.

    def __init__(self, cluster: Cluster, me: str) -> None:
        self.cluster = cluster
        self.me = me

    async def ping(self, target: Member, piggyback: list[dict[str, Any]],
                   timeout: float) -> list[dict[str, Any]] | None:
        c = self.cluster
        if not c.up(self.me, target.node_id):
            return None
        ack = c.nodes[target.node_id].handle_ping(piggyback)
        if not c.up(target.node_id, self.me):
            return None  # the ping arrived; its ack was lost
        if target.node_id in c.slow:
            # The ack arrives after the timeout: too late to count as an ack,
            # but its piggybacked updates are still merged.
            c.nodes[self.me].membership.apply_many(ack)
            return None
        return ack

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]],
                       timeout: float) -> bool | None:
        c = self.cluster
        c.ping_reqs.append((self.me, via.node_id, target.node_id))
        if not c.up(self.me, via.node_id):
            return None  # the helper never heard us: no nack either
        acked = await c.nodes[via.node_id].handle_ping_req(target.node_id, piggyback)
        return acked if c.up(via.node_id, self.me) else None

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        c = self.cluster
        if not c.up(self.me, target.node_id):
            return None
        return c.nodes[target.node_id].handle_push_pull(snapshot)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_crashed_member_is_declared_dead_by_all_within_the_bound(seed: int) -> None:
    cluster = Cluster(8, seed=seed)
    cluster.crashed.add("n3")
    bound = detection_bound(8, cluster.mcfg, cluster.dcfg)
    dead_at: dict[str, float] = {}
    while cluster.clock.now <= bound and len(dead_at) < 7:
        await cluster.period()
        for node in cluster.survivors():
            if cluster.state(node, "n3") is MemberState.DEAD:
                dead_at.setdefault(node, cluster.clock.now)
    assert set(dead_at) == set(cluster.survivors())
    assert max(dead_at.values()) <= bound
    # Only n3 was ever suspected or declared dead.
    assert {subject for _, subject, state in cluster.verdicts if state is not MemberState.ALIVE} == {"n3"}


async def test_dead_member_is_never_resurrected_by_stale_gossip() -> None:
    cluster = Cluster(5, mcfg=MembershipConfig(dead_member_reap=10.0))
    stale_alive = cluster.nodes["n4"].membership.local.to_wire()
    stale_snapshot = cluster.nodes["n4"].membership.snapshot()
    cluster.crashed.add("n4")
    for _ in range(40):  # long enough to be declared dead and reaped to a tombstone
        await cluster.period()
    for node in cluster.survivors():
        detector = cluster.nodes[node]
        assert detector.handle_ping([stale_alive]) is not None
        detector.handle_push_pull(stale_snapshot)
        assert detector.membership.get("n4") is None
        assert detector.membership.tombstone("n4") is not None
    for _ in range(5):
        await cluster.period()
    assert all("n4" not in {m.node_id for m in cluster.nodes[n].membership.alive()} for n in cluster.survivors())


async def test_slow_but_alive_member_refutes_and_stays_alive() -> None:
    cluster = Cluster(6, seed=3)
    cluster.slow.add("n2")
    suspected = False
    for _ in range(12):
        await cluster.period()
        suspected |= any(cluster.state(n, "n2") is MemberState.SUSPECT for n in cluster.nodes)
    cluster.slow.clear()
    for _ in range(12):
        await cluster.period()
    assert suspected
    assert cluster.nodes["n2"].membership.local.incarnation > 0  # it refuted
    assert not [v for v in cluster.verdicts if v[1] == "n2" and v[2] is MemberState.DEAD]
    final_inc = cluster.nodes["n2"].membership.local.incarnation
    for node in cluster.nodes:
        member = cluster.nodes[node].membership.get("n2")
        assert member is not None and (member.state, member.incarnation) == (MemberState.ALIVE, final_inc)


@pytest.mark.parametrize("indirect_probes", [3, 0])
async def test_indirect_probes_save_a_member_whose_direct_link_drops(indirect_probes: int) -> None:
    cluster = Cluster(6, seed=5, dcfg=DetectorConfig(indirect_probes=indirect_probes))
    cluster.cut |= {("n0", "n1"), ("n1", "n0")}
    for _ in range(15):
        await cluster.period()
    suspicions = [v for v in cluster.verdicts if v[1] == "n1" and v[2] is not MemberState.ALIVE]
    if indirect_probes:
        assert ("n0", "n1") in {(p, t) for p, _, t in cluster.ping_reqs}  # the path was used
        assert suspicions == []
    else:
        assert ("n0", "n1", MemberState.SUSPECT) in suspicions  # without it, n0 suspects n1


async def test_ping_req_for_unknown_or_dead_target_fails() -> None:
    cluster = Cluster(3)
    detector = cluster.nodes["n0"]
    assert await detector.handle_ping_req("nobody", []) is False
    detector.membership.mark_dead("n1")
    assert await detector.handle_ping_req("n1", []) is False


async def test_suspicion_spreads_and_refutation_wins_everywhere() -> None:
    cluster = Cluster(5)
    cluster.nodes["n0"].membership.suspect("n4")
    for _ in range(6):
        await cluster.period()
    assert {cluster.state(n, "n4") for n in cluster.nodes} == {MemberState.ALIVE}
    assert cluster.nodes["n4"].membership.local.incarnation == 1


async def test_push_pull_merges_both_views() -> None:
    cluster = Cluster(3)
    newcomer = {"node_id": "n9", "url": "http://n9.test:1", "capabilities": [], "incarnation": 0, "state": "alive"}
    cluster.nodes["n1"].membership.apply(newcomer)
    cluster.nodes["n0"].membership.apply({**newcomer, "node_id": "n8"})
    for _ in range(30):  # n0 picks a random peer; n1 is the one that knows n9
        await cluster.nodes["n0"].push_pull_round()
    assert cluster.nodes["n0"].membership.get("n9") is not None
    assert any(cluster.nodes[n].membership.get("n8") is not None for n in ("n1", "n2"))


class VirtualSleep:
    """An injected ``sleep`` whose sleepers wake when the test advances the clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    async def __call__(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self.sleepers, (self.clock.now + seconds, len(self.sleepers) + id(future), future))
        await future

    async def run_until(self, end: float) -> None:
        while True:
            for _ in range(10):  # let woken tasks run up to their next sleep
                await asyncio.sleep(0)
            if not self.sleepers or self.sleepers[0][0] > end:
                return
            when, _, future = heapq.heappop(self.sleepers)
            self.clock.now = when
            future.set_result(None)


async def test_run_probes_every_interval_and_push_pulls_periodically() -> None:
    cluster = Cluster(4, dcfg=DetectorConfig(probe_interval=1.0, push_pull_interval=15.0))
    sleep = VirtualSleep(cluster.clock)
    base = cluster.nodes["n0"]
    detector = FailureDetector(base.membership, base.transport, base.config, cluster.clock, sleep, random.Random(0))
    calls: list[tuple[str, float]] = []
    transport = base.transport

    class Recording:
        async def ping(self, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> Any:
            calls.append(("ping", cluster.clock.now))
            return await transport.ping(target, piggyback, timeout)

        async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]],
                           timeout: float) -> bool | None:
            return await transport.ping_req(via, target, piggyback, timeout)

        async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> Any:
            calls.append(("push_pull", cluster.clock.now))
            return await transport.push_pull(target, snapshot)

    detector.transport = Recording()
    task = asyncio.create_task(detector.run())
    await sleep.run_until(30.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [t for kind, t in calls if kind == "ping"] == [float(t) for t in range(31)]
    assert [t for kind, t in calls if kind == "push_pull"] == [0.0, 15.0, 30.0]


def test_detection_bound_follows_the_settings() -> None:
    m, d = MembershipConfig(suspicion_timeout=5.0), DetectorConfig(probe_interval=1.0)
    # Lifeguard's k = 3 confirmations need N >= 5 and up to ceil(log2(N + 1)) periods to spread.
    assert detection_bound(4, m, d) == (2 * 3 + 2) * 1.0 + 5.0
    assert detection_bound(5, m, d) == (2 * 4 + 2 + 3) * 1.0 + 5.0
    assert detection_bound(1000, m, d) == pytest.approx((2 * 999 + 2 + 10) + 15.0)
    off = MembershipConfig(suspicion_timeout=5.0, suspicion_max_mult=1.0)
    assert detection_bound(5, off, d) == (2 * 4 + 2) * 1.0 + 5.0


def test_detector_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        DetectorConfig(probe_timeout=2.0, probe_interval=1.0)
    with pytest.raises(ValueError):
        DetectorConfig(indirect_probes=-1)


async def test_probe_of_a_suspect_tells_it_directly() -> None:
    cluster = Cluster(2)  # n1 is the only member n0 can probe
    prober = cluster.nodes["n0"]
    prober.membership.suspect("n1")
    while prober.membership.take_piggyback():  # the suspicion is no longer queued
        pass
    await prober.probe_round()
    assert cluster.nodes["n1"].membership.local.incarnation == 1  # it heard and refuted


async def test_a_suspect_is_probed_once_more_just_before_its_suspicion_ends() -> None:
    # n0 heard that n3 is suspect, and n3's refutation never reached it. Its last call, a direct
    # probe before the deadline, carries the suspicion to n3 and brings the refutation back.
    cluster = Cluster(50, seed=4)
    n0 = cluster.nodes["n0"].membership

    def suspected_at_last_call() -> None:
        n3 = n0.get("n3")
        assert n3 is not None
        n0.apply({**n3.to_wire(), "state": "suspect"})
        deadline = n0.suspicion_deadline("n3")
        assert deadline is not None
        cluster.clock.now = deadline - cluster.dcfg.probe_interval

    suspected_at_last_call()
    await cluster.nodes["n0"].probe_round()
    assert cluster.state("n0", "n3") is MemberState.ALIVE and getattr(n0.get("n3"), "incarnation", None) == 1
    # Once per suspicion: the next round probes by round-robin again.
    suspected_at_last_call()
    cluster.crashed.add("n3")
    await cluster.nodes["n0"].probe_round()
    assert len(cluster.ping_reqs) == 3 and {t for _, _, t in cluster.ping_reqs} == {"n3"}  # the last call, unanswered
    await cluster.nodes["n0"].probe_round()
    assert len(cluster.ping_reqs) == 3  # then round-robin again: a live member, acked directly
