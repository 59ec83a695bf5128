"""Lifeguard: local health awareness and suspicion timeouts that shrink with confirmations, in simulated time."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

from mnemonet.p2p.awareness import Awareness
from mnemonet.p2p.detector import DetectorConfig, FailureDetector
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.p2p.simulation import SimClock, SimCluster, SimTransport
from mnemonet.p2p.suspicion import Suspicion, suspicion_timeout

ALIVE, SUSPECT, DEAD = MemberState.ALIVE, MemberState.SUSPECT, MemberState.DEAD


def wire(node_id: str, incarnation: int = 0, state: str = "alive", by: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"node_id": node_id, "url": f"http://{node_id}.example:9000", "capabilities": ["store"],
                         "incarnation": incarnation, "state": state}
    if by is not None:
        d["by"] = by
    return d


def membership(peers: int, clock: SimClock, **config: Any) -> Membership:
    m = Membership(Member("me", "http://me.example:9000", frozenset({"store"}), 0, ALIVE, 0.0),
                   MembershipConfig(suspicion_timeout=5.0, suspicion_log_scale=False, **config), clock)
    m.apply_many([wire(f"p{i}") for i in range(peers)])
    return m


def state(m: Membership, node_id: str) -> MemberState:
    member = m.get(node_id)
    assert member is not None
    return member.state


# -- the two small types ------------------------------------------------------

def test_suspicion_timeout_shrinks_on_a_log_scale_from_max_to_min() -> None:
    assert suspicion_timeout(0, 3, 5.0, 30.0) == 30.0
    assert suspicion_timeout(1, 3, 5.0, 30.0) == pytest.approx(30.0 - 0.5 * 25.0)  # log 2 / log 4
    assert suspicion_timeout(3, 3, 5.0, 30.0) == pytest.approx(5.0)
    assert suspicion_timeout(9, 3, 5.0, 30.0) == pytest.approx(5.0)  # never below min
    assert suspicion_timeout(0, 0, 5.0, 30.0) == 5.0  # too few members to expect confirmations


def test_a_suspecter_confirms_once_and_confirmations_stop_at_k() -> None:
    s = Suspicion(started=10.0, by="a", k=2)
    assert not s.confirm("a") and s.confirmations == 0
    assert s.confirm("b") and not s.confirm("b") and s.confirmations == 1
    assert s.confirm("c") and not s.confirm("d") and s.confirmations == 2
    assert s.expires(5.0, 30.0) == pytest.approx(15.0)


def test_awareness_stays_within_its_range_and_scales_timeouts() -> None:
    a = Awareness(max_score=3)
    a.apply(-1)
    assert a.score == 0 and a.scale(0.5) == 0.5
    a.apply(5)
    assert a.score == 2 and a.scale(0.5) == 1.5
    off = Awareness(max_score=1)
    off.apply(4)
    assert off.scale(0.5) == 0.5
    with pytest.raises(ValueError):
        Awareness(0)


# -- suspicion in the membership ---------------------------------------------

def test_a_lone_suspicion_runs_for_the_max_timeout() -> None:
    clock = SimClock()
    m = membership(6, clock)
    m.suspect("p0")
    assert m.suspicion_deadline("p0") == pytest.approx(30.0)  # 6 x 5 s: nobody confirmed
    clock.now = 29.0
    m.tick()
    assert state(m, "p0") is SUSPECT
    clock.now = 30.0
    m.tick()
    assert state(m, "p0") is DEAD


def test_independent_confirmations_shorten_the_suspicion_to_the_min_timeout() -> None:
    clock = SimClock()
    m = membership(6, clock)
    m.suspect("p0")
    m.apply(wire("p0", 0, "suspect", by="me"))  # our own suspicion coming back: no confirmation
    m.apply(wire("p0", 0, "suspect", by="p1"))
    m.apply(wire("p0", 0, "suspect", by="p1"))  # the same suspecter again counts once
    assert m.suspicion_deadline("p0") == pytest.approx(30.0 - 0.5 * 25.0)
    m.apply(wire("p0", 0, "suspect", by="p2"))
    m.apply(wire("p0", 0, "suspect", by="p3"))
    assert m.suspicion_deadline("p0") == pytest.approx(5.0)
    clock.now = 5.0
    m.tick()
    assert state(m, "p0") is DEAD


def test_our_own_failed_probe_of_a_suspect_confirms_it() -> None:
    clock = SimClock()
    m = membership(6, clock)
    m.apply(wire("p0", 0, "suspect", by="p1"))
    m.suspect("p0")
    assert m.suspicion_deadline("p0") == pytest.approx(17.5)


def test_a_refutation_ends_the_suspicion_and_a_new_one_starts_afresh() -> None:
    clock = SimClock()
    m = membership(6, clock)
    for by in ("p1", "p2", "p3"):
        m.apply(wire("p0", 0, "suspect", by=by))
    m.apply(wire("p0", 1, "alive"))
    assert m.suspicion_deadline("p0") is None
    clock.now = 10.0
    m.apply(wire("p0", 1, "suspect", by="p1"))
    assert m.suspicion_deadline("p0") == pytest.approx(40.0)


def test_small_clusters_expect_no_confirmations() -> None:
    clock = SimClock()
    m = membership(3, clock)  # 4 members: fewer than k + 2 others to confirm
    m.suspect("p0")
    assert m.suspicion_deadline("p0") == pytest.approx(5.0)


def test_turned_off_the_suspicion_timeout_is_fixed() -> None:
    clock = SimClock()
    m = membership(6, clock, suspicion_max_mult=1.0)
    m.suspect("p0")
    assert m.suspicion_deadline("p0") == pytest.approx(5.0)


@pytest.mark.parametrize("update", [
    wire("p0", 0, "alive", by="p1"),  # only a suspicion names a suspecter
    wire("p0", 0, "suspect", by=""),
    wire("p0", 0, "suspect", by="x" * 129),
    {**wire("p0", 0, "suspect"), "by": 7},
])
def test_malformed_suspecters_are_refused(update: dict[str, Any]) -> None:
    m = membership(6, SimClock())
    with pytest.raises(ValueError):
        m.apply(update)
    assert state(m, "p0") is ALIVE


# -- local health in the detector ---------------------------------------------

async def test_probes_with_silent_helpers_raise_the_score_and_stretch_timeouts() -> None:
    # n0 cannot send to anyone (its own network is at fault): its helpers never answer.
    cluster = SimCluster.lockstep(6)
    cluster.net.cut |= {("n0", other) for other in cluster.nodes if other != "n0"}
    n0 = cluster.nodes["n0"].detector
    timeouts: list[float] = []

    class Recording(SimTransport):
        async def ping(self, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> Any:
            timeouts.append(timeout)
            return await super().ping(target, piggyback, timeout)

    n0.transport = Recording(cluster.net, "n0")
    for _ in range(3):
        await cluster.period()
    # +3 per failed probe (3 silent helpers), capped at awareness_max - 1; each probe waits timeout x (score + 1).
    assert n0.awareness.score == n0.config.awareness_max - 1
    assert timeouts == [n0.config.probe_timeout * f for f in (1, 4, 7)]
    # The healthy members' probes of each other succeed: their score stays at 0.
    assert all(cluster.nodes[n].detector.awareness.score == 0 for n in cluster.nodes if n != "n0")


async def test_nacks_from_working_helpers_do_not_blame_ourselves_and_acks_heal() -> None:
    cluster = SimCluster.lockstep(6)
    cluster.crash("n5")
    n0 = cluster.nodes["n0"].detector
    for _ in range(12):
        await cluster.period()
    assert n0.awareness.score == 0  # n5's silence was confirmed by nacks: the fault is there
    n0.awareness.apply(3)
    await cluster.period()
    assert n0.awareness.score == 2  # one direct ack per period lowers it by one


async def test_a_node_that_must_refute_raises_its_score() -> None:
    cluster = SimCluster.lockstep(3)
    n0 = cluster.nodes["n0"].detector
    n0.membership.apply(wire_of(n0, "suspect"))
    assert n0.membership.local.incarnation == 1 and n0.awareness.score == 1


def wire_of(detector: FailureDetector, state: str) -> dict[str, Any]:
    return {**detector.membership.local.to_wire(), "state": state}


async def test_a_node_with_its_own_trouble_does_not_declare_others_dead_at_the_min_timeout() -> None:
    mcfg = MembershipConfig(suspicion_timeout=3.0, suspicion_log_scale=False)
    for lifeguard in (True, False):
        cluster = SimCluster.lockstep(6, mcfg=mcfg if lifeguard else MembershipConfig(
            suspicion_timeout=3.0, suspicion_log_scale=False, suspicion_max_mult=1.0),
            dcfg=DetectorConfig() if lifeguard else DetectorConfig(awareness_max=1))
        cluster.net.cut |= {("n0", other) for other in cluster.nodes if other != "n0"}
        for _ in range(10):  # 10 s: well past the 3 s min timeout
            await cluster.period()
        declared = [s for o, s, st in cluster.verdicts() if o == "n0" and st is DEAD]
        if lifeguard:
            assert declared == []
        else:
            assert declared  # without Lifeguard the broken node blames its healthy peers


async def test_an_event_loop_stall_raises_the_score_and_slows_probing() -> None:
    clock = SimClock()
    stalls = {2}  # the 3rd pause overruns by 2 s, as when CPU-heavy work blocks the loop
    pauses = 0
    rounds: list[float] = []
    seven = asyncio.Event()

    async def sleep(seconds: float) -> None:
        nonlocal pauses
        clock.now += seconds + (2.0 if pauses in stalls else 0.0)
        pauses += 1
        await asyncio.sleep(0)

    m = Membership(Member("me", "http://me.example:9000", frozenset({"store"}), 0, ALIVE, 0.0),
                   MembershipConfig(), clock)

    class NoPeers:
        async def ping(self, *args: Any) -> None:
            raise AssertionError("nobody to probe")

        async def ping_req(self, *args: Any) -> None:
            raise AssertionError("nobody to probe")

        async def push_pull(self, *args: Any) -> None:
            return None

    detector = FailureDetector(m, NoPeers(), DetectorConfig(), clock, sleep, random.Random(1))
    probe_round = detector.probe_round

    async def counted() -> None:
        rounds.append(clock.now)
        if len(rounds) == 7:
            seven.set()
        await probe_round()

    # The probe loop alone (run() adds the push-pull loop, whose pauses would move this fake clock too).
    task = asyncio.create_task(detector._every(lambda: detector.awareness.scale(1.0), counted, watch_stalls=True))
    await seven.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    gaps = [round(b - a, 6) for a, b in zip(rounds, rounds[1:], strict=False)]
    assert detector.awareness.score == 1
    # 1 s periods, the stalled one, then 2 s periods (score 1) with no burst of catch-up rounds.
    assert gaps[:2] == [1.0, 1.0] and gaps[2] >= 3.0 and all(g == 2.0 for g in gaps[3:])
