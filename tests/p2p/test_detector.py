"""FailureDetector over the simulated network (``mnemonet.p2p.simulation``), in lock-step protocol periods.

Every period each running node runs one ``probe_round`` and the clock moves
one ``probe_interval``. Messages are delivered at once; a message that
would miss its timeout (a dead node, a dropped link, a slow responder) is
answered with the transport's failure value, so no test waits in real time.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from mnemonet.p2p.detector import DetectorConfig, FailureDetector, detection_bound
from mnemonet.p2p.membership import Member, MembershipConfig, MemberState
from mnemonet.p2p.simulation import SimCluster, run_virtual

lockstep = SimCluster.lockstep


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_crashed_member_is_declared_dead_by_all_within_the_bound(seed: int) -> None:
    cluster = lockstep(8, seed=seed)
    cluster.crash("n3")
    bound = detection_bound(8, cluster.mcfg, cluster.dcfg)
    dead_at: dict[str, float] = {}
    while cluster.clock() <= bound and len(dead_at) < 7:
        await cluster.period()
        for node in cluster.survivors():
            if cluster.state(node, "n3") is MemberState.DEAD:
                dead_at.setdefault(node, cluster.clock())
    assert set(dead_at) == set(cluster.survivors())
    assert max(dead_at.values()) <= bound
    # Only n3 was ever suspected or declared dead.
    assert {subject for _, subject, state in cluster.verdicts() if state is not MemberState.ALIVE} == {"n3"}


async def test_dead_member_is_never_resurrected_by_stale_gossip() -> None:
    cluster = lockstep(5, mcfg=MembershipConfig(dead_member_reap=10.0))
    stale_alive = cluster.nodes["n4"].membership.local.to_wire()
    stale_snapshot = cluster.nodes["n4"].membership.snapshot()
    cluster.crash("n4")
    for _ in range(40):  # long enough to be declared dead and reaped to a tombstone
        await cluster.period()
    for node in cluster.survivors():
        detector = cluster.nodes[node].detector
        assert detector.handle_ping([stale_alive]) is not None
        detector.handle_push_pull(stale_snapshot)
        assert detector.membership.get("n4") is None
        assert detector.membership.tombstone("n4") is not None
    for _ in range(5):
        await cluster.period()
    assert all("n4" not in {m.node_id for m in cluster.nodes[n].membership.alive()} for n in cluster.survivors())


async def test_slow_but_alive_member_refutes_and_stays_alive() -> None:
    cluster = lockstep(6, seed=3)
    cluster.net.slow.add("n2")
    suspected = False
    for _ in range(12):
        await cluster.period()
        suspected |= any(cluster.state(n, "n2") is MemberState.SUSPECT for n in cluster.nodes)
    cluster.net.slow.clear()
    for _ in range(12):
        await cluster.period()
    assert suspected
    assert cluster.nodes["n2"].membership.local.incarnation > 0  # it refuted
    assert not [v for v in cluster.verdicts() if v[1] == "n2" and v[2] is MemberState.DEAD]
    final_inc = cluster.nodes["n2"].membership.local.incarnation
    for node in cluster.nodes:
        member = cluster.nodes[node].membership.get("n2")
        assert member is not None and (member.state, member.incarnation) == (MemberState.ALIVE, final_inc)


@pytest.mark.parametrize("indirect_probes", [3, 0])
async def test_indirect_probes_save_a_member_whose_direct_link_drops(indirect_probes: int) -> None:
    cluster = lockstep(6, seed=5, dcfg=DetectorConfig(indirect_probes=indirect_probes))
    cluster.net.cut |= {("n0", "n1"), ("n1", "n0")}
    for _ in range(15):
        await cluster.period()
    suspicions = [v for v in cluster.verdicts() if v[1] == "n1" and v[2] is not MemberState.ALIVE]
    if indirect_probes:
        assert ("n0", "n1") in {(p, t) for p, _, t in cluster.net.ping_reqs}  # the path was used
        assert suspicions == []
    else:
        assert ("n0", "n1", MemberState.SUSPECT) in suspicions  # without it, n0 suspects n1


async def test_ping_req_for_unknown_or_dead_target_fails() -> None:
    cluster = lockstep(3)
    detector = cluster.nodes["n0"].detector
    assert await detector.handle_ping_req("nobody", []) is False
    detector.membership.mark_dead("n1")
    assert await detector.handle_ping_req("n1", []) is False


async def test_suspicion_spreads_and_refutation_wins_everywhere() -> None:
    cluster = lockstep(5)
    cluster.nodes["n0"].membership.suspect("n4")
    for _ in range(6):
        await cluster.period()
    assert {cluster.state(n, "n4") for n in cluster.nodes} == {MemberState.ALIVE}
    assert cluster.nodes["n4"].membership.local.incarnation == 1


async def test_push_pull_merges_both_views() -> None:
    cluster = lockstep(3)
    newcomer = {"node_id": "n9", "url": "http://n9.test:1", "capabilities": [], "incarnation": 0, "state": "alive"}
    cluster.nodes["n1"].membership.apply(newcomer)
    cluster.nodes["n0"].membership.apply({**newcomer, "node_id": "n8"})
    for _ in range(30):  # n0 picks a random peer; n1 is the one that knows n9
        await cluster.nodes["n0"].detector.push_pull_round()
    assert cluster.nodes["n0"].membership.get("n9") is not None
    assert any(cluster.nodes[n].membership.get("n8") is not None for n in ("n1", "n2"))


def test_run_probes_every_interval_and_push_pulls_periodically() -> None:
    calls: list[tuple[str, float]] = []

    async def scenario() -> None:  # on the simulation's event loop, whose clock jumps to the next timer
        cluster = SimCluster(4, dcfg=DetectorConfig(probe_interval=1.0, push_pull_interval=15.0))
        cluster.populate()
        base = cluster.nodes["n0"].detector
        transport = base.transport

        class Recording:
            async def ping(self, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> Any:
                calls.append(("ping", cluster.clock()))
                return await transport.ping(target, piggyback, timeout)

            async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]],
                               timeout: float) -> bool | None:
                return await transport.ping_req(via, target, piggyback, timeout)

            async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> Any:
                calls.append(("push_pull", cluster.clock()))
                return await transport.push_pull(target, snapshot)

        detector = FailureDetector(base.membership, Recording(), base.config, cluster.clock,
                                   cluster.net.sleeper("n0"), random.Random(0))
        task = asyncio.create_task(detector.run())
        await asyncio.sleep(30.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_virtual(scenario())
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
    cluster = lockstep(2)  # n1 is the only member n0 can probe
    prober = cluster.nodes["n0"]
    prober.membership.suspect("n1")
    while prober.membership.take_piggyback():  # the suspicion is no longer queued
        pass
    await prober.detector.probe_round()
    assert cluster.nodes["n1"].membership.local.incarnation == 1  # it heard and refuted


async def test_a_suspect_is_probed_once_more_just_before_its_suspicion_ends() -> None:
    # n0 heard that n3 is suspect, and n3's refutation never reached it. Its last call, a direct
    # probe before the deadline, carries the suspicion to n3 and brings the refutation back.
    cluster = lockstep(50, seed=4)
    clock = cluster.manual_clock
    assert clock is not None
    n0 = cluster.nodes["n0"].membership

    def suspected_at_last_call() -> None:
        n3 = n0.get("n3")
        assert n3 is not None
        n0.apply({**n3.to_wire(), "state": "suspect"})
        deadline = n0.suspicion_deadline("n3")
        assert deadline is not None
        clock.now = deadline - cluster.dcfg.probe_interval

    suspected_at_last_call()
    await cluster.nodes["n0"].detector.probe_round()
    assert cluster.state("n0", "n3") is MemberState.ALIVE and getattr(n0.get("n3"), "incarnation", None) == 1
    # Once per suspicion: the next round probes by round-robin again.
    suspected_at_last_call()
    cluster.crash("n3")
    await cluster.nodes["n0"].detector.probe_round()
    # The last call, unanswered:
    assert len(cluster.net.ping_reqs) == 3 and {t for _, _, t in cluster.net.ping_reqs} == {"n3"}
    await cluster.nodes["n0"].detector.probe_round()
    assert len(cluster.net.ping_reqs) == 3  # then round-robin again: a live member, acked directly


async def test_a_restarted_member_wins_its_identity_back_whatever_incarnation_the_cluster_saw() -> None:
    # Issue 31, row 7: one forged claim raised the store's incarnation by the most one update may; it refuted,
    # everyone took the refutation, and after its next crash and restart (at incarnation 0, the same id) every
    # record it received of itself was a jump it refused: held dead, no call was routed to it for minutes.
    cluster = lockstep(4, seed=7)
    jump = cluster.mcfg.max_incarnation_jump
    others = ["n1", "n2", "n3"]

    def held(state: MemberState, at_least: int) -> bool:
        records = [cluster.nodes[n].membership.get("n0") for n in others]
        return all(r is not None and r.state is state and r.incarnation >= at_least for r in records)

    async def suspect_n0(incarnation: int) -> None:
        claim = {**cluster.nodes["n0"].membership.local.to_wire(), "state": "suspect", "incarnation": incarnation}
        cluster.nodes["n1"].membership.apply(claim)
        for _ in range(20):
            await cluster.period()
        assert held(MemberState.ALIVE, incarnation + 1), "n0 refuted the claim everywhere"

    await suspect_n0(2)  # an ordinary suspicion, refuted: n0 is at 3 everywhere
    # A claim whose refutation (one higher) the peers holding the old record would refuse is refused itself;
    # the most a claim may raise n0 is one less, and its refutation lands at the bound everywhere.
    with pytest.raises(ValueError, match="jumps more than"):
        cluster.nodes["n1"].membership.apply({**cluster.nodes["n0"].membership.local.to_wire(), "state": "suspect",
                                              "incarnation": 3 + jump})
    await suspect_n0(3 + jump - 1)

    cluster.crash("n0")
    for _ in range(20):
        await cluster.period()
    assert held(MemberState.DEAD, 3 + jump)

    # Restarted: the same id at incarnation 0, knowing its old peers (as a node's remembered peers give them).
    cluster.net.crashed.discard("n0")
    restarted = cluster.add("n0")
    restarted.membership.preload([cluster.nodes[n].membership.local for n in others])
    await restarted.detector.push_pull_round()  # its first exchange: the cluster's record of it comes back
    assert restarted.membership.local.incarnation > 3 + jump
    for _ in range(10):
        await cluster.period()
    assert held(MemberState.ALIVE, 3 + jump + 1), "the others take n0 back"
    # Past that first view the bound holds again: a claim far above its incarnation is refused.
    refused = restarted.membership.invalid_updates
    far = restarted.membership.local.incarnation + jump
    restarted.membership.apply_many([{**restarted.membership.local.to_wire(), "state": "dead", "incarnation": far}])
    assert restarted.membership.invalid_updates == refused + 1
