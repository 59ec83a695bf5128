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
STALL_FRACTION = 0.1  # members whose event loop stalls in the stall runs
STALL_SECONDS = 2.0  # each stall blocks the loop this long ...
STALL_GAP = (1.0, 3.0)  # ... then the loop runs freely for a uniform pause in this range


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
        self.stalled_until: dict[str, float] = {}  # node -> end of its current event-loop stall
        self.sent: Counter[str] = Counter()

    def stall_end(self, node: str) -> float:
        """When ``node``'s event loop next runs (now if it is not stalled)."""
        now = asyncio.get_running_loop().time()
        return max(now, self.stalled_until.get(node, now))

    async def wait_unstalled(self, node: str) -> None:
        """A handler on a stalled node runs only once its loop is free again."""
        end = self.stall_end(node)
        if end > asyncio.get_running_loop().time():
            await asyncio.sleep(end - asyncio.get_running_loop().time())

    def sleeper(self, node: str) -> Any:
        """``node``'s asyncio.sleep: a timer cannot fire while the node's loop is blocked."""
        async def sleep(seconds: float) -> None:
            await asyncio.sleep(seconds)
            await self.wait_unstalled(node)
        return sleep

    def deliver(self, node: str, updates: list[dict[str, Any]]) -> None:
        """Gossip reaches ``node``: merged now, or, if its loop is blocked, when it runs again.

        Then after its own timers (asyncio runs due timers before the tasks
        that read what arrived meanwhile): a stalled member's suspicion that
        expired during the stall becomes a verdict before the refutation that
        came in the meantime is read.
        """
        apply = self.nodes[node].membership.apply_many
        end = self.stall_end(node)
        loop = asyncio.get_running_loop()
        if end > loop.time():
            loop.call_at(end, lambda: loop.call_soon(apply, updates))
        else:
            apply(updates)

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

    def _in_time(self, deadline: float) -> bool:
        # A reply that lands while our own loop is blocked is read when it runs
        # again; by then the timeout has fired too (taken as lost, pessimistically).
        return asyncio.get_running_loop().time() <= deadline and self.net.stall_end(self.me) <= deadline

    async def _expire(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - asyncio.get_running_loop().time()))
        await self.net.wait_unstalled(self.me)

    def _late(self, node: str, deadline: float, handler: Any) -> bool:
        """True if ``node`` is stalled past ``deadline``: ``handler`` then runs when its loop is free."""
        end = self.net.stall_end(node)
        if end <= deadline:
            return False
        asyncio.get_running_loop().call_at(end, handler)
        return True

    async def ping(self, target: Member, piggyback: list[dict[str, Any]],
                   timeout: float) -> list[dict[str, Any]] | None:
        deadline = asyncio.get_running_loop().time() + timeout
        if await self.net.send(self.me, target.node_id):
            handle = self.net.nodes[target.node_id].detector.handle_ping
            if not self._late(target.node_id, deadline, lambda: handle(piggyback)):
                await self.net.wait_unstalled(target.node_id)
                ack = handle(piggyback)
                if await self.net.send(target.node_id, self.me) and self._in_time(deadline):
                    return ack
        await self._expire(deadline)
        return None

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]],
                       timeout: float) -> bool | None:
        deadline = asyncio.get_running_loop().time() + timeout
        if await self.net.send(self.me, via.node_id):
            handle = self.net.nodes[via.node_id].detector.handle_ping_req
            late = self._late(via.node_id, deadline,
                              lambda: asyncio.ensure_future(handle(target.node_id, piggyback)))
            if not late:
                await self.net.wait_unstalled(via.node_id)
                acked = await handle(target.node_id, piggyback)
                if await self.net.send(via.node_id, self.me) and self._in_time(deadline):
                    return acked  # an ack, or a nack: the helper works
        await self._expire(deadline)
        return None

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        if not await self.net.send(self.me, target.node_id):
            return None
        await self.net.wait_unstalled(target.node_id)
        remote = self.net.nodes[target.node_id].detector.handle_push_pull(snapshot)
        return remote if await self.net.send(target.node_id, self.me) else None


async def gossip_loop(net: SimNetwork, node: SimNode, rng: random.Random) -> None:
    """Mirror of the network layer's gossip: piggyback queue to a few random peers each interval."""
    membership = node.membership
    sleep = net.sleeper(membership.local.node_id)
    while True:
        await sleep(GOSSIP_INTERVAL)
        if not membership.pending_broadcasts():
            continue  # nothing to say; skip listing the peers
        peers = membership.alive(include_local=False)
        for peer in rng.sample(peers, min(GOSSIP_FANOUT, len(peers))):
            updates = membership.take_piggyback()
            if not updates:
                break
            if await net.send(membership.local.node_id, peer.node_id):
                net.deliver(peer.node_id, updates)


# -- cluster --------------------------------------------------------------------

def configs(max_piggyback: int, lifeguard: bool) -> tuple[MembershipConfig, DetectorConfig]:
    """The settings' defaults; Lifeguard off is suspicion_max_mult = 1 and awareness_max = 1."""
    if lifeguard:
        return MembershipConfig(max_piggyback=max_piggyback), DetectorConfig()
    return MembershipConfig(max_piggyback=max_piggyback, suspicion_max_mult=1.0), DetectorConfig(awareness_max=1)


class SimCluster:
    def __init__(self, n: int, loss: float, seed: int, max_piggyback: int, lifeguard: bool) -> None:
        self.rng = random.Random(seed)
        self.net = SimNetwork(loss, random.Random(seed + 1))
        self.mcfg, self.dcfg = configs(max_piggyback, lifeguard)
        # (time, observer, subject, new state, incarnation) for every change anyone sees
        self.events: list[tuple[float, str, str, MemberState, int]] = []
        self.raised: Counter[str] = Counter()  # suspicions each member raised itself (its probe failed)
        self.n = n

    def add(self, node_id: str) -> SimNode:
        loop = asyncio.get_running_loop()
        local = Member(node_id, f"http://{node_id}.sim:9000", frozenset({"store"}), 0, MemberState.ALIVE, 0.0)
        membership = Membership(local, self.mcfg, loop.time)

        def record(m: Member, old: MemberState | None) -> None:
            self.events.append((loop.time(), node_id, m.node_id, m.state, m.incarnation))
            if m.state is MemberState.SUSPECT and m.suspected_by == node_id:
                self.raised[node_id] += 1

        membership.add_listener(record)
        detector = FailureDetector(membership, SimTransport(self.net, node_id), self.dcfg, loop.time,
                                   self.net.sleeper(node_id), random.Random(self.rng.random()))
        node = SimNode(membership, detector)
        self.net.nodes[node_id] = node
        return node

    def start(self, node: SimNode) -> None:
        async def staggered() -> None:
            await self.net.sleeper(node.membership.local.node_id)(
                self.rng.uniform(0, self.dcfg.probe_interval))  # no lock-step
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

async def churn(n: int, seed: int, max_piggyback: int, lifeguard: bool) -> dict[str, Any]:
    """Join one member and crash another at the same moment; time both to convergence."""
    cluster = SimCluster(n, loss=0.0, seed=seed, max_piggyback=max_piggyback, lifeguard=lifeguard)
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


async def stall_loop(net: SimNetwork, node_id: str, rng: random.Random) -> None:
    """Block ``node_id``'s event loop for STALL_SECONDS, again and again."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(rng.uniform(*STALL_GAP))
    while True:
        net.stalled_until[node_id] = loop.time() + STALL_SECONDS
        await asyncio.sleep(STALL_SECONDS + rng.uniform(*STALL_GAP))


async def lossy(n: int, loss: float, seconds: float, seed: int, max_piggyback: int, lifeguard: bool,
                stalls: bool = False) -> dict[str, Any]:
    """No failures at all (members may stall); count live members declared dead anyway."""
    cluster = SimCluster(n, loss=loss, seed=seed, max_piggyback=max_piggyback, lifeguard=lifeguard)
    await cluster.boot()
    loop = asyncio.get_running_loop()
    stalled = [f"n{i}" for i in range(max(1, round(n * STALL_FRACTION)))] if stalls else []
    stallers = [asyncio.create_task(stall_loop(cluster.net, node_id, random.Random(seed + i)))
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
        return kind, n, loss, lifeguard, run_sim(churn, n, seed, max_piggyback, lifeguard)
    return kind, n, loss, lifeguard, run_sim(lossy, n, loss, seconds, seed, max_piggyback, lifeguard,
                                             kind == "stalls")


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
