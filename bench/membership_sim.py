"""Membership and failure detection at scale, in simulated time.

Runs the real ``Membership`` and ``FailureDetector`` for every member over an
in-memory network with per-message latency and random loss, on an asyncio
event loop whose clock is virtual: when every task is waiting, the loop
jumps straight to the next timer (a discrete-event scheduler), so a minute
of cluster life costs only the CPU time of its messages.

Per cluster size N it measures:
- join: protocol periods until every member knows a newly joined member;
- crash: seconds until every survivor marks a crashed member dead;
- msgs/member/interval: messages each member sends per probe interval
  (pings, acks, indirect probes, gossip, push-pull) during that run;
- false dead verdicts for live members under 10% and 30% message loss.

Usage: python bench/membership_sim.py [--sizes 50,200,1000] [--loss-seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import selectors
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mnemonet.p2p.detector import DetectorConfig, FailureDetector, detection_bound
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.settings import Settings

MAX_PIGGYBACK: int = Settings.model_fields["gossip_max_piggyback"].default
GOSSIP_INTERVAL: float = Settings.model_fields["gossip_interval"].default
GOSSIP_FANOUT: int = Settings.model_fields["gossip_fanout"].default
LATENCY = (0.001, 0.010)  # one-way delay range in seconds, uniform
WARMUP = 3.0  # seconds of steady state before the join and the crash


# -- discrete-event scheduler ---------------------------------------------------

class _VirtualSelector(selectors.SelectSelector):
    """Never blocks: 'waiting' for the next timer just moves the clock there."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None:
            raise RuntimeError("simulation deadlock: nothing scheduled")
        self.now += max(0.0, timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose time() is simulated; no real sleeping happens."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


# -- in-memory network ----------------------------------------------------------

@dataclass
class SimNode:
    membership: Membership
    detector: FailureDetector
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class SimNetwork:
    """Delivers messages between SimNodes with latency and independent random loss."""

    def __init__(self, loss: float, rng: random.Random) -> None:
        self.loss = loss
        self.rng = rng
        self.nodes: dict[str, SimNode] = {}
        self.crashed: set[str] = set()
        self.sent: Counter[str] = Counter()

    async def send(self, src: str, dst: str) -> bool:
        """Carry one message; False (after no delay) if it is lost."""
        self.sent[src] += 1
        if dst in self.crashed or dst not in self.nodes or self.rng.random() < self.loss:
            return False
        await asyncio.sleep(self.rng.uniform(*LATENCY))
        return dst not in self.crashed


class SimTransport:
    """A node's ProbeTransport over the SimNetwork; a lost message costs its timeout."""

    def __init__(self, net: SimNetwork, me: str) -> None:
        self.net = net
        self.me = me

    async def ping(
        self, target: Member, piggyback: list[dict[str, Any]], timeout: float
    ) -> list[dict[str, Any]] | None:
        start = asyncio.get_running_loop().time()
        if await self.net.send(self.me, target.node_id):
            ack = self.net.nodes[target.node_id].detector.handle_ping(piggyback)
            if await self.net.send(target.node_id, self.me):
                return ack
        await asyncio.sleep(max(0.0, start + timeout - asyncio.get_running_loop().time()))
        return None

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        start = loop.time()
        if await self.net.send(self.me, via.node_id):
            acked = await self.net.nodes[via.node_id].detector.handle_ping_req(target.node_id, piggyback)
            if acked and await self.net.send(via.node_id, self.me) and loop.time() - start <= timeout:
                return True
        await asyncio.sleep(max(0.0, start + timeout - loop.time()))
        return False

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        if not await self.net.send(self.me, target.node_id):
            return None
        remote = self.net.nodes[target.node_id].detector.handle_push_pull(snapshot)
        return remote if await self.net.send(target.node_id, self.me) else None


async def gossip_loop(net: SimNetwork, node: SimNode, rng: random.Random) -> None:
    """Mirror of the network layer's gossip: piggyback queue to a few random peers each interval."""
    membership = node.membership
    while True:
        await asyncio.sleep(GOSSIP_INTERVAL)
        if not membership.pending_broadcasts():
            continue  # nothing to say; skip listing the peers
        peers = membership.alive(include_local=False)
        for peer in rng.sample(peers, min(GOSSIP_FANOUT, len(peers))):
            updates = membership.take_piggyback()
            if not updates:
                break
            if await net.send(membership.local.node_id, peer.node_id):
                net.nodes[peer.node_id].membership.apply_many(updates)


# -- cluster --------------------------------------------------------------------

class SimCluster:
    def __init__(self, n: int, loss: float, seed: int, max_piggyback: int) -> None:
        self.rng = random.Random(seed)
        self.net = SimNetwork(loss, random.Random(seed + 1))
        self.mcfg, self.dcfg = MembershipConfig(max_piggyback=max_piggyback), DetectorConfig()
        # (time, observer, subject, new state, incarnation) for every change anyone sees
        self.events: list[tuple[float, str, str, MemberState, int]] = []
        self.n = n

    def add(self, node_id: str) -> SimNode:
        loop = asyncio.get_running_loop()
        local = Member(node_id, f"http://{node_id}.sim:9000", frozenset({"store"}), 0, MemberState.ALIVE, 0.0)
        membership = Membership(local, self.mcfg, loop.time)
        membership.add_listener(
            lambda m, old: self.events.append((loop.time(), node_id, m.node_id, m.state, m.incarnation)))
        detector = FailureDetector(membership, SimTransport(self.net, node_id), self.dcfg, loop.time,
                                   asyncio.sleep, random.Random(self.rng.random()))
        node = SimNode(membership, detector)
        self.net.nodes[node_id] = node
        return node

    def start(self, node: SimNode) -> None:
        async def staggered() -> None:
            await asyncio.sleep(self.rng.uniform(0, self.dcfg.probe_interval))  # no lock-step
            await node.detector.run()
        node.tasks = [asyncio.create_task(staggered()),
                      asyncio.create_task(gossip_loop(self.net, node, random.Random(self.rng.random())))]

    async def boot(self) -> None:
        """N members that already know each other, as after their joins settled."""
        nodes = [self.add(f"n{i}") for i in range(self.n)]
        everyone = [node.membership.local for node in nodes]
        for node in nodes:
            node.membership.preload(everyone)
            self.start(node)

    def crash(self, node_id: str) -> None:
        self.net.crashed.add(node_id)
        for task in self.net.nodes[node_id].tasks:
            task.cancel()

    async def stop(self) -> None:
        tasks = [t for node in self.net.nodes.values() for t in node.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_sim(coro_fn: Any, *args: Any) -> dict[str, Any]:
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro_fn(*args))
    finally:
        loop.close()


# -- scenarios ------------------------------------------------------------------

async def churn(n: int, seed: int, max_piggyback: int) -> dict[str, Any]:
    """Join one member and crash another at the same moment; time both to convergence."""
    cluster = SimCluster(n, loss=0.0, seed=seed, max_piggyback=max_piggyback)
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


async def lossy(n: int, loss: float, seconds: float, seed: int, max_piggyback: int) -> dict[str, Any]:
    """No failures at all; count live members declared dead anyway."""
    cluster = SimCluster(n, loss=loss, seed=seed, max_piggyback=max_piggyback)
    await cluster.boot()
    loop = asyncio.get_running_loop()
    collapsed = False
    while loop.time() < seconds and not collapsed:
        await asyncio.sleep(1.0)
        # Past N false verdicts the cluster is collapsing; stop rather than
        # spend minutes simulating the collapse.
        collapsed = sum(1 for e in cluster.events if e[3] is MemberState.DEAD) > n
    elapsed = loop.time()
    await cluster.stop()
    events = cluster.events
    return {
        "false_dead": sum(1 for _, _, _, st, _ in events if st is MemberState.DEAD),
        "suspicions": len({(subj, inc) for _, _, subj, st, inc in events if st is MemberState.SUSPECT}),
        "msgs": sum(cluster.net.sent.values()) / n / (elapsed / cluster.dcfg.probe_interval),
        "collapsed_at": elapsed if collapsed else None,
    }


def job(
    kind: str, n: int, loss: float, seconds: float, seed: int, max_piggyback: int
) -> tuple[str, int, float, dict[str, Any]]:
    if kind == "churn":
        return kind, n, loss, run_sim(churn, n, seed, max_piggyback)
    return kind, n, loss, run_sim(lossy, n, loss, seconds, seed, max_piggyback)


def verdicts(result: dict[str, Any]) -> str:
    """False dead verdicts (distinct suspicions), or where the run was cut short."""
    text = f"{result['false_dead']} ({result['suspicions']})"
    if result["collapsed_at"] is not None:
        text += f", >N by {result['collapsed_at']:.0f}s: stopped"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,200,1000", help="comma-separated cluster sizes")
    parser.add_argument("--loss-seconds", type=float, default=20.0, help="simulated seconds of each lossy run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--max-piggyback", type=int, default=MAX_PIGGYBACK,
                        help="updates per message (Settings.gossip_max_piggyback)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    jobs = [("churn", n, 0.0) for n in sizes] + [("lossy", n, p) for n in sizes for p in (0.1, 0.3)]
    jobs.sort(key=lambda j: -j[1])  # biggest first keeps both workers busy
    results: dict[tuple[str, int, float], dict[str, Any]] = {}
    wall = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(job, kind, n, p, args.loss_seconds, args.seed, args.max_piggyback)
                   for kind, n, p in jobs]
        for future in futures:
            kind, n, p, result = future.result()
            results[(kind, n, p)] = result

    mcfg, dcfg = MembershipConfig(max_piggyback=args.max_piggyback), DetectorConfig()
    print(f"probe_interval={dcfg.probe_interval}s probe_timeout={dcfg.probe_timeout}s "
          f"indirect_probes={dcfg.indirect_probes} max_piggyback={mcfg.max_piggyback} "
          f"gossip_interval={GOSSIP_INTERVAL}s fanout={GOSSIP_FANOUT} "
          f"suspicion_timeout={mcfg.suspicion_timeout}s x max(1, log10 N) retransmit_mult={mcfg.retransmit_mult} "
          f"latency={LATENCY[0] * 1000:.0f}-{LATENCY[1] * 1000:.0f}ms lossy runs={args.loss_seconds:.0f}s")
    print()
    print("| N | join: rounds to all (log2 N) | crash: s until all mark dead (bound) | msgs/member/interval "
          "(0% / 10% / 30% loss) | false dead @10% (suspicions) | false dead @30% (suspicions) |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        c, l10, l30 = results[("churn", n, 0.0)], results[("lossy", n, 0.1)], results[("lossy", n, 0.3)]
        print(f"| {n} | {c['join_rounds']:.1f} ({math.log2(n):.1f}) | {c['dead_after']:.1f} ({c['bound']:.0f}) "
              f"| {c['msgs']:.1f} / {l10['msgs']:.1f} / {l30['msgs']:.1f} "
              f"| {verdicts(l10)} | {verdicts(l30)} |")
    print(f"\nwall time {time.perf_counter() - wall:.0f}s")


if __name__ == "__main__":
    main()
