"""Membership and failure detection at scale, in simulated time.

Runs the real ``Membership`` and ``FailureDetector`` for every member over an
in-memory network with per-message latency and random loss, on an asyncio
event loop whose clock is virtual: when every task is waiting, the loop
jumps straight to the next timer (a discrete-event scheduler), so a minute
of cluster life costs only the CPU time of its messages.

Per cluster size N, with Lifeguard (local health awareness + suspicion
confirmations) off and on, in one run, it measures:
- join: protocol periods until every member knows a newly joined member;
- crash: seconds until every survivor marks a crashed member dead;
- msgs/member/interval: messages each member sends per probe interval
  (pings, acks, indirect probes, gossip, push-pull) during that run;
- false dead verdicts for live members under message loss (30% by default);
- false dead verdicts while 10% of the members have their event loop blocked
  for 2 s at a time (CPU-heavy embedding or model calls), no message loss.

Usage: python bench/membership_sim.py [--sizes 50,200,1000] [--loss-seconds 20] [--losses 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from mnemonet.p2p.detector import DetectorConfig, detection_bound
from mnemonet.p2p.membership import MembershipConfig, MemberState
from mnemonet.p2p.simulation import GOSSIP_FANOUT, GOSSIP_INTERVAL, SimCluster, run_virtual
from mnemonet.settings import Settings

MAX_PIGGYBACK: int = Settings.model_fields["gossip_max_piggyback"].default
LATENCY = (0.001, 0.010)  # one-way delay range in seconds, uniform
WARMUP = 3.0  # seconds of steady state before the join and the crash
STALL_FRACTION = 0.1  # members whose event loop stalls in the stall runs
STALL_SECONDS = 2.0  # each stall blocks the loop this long ...
STALL_GAP = (1.0, 3.0)  # ... then the loop runs freely for a uniform pause in this range


def configs(max_piggyback: int, lifeguard: bool) -> tuple[MembershipConfig, DetectorConfig]:
    """The settings' defaults; Lifeguard off is suspicion_max_mult = 1 and awareness_max = 1."""
    if lifeguard:
        return MembershipConfig(max_piggyback=max_piggyback), DetectorConfig()
    return MembershipConfig(max_piggyback=max_piggyback, suspicion_max_mult=1.0), DetectorConfig(awareness_max=1)


def make_cluster(n: int, loss: float, seed: int, max_piggyback: int, lifeguard: bool) -> SimCluster:
    mcfg, dcfg = configs(max_piggyback, lifeguard)
    return SimCluster(n, seed=seed, mcfg=mcfg, dcfg=dcfg, loss=loss, latency=LATENCY)


# -- scenarios ------------------------------------------------------------------

async def churn(n: int, seed: int, max_piggyback: int, lifeguard: bool) -> dict[str, Any]:
    """Join one member and crash another at the same moment; time both to convergence."""
    cluster = make_cluster(n, 0.0, seed, max_piggyback, lifeguard)
    await cluster.boot()
    await asyncio.sleep(WARMUP)
    t0 = asyncio.get_running_loop().time()
    joiner = cluster.add("joiner")
    seed_node = cluster.net.nodes["n0"].membership.local
    welcome = await joiner.detector.transport.push_pull(seed_node, joiner.membership.snapshot())
    assert welcome is not None, "join failed without message loss"
    joiner.membership.apply_many(welcome)
    cluster.start(joiner)
    victim = f"n{n - 1}"
    cluster.crash(victim)
    survivors = set(cluster.net.nodes) - {victim}
    observers = survivors - {"joiner"}  # the joiner does not "learn" of itself

    def first(subject: str, state: MemberState) -> dict[str, float]:
        seen: dict[str, float] = {}
        for t, observer, subj, st, _ in cluster.events:
            if subj == subject and st is state and observer in survivors:
                seen.setdefault(observer, t)
        return seen

    limit = t0 + 2 * detection_bound(n, cluster.mcfg, cluster.dcfg)
    while asyncio.get_running_loop().time() < limit:
        await asyncio.sleep(1.0)
        if survivors <= set(first(victim, MemberState.DEAD)) and observers <= set(first("joiner", MemberState.ALIVE)):
            break
    end = asyncio.get_running_loop().time()
    await cluster.stop()
    known, dead = first("joiner", MemberState.ALIVE), first(victim, MemberState.DEAD)
    sent = sum(c for node, c in cluster.net.sent.items() if node in survivors)
    return {
        "join_rounds": (max(known.values()) - t0) / cluster.dcfg.probe_interval
        if observers <= set(known) else math.inf,
        "dead_after": max(dead.values()) - t0 if survivors <= set(dead) else math.inf,
        "bound": detection_bound(n, cluster.mcfg, cluster.dcfg),
        # every message since t=0 counts, warm-up included
        "msgs": sent / len(survivors) / (end / cluster.dcfg.probe_interval),
        "false_dead": sum(1 for _, _, s, st, _ in cluster.events if st is MemberState.DEAD and s != victim),
    }


async def lossy(n: int, loss: float, seconds: float, seed: int, max_piggyback: int, lifeguard: bool,
                stalls: bool = False) -> dict[str, Any]:
    """No failures at all (members may stall); count live members declared dead anyway."""
    cluster = make_cluster(n, loss, seed, max_piggyback, lifeguard)
    await cluster.boot()
    loop = asyncio.get_running_loop()
    stalled = [f"n{i}" for i in range(max(1, round(n * STALL_FRACTION)))] if stalls else []
    stallers = [asyncio.create_task(cluster.stall(node_id, STALL_SECONDS, STALL_GAP, random.Random(seed + i)))
                for i, node_id in enumerate(stalled)]
    collapsed = False
    while loop.time() < seconds and not collapsed:
        await asyncio.sleep(1.0)
        # Past N false verdicts the cluster is collapsing; stop rather than
        # spend minutes simulating the collapse.
        collapsed = sum(1 for e in cluster.events if e[3] is MemberState.DEAD) > n
    elapsed = loop.time()
    for task in stallers:
        task.cancel()
    await cluster.stop()
    events = cluster.events
    return {
        "false_dead": sum(1 for _, _, _, st, _ in events if st is MemberState.DEAD),
        "suspicions": len({(subj, inc) for _, _, subj, st, inc in events if st is MemberState.SUSPECT}),
        "msgs": sum(cluster.net.sent.values()) / n / (elapsed / cluster.dcfg.probe_interval),
        "collapsed_at": elapsed if collapsed else None,
        # suspicions the stalled members raised themselves: Lifeguard's local health should keep these down
        "raised_by_stalled": sum(cluster.raised[node_id] for node_id in stalled),
    }


def job(kind: str, n: int, loss: float, seconds: float, seed: int, max_piggyback: int,
        lifeguard: bool) -> tuple[str, int, float, bool, dict[str, Any]]:
    if kind == "churn":
        return kind, n, loss, lifeguard, run_virtual(churn(n, seed, max_piggyback, lifeguard))
    return kind, n, loss, lifeguard, run_virtual(lossy(n, loss, seconds, seed, max_piggyback, lifeguard,
                                                       kind == "stalls"))


def verdicts(result: dict[str, Any], raised: bool = False) -> str:
    """False dead verdicts (distinct suspicions[; raised by the stalled]), or where the run was cut short."""
    by_stalled = f"; {result['raised_by_stalled']}" if raised else ""
    text = f"{result['false_dead']} ({result['suspicions']}{by_stalled})"
    if result["collapsed_at"] is not None:
        text += f", >N by {result['collapsed_at']:.0f}s: stopped"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,200,1000", help="comma-separated cluster sizes")
    parser.add_argument("--losses", default="0.3", help="comma-separated message loss rates of the lossy runs")
    parser.add_argument("--loss-seconds", type=float, default=20.0, help="simulated seconds of each lossy/stall run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--max-piggyback", type=int, default=MAX_PIGGYBACK,
                        help="updates per message (Settings.gossip_max_piggyback)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    losses = [float(p) for p in args.losses.split(",")]
    jobs = [(kind, n, p, lg) for lg in (False, True) for n in sizes
            for kind, p in [("churn", 0.0), ("stalls", 0.0), *(("lossy", p) for p in losses)]]
    jobs.sort(key=lambda j: -j[1])  # biggest first keeps both workers busy
    results: dict[tuple[str, int, float, bool], dict[str, Any]] = {}
    wall = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(job, kind, n, p, args.loss_seconds, args.seed, args.max_piggyback, lg)
                   for kind, n, p, lg in jobs]
        for future in futures:
            kind, n, p, lg, result = future.result()
            results[(kind, n, p, lg)] = result

    mcfg, dcfg = configs(args.max_piggyback, lifeguard=True)
    print(f"probe_interval={dcfg.probe_interval}s probe_timeout={dcfg.probe_timeout}s "
          f"indirect_probes={dcfg.indirect_probes} max_piggyback={mcfg.max_piggyback} "
          f"gossip_interval={GOSSIP_INTERVAL}s fanout={GOSSIP_FANOUT} "
          f"suspicion_timeout={mcfg.suspicion_timeout}s x max(1, log10 N) retransmit_mult={mcfg.retransmit_mult} "
          f"latency={LATENCY[0] * 1000:.0f}-{LATENCY[1] * 1000:.0f}ms runs={args.loss_seconds:.0f}s; "
          f"Lifeguard on: suspicion_max_mult={mcfg.suspicion_max_mult} k={mcfg.suspicion_confirmations} "
          f"awareness_max={dcfg.awareness_max}; stalls: {STALL_FRACTION:.0%} of members blocked "
          f"{STALL_SECONDS:.0f}s at a time, {STALL_GAP[0]:.0f}-{STALL_GAP[1]:.0f}s apart")
    print()
    loss_heads = "".join(f" false dead @{p:.0%} loss (suspicions) |" for p in losses)
    print(f"| N | Lifeguard | join: rounds to all (log2 N) | crash: s until all mark dead (bound) "
          f"| msgs/member/interval (0% / {' / '.join(f'{p:.0%}' for p in losses)} loss) |{loss_heads} "
          f"false dead with stalls (suspicions; raised by the stalled) |")
    print("|---|---|---|---|---|" + "---|" * len(losses) + "---|")
    for n in sizes:
        for lg in (False, True):
            c, st = results[("churn", n, 0.0, lg)], results[("stalls", n, 0.0, lg)]
            lossy_runs = [results[("lossy", n, p, lg)] for p in losses]
            msgs = " / ".join(f"{r['msgs']:.1f}" for r in [c, *lossy_runs])
            loss_cells = "".join(f" {verdicts(r)} |" for r in lossy_runs)
            print(f"| {n} | {'on' if lg else 'off'} | {c['join_rounds']:.1f} ({math.log2(n):.1f}) "
                  f"| {c['dead_after']:.1f} ({c['bound']:.0f}) | {msgs} |{loss_cells} {verdicts(st, raised=True)} |")
    print(f"\nwall time {time.perf_counter() - wall:.0f}s")


if __name__ == "__main__":
    main()
