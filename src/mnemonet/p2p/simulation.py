"""Membership in simulated time: one clock, one in-memory network, one cluster, for tests and the bench.

The real ``Membership`` and ``FailureDetector`` of every member run over a
``SimNetwork`` instead of sockets (memberlist keeps its ``MockNetwork`` in
the same way, beside the protocol). Time is driven in one of two ways:

- lock-step: ``SimCluster(..., clock=SimClock())``. The clock moves only when
  told; ``period()`` runs one probe round on every member, then moves it one
  probe interval. Messages arrive at once and a lost one fails at once, so a
  test reads the protocol round by round and never waits.
- event loop: ``SimCluster(...)`` inside ``run_virtual``. Members run their
  own timers (``FailureDetector.run`` and a gossip loop) on a
  ``VirtualTimeLoop``, whose clock jumps to the next timer whenever every task
  waits, with per-message latency, random loss and stalled event loops.

Both share the same network and transport, so the bench's figures and the
tests' verdicts come from one model of what gets through.

Only protocol modules are imported here: the simulator sits in ``p2p`` with
what it drives, below every adapter (tests/test_layers.py).
"""

from __future__ import annotations

import asyncio
import random
import selectors
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mnemonet.p2p.detector import DetectorConfig, FailureDetector
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.settings import Settings

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

GOSSIP_INTERVAL: float = Settings.model_fields["gossip_interval"].default
GOSSIP_FANOUT: int = Settings.model_fields["gossip_fanout"].default


class SimClock:
    """A clock that moves only when told: ``clock.now += seconds``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def instant(seconds: float) -> None:
    """The lock-step ``sleep``: what would take time takes none, and nothing else runs meanwhile."""


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


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh ``VirtualTimeLoop``."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


# -- in-memory network ----------------------------------------------------------

@dataclass
class SimNode:
    membership: Membership
    detector: FailureDetector
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class SimNetwork:
    """Delivers messages between SimNodes with latency and independent random loss.

    Faults, each a set the caller fills: ``crashed`` members answer nothing;
    ``cut`` (from, to) links drop everything; replies from ``slow`` members
    arrive after the sender's timeout (too late to count as an answer, but
    their piggybacked updates are still merged); ``stalled_until`` blocks a
    member's event loop until a time (event-loop mode only).
    """

    def __init__(self, loss: float, rng: random.Random, clock: Callable[[], float], sleep: Sleep,
                 latency: tuple[float, float] = (0.0, 0.0)) -> None:
        self.loss = loss
        self.rng = rng
        self.clock = clock
        self.sleep = sleep
        self.latency = latency
        self.nodes: dict[str, SimNode] = {}
        self.crashed: set[str] = set()
        self.cut: set[tuple[str, str]] = set()
        self.slow: set[str] = set()
        self.stalled_until: dict[str, float] = {}  # node -> end of its current event-loop stall
        self.sent: Counter[str] = Counter()
        self.ping_reqs: list[tuple[str, str, str]] = []  # (prober, via, target) of every indirect probe

    def stall_end(self, node: str) -> float:
        """When ``node``'s event loop next runs (now if it is not stalled)."""
        now = self.clock()
        return max(now, self.stalled_until.get(node, now))

    async def wait_unstalled(self, node: str) -> None:
        """A handler on a stalled node runs only once its loop is free again."""
        end = self.stall_end(node)
        if end > self.clock():
            await self.sleep(end - self.clock())

    def sleeper(self, node: str) -> Sleep:
        """``node``'s sleep: a timer cannot fire while the node's loop is blocked."""
        async def sleep(seconds: float) -> None:
            await self.sleep(seconds)
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
        if end > self.clock():
            loop = asyncio.get_running_loop()
            loop.call_at(end, lambda: loop.call_soon(apply, updates))
        else:
            apply(updates)

    async def send(self, src: str, dst: str) -> bool:
        """Carry one message; False (after no delay) if it is lost."""
        self.sent[src] += 1
        if (dst in self.crashed or dst not in self.nodes or (src, dst) in self.cut
                or self.rng.random() < self.loss):
            return False
        await self.sleep(self.rng.uniform(*self.latency))
        return dst not in self.crashed


class SimTransport:
    """A node's ProbeTransport over the SimNetwork; a lost message costs its timeout."""

    def __init__(self, net: SimNetwork, me: str) -> None:
        self.net = net
        self.me = me

    def _in_time(self, deadline: float) -> bool:
        # A reply that lands while our own loop is blocked is read when it runs
        # again; by then the timeout has fired too (taken as lost, pessimistically).
        return self.net.clock() <= deadline and self.net.stall_end(self.me) <= deadline

    async def _expire(self, deadline: float) -> None:
        await self.net.sleep(max(0.0, deadline - self.net.clock()))
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
        deadline = self.net.clock() + timeout
        if await self.net.send(self.me, target.node_id):
            handle = self.net.nodes[target.node_id].detector.handle_ping
            if not self._late(target.node_id, deadline, lambda: handle(piggyback)):
                await self.net.wait_unstalled(target.node_id)
                ack = handle(piggyback)
                if await self.net.send(target.node_id, self.me) and self._in_time(deadline):
                    if target.node_id not in self.net.slow:
                        return ack
                    self.net.nodes[self.me].membership.apply_many(ack)
        await self._expire(deadline)
        return None

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]],
                       timeout: float) -> bool | None:
        self.net.ping_reqs.append((self.me, via.node_id, target.node_id))
        deadline = self.net.clock() + timeout
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


# -- cluster --------------------------------------------------------------------

class SimCluster:
    """``n`` members over one SimNetwork, every verdict anyone reaches recorded in ``events``.

    With ``clock`` a SimClock the cluster runs in lock-step (``lockstep``, ``period``);
    without, it must be built inside ``run_virtual`` and runs on the loop's
    clock (``boot``, ``start``, ``crash``, ``stop``).
    """

    def __init__(self, n: int, *, seed: int = 1, mcfg: MembershipConfig | None = None,
                 dcfg: DetectorConfig | None = None, loss: float = 0.0,
                 latency: tuple[float, float] = (0.0, 0.0), clock: SimClock | None = None,
                 gossip_interval: float = GOSSIP_INTERVAL, gossip_fanout: int = GOSSIP_FANOUT) -> None:
        self.n = n
        self.rng = random.Random(seed)
        self.manual_clock = clock
        self.clock: Callable[[], float] = clock if clock is not None else asyncio.get_running_loop().time
        sleep: Sleep = instant if clock is not None else asyncio.sleep
        self.net = SimNetwork(loss, random.Random(seed + 1), self.clock, sleep, latency)
        self.mcfg = mcfg or MembershipConfig()
        self.dcfg = dcfg or DetectorConfig()
        self.gossip_interval = gossip_interval
        self.gossip_fanout = gossip_fanout
        # (time, observer, subject, new state, incarnation) for every change anyone sees
        self.events: list[tuple[float, str, str, MemberState, int]] = []
        self.raised: Counter[str] = Counter()  # suspicions each member raised itself (its probe failed)

    @property
    def nodes(self) -> dict[str, SimNode]:
        return self.net.nodes

    def add(self, node_id: str) -> SimNode:
        local = Member(node_id, f"http://{node_id}.sim:9000", frozenset({"store"}), 0, MemberState.ALIVE, 0.0)
        membership = Membership(local, self.mcfg, self.clock)

        def record(m: Member, old: MemberState | None) -> None:
            self.events.append((self.clock(), node_id, m.node_id, m.state, m.incarnation))
            if m.state is MemberState.SUSPECT and m.suspected_by == node_id:
                self.raised[node_id] += 1

        membership.add_listener(record)
        detector = FailureDetector(membership, SimTransport(self.net, node_id), self.dcfg, self.clock,
                                   self.net.sleeper(node_id), random.Random(self.rng.random()))
        node = SimNode(membership, detector)
        self.net.nodes[node_id] = node
        return node

    def populate(self) -> list[SimNode]:
        """n0 .. n(n-1), who already know each other, as after their joins settled."""
        nodes = [self.add(f"n{i}") for i in range(self.n)]
        everyone = [node.membership.local for node in nodes]
        for node in nodes:
            node.membership.preload(everyone)
        return nodes

    # -- lock-step --

    @classmethod
    def lockstep(cls, n: int, seed: int = 1, mcfg: MembershipConfig | None = None,
                 dcfg: DetectorConfig | None = None) -> SimCluster:
        """``n`` members who know each other, on a SimClock at 0."""
        cluster = cls(n, seed=seed, mcfg=mcfg, dcfg=dcfg, clock=SimClock())
        cluster.populate()
        return cluster

    async def period(self) -> None:
        """One protocol period: every running member probes once, in random order; the clock moves on."""
        if self.manual_clock is None:
            raise RuntimeError("period() is for a lock-step cluster (built with a SimClock)")
        order = self.survivors()
        self.rng.shuffle(order)
        for node_id in order:
            await self.nodes[node_id].detector.probe_round()
        self.manual_clock.now += self.dcfg.probe_interval

    def verdicts(self) -> list[tuple[str, str, MemberState]]:
        """(observer, subject, new state) of every change anyone saw."""
        return [(observer, subject, state) for _, observer, subject, state, _ in self.events]

    def state(self, observer: str, subject: str) -> MemberState | None:
        member = self.nodes[observer].membership.get(subject)
        return None if member is None else member.state

    def survivors(self) -> list[str]:
        return [n for n in self.nodes if n not in self.net.crashed]

    # -- event loop --

    async def boot(self) -> None:
        """Populate, then start every member's timers."""
        for node in self.populate():
            self.start(node)

    def start(self, node: SimNode) -> None:
        async def staggered() -> None:
            await self.net.sleeper(node.membership.local.node_id)(
                self.rng.uniform(0, self.dcfg.probe_interval))  # no lock-step
            await node.detector.run()
        node.tasks = [asyncio.create_task(staggered()),
                      asyncio.create_task(self._gossip(node, random.Random(self.rng.random())))]

    async def _gossip(self, node: SimNode, rng: random.Random) -> None:
        """Mirror of the network layer's gossip: piggyback queue to a few random peers each interval."""
        membership = node.membership
        sleep = self.net.sleeper(membership.local.node_id)
        while True:
            await sleep(self.gossip_interval)
            if not membership.pending_broadcasts():
                continue  # nothing to say; skip listing the peers
            peers = membership.alive(include_local=False)
            for peer in rng.sample(peers, min(self.gossip_fanout, len(peers))):
                updates = membership.take_piggyback()
                if not updates:
                    break
                if await self.net.send(membership.local.node_id, peer.node_id):
                    self.net.deliver(peer.node_id, updates)

    def crash(self, node_id: str) -> None:
        self.net.crashed.add(node_id)
        for task in self.net.nodes[node_id].tasks:
            task.cancel()

    async def stall(self, node_id: str, seconds: float, gap: tuple[float, float], rng: random.Random) -> None:
        """Block ``node_id``'s event loop for ``seconds``, again and again, a uniform ``gap`` apart."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(rng.uniform(*gap))
        while True:
            self.net.stalled_until[node_id] = loop.time() + seconds
            await asyncio.sleep(seconds + rng.uniform(*gap))

    async def stop(self) -> None:
        tasks = [t for node in self.net.nodes.values() for t in node.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
