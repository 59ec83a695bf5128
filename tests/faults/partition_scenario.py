"""One scenario, two ways to partition: inference workers on both sides of a cut, over one shared store.

Side A is a store node and two inference nodes, side B a store node and one
inference node. Both store nodes serve one graph and one vector schema (the
session's FalkorDB and PostgreSQL), as the store nodes of a deployment share
a database that both sides of a network partition still reach. During the
partition each side holds the other dead, so its workers own every item
(rendezvous hashing over the workers they see) and both sides keep inferring,
from observations written on either side. Work both sides do is absorbed by
the store (``record_inference`` writes claims and marker in one idempotent
write) and counted. After healing, membership reconverges, the backlog
drains, and fresh observations are split again with no repeat. The graph is
the ledger: one PROCESSED marker and one claim per observation.

``PartitionedNetwork`` is what the scenario needs of a network; the
in-process one (transport-level cut) and the network-namespace one (kernel
cut, separate processes) each implement it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from faultsupport import BOUND_MARGIN, reconverge_bound
from ledger import Ledger

from mnemonet.p2p.cluster import detector_config, membership_config
from mnemonet.p2p.detector import detection_bound
from mnemonet.p2p.suspicion import suspicion_timeout
from mnemonet.settings import Settings

ROUTABLE = ("alive", "suspect")
BEFORE, DURING, AFTER = 20, 40, 30  # observations before, on each side during, and after the partition
DRAIN_BOUND = 120.0  # seconds a backlog of a hundred may take on two loaded cores
JOIN_BOUND = 30.0  # seconds for nodes just started to join through the seed and learn of each other

# member id -> (state, incarnation), as one node lists it
View = dict[str, tuple[str, int]]


@dataclass(frozen=True)
class WorkerCounters:
    """One inference node's counters, and the ``record_inference`` calls it retried on another store node."""

    passes: int
    processed: int
    repeats: int  # results the store absorbed: the observation was already done
    llm_calls: int
    retried_writes: int


class PartitionedNetwork(Protocol):
    """Five nodes in two sides that the test can cut apart and heal."""

    side_a: list[str]  # node ids: a store node first, then inference nodes
    side_b: list[str]

    async def views(self) -> dict[str, View]:
        """Every node's membership view."""

    async def counters(self) -> dict[str, WorkerCounters]:
        """Per inference node."""

    async def write(self, side: int, keys: range) -> None:
        """One observation per key (``observation_text``) through the store node of side 0 (A) or 1 (B)."""

    async def ledger(self) -> Ledger:
        """The graph's ledger of inference work."""

    async def cut(self) -> None:
        """Partition side A from side B."""

    async def heal(self) -> None:
        """Undo ``cut``."""


@dataclass(frozen=True)
class Figures:
    """What one run measured."""

    observations: int
    detected: float  # seconds from the cut until each side holds the other dead
    reconverged: float  # seconds from healing until every node lists every other alive
    reconverge_bound: float
    backlog_at_heal: int
    catch_up: float  # seconds from healing until no observation waits
    repeats_until_caught_up: int
    repeats_after: int
    retried_after: int
    inference_calls: int  # language-model calls of all workers, repeats and failed attempts included
    views_stable_after: bool  # no suspicion or death after reconvergence

    def line(self) -> str:
        return (f"{self.observations} observations ({2 * DURING} during the partition); sides split "
                f"{self.detected:.2f}s after the cut; reconverged {self.reconverged:.2f}s after healing (bound "
                f"{self.reconverge_bound:.1f}s); backlog at healing {self.backlog_at_heal}, caught up "
                f"{self.catch_up:.2f}s after healing; repeats absorbed by the store: "
                f"{self.repeats_until_caught_up} until caught up, {self.repeats_after} after "
                f"({self.retried_after} retried calls"
                f"{'' if self.views_stable_after else '; views changed meanwhile'}); "
                f"{self.inference_calls} inference calls")


def split_bound(settings: Settings, *sides: int) -> float:
    """Seconds from a cut until each side holds the other dead.

    ``detection_bound`` is for one crashed member, whose suspicion every
    survivor confirms. Across a cut only the members of one side confirm each
    other's suspicions, so on the smaller side a suspicion shrinks less
    (Lifeguard) and runs longer.
    """
    n = sum(sides)
    membership, detector = membership_config(settings), detector_config(settings)
    low = membership.suspicion_timeout * (max(1.0, math.log10(n)) if membership.suspicion_log_scale else 1.0)
    k = membership.suspicion_confirmations if n - 2 >= membership.suspicion_confirmations else 0
    longest = suspicion_timeout(min(sides) - 1, k, low, low * membership.suspicion_max_mult)
    return BOUND_MARGIN * (detection_bound(n, membership, detector) - low + longest)


async def poll(check: Callable[[], Awaitable[bool]], within: float, what: str, step: float = 0.1) -> float:
    """Wait until ``await check()`` holds; the seconds it took. Fails the test after ``within``."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not true within {within:.1f}s: {what}")
        await asyncio.sleep(step)
    return time.monotonic() - start


def _listed(view: View, states: tuple[str, ...]) -> set[str]:
    return {member for member, (state, _) in view.items() if state in states}


def _incarnations(views: dict[str, View]) -> dict[tuple[str, str], int]:
    return {(node, member): inc for node, view in views.items() for member, (_, inc) in view.items()}


async def _sees(net: PartitionedNetwork, groups: list[list[str]]) -> bool:
    """Each node of each group lists exactly its group as alive, and no one as suspect."""
    views = await net.views()
    return all(_listed(views[node], ("alive",)) == _listed(views[node], ROUTABLE) == set(group)
               for group in groups for node in group)


async def _drained(net: PartitionedNetwork) -> Ledger:
    ledger = await net.ledger()
    start = time.monotonic()
    while ledger.pending:
        assert time.monotonic() - start < DRAIN_BOUND, f"{ledger.pending} observations pending after {DRAIN_BOUND}s"
        await asyncio.sleep(0.1)
        ledger = await net.ledger()
    return ledger


async def _settled(net: PartitionedNetwork) -> dict[str, WorkerCounters]:
    """Wait until every worker has begun a new pass, so the passes that read older backlog are over.

    A pass under way only finishes items it read already: no longer than draining them.
    """
    before = await net.counters()

    async def all_moved_on() -> bool:
        now = await net.counters()
        return all(now[node].passes > c.passes for node, c in before.items())

    await poll(all_moved_on, DRAIN_BOUND, "every worker began a new pass")
    return await net.counters()


def _total(counters: dict[str, WorkerCounters], field: str) -> int:
    return sum(getattr(c, field) for c in counters.values())


async def run_scenario(net: PartitionedNetwork, settings: Settings) -> Figures:
    """Before, during and after a partition; asserts exactly-once work and returns the figures."""
    everyone = net.side_a + net.side_b
    await poll(lambda: _sees(net, [everyone]), JOIN_BOUND, "five nodes see each other")

    # -- before: three workers split the work ------------------------------------
    await net.write(0, range(BEFORE))
    await _drained(net)
    counters = await _settled(net)
    assert _total(counters, "repeats") <= _total(counters, "retried_writes")  # only repeats of retried calls

    # -- the partition: each side declares the other dead, then both are written to
    await net.cut()
    bound = split_bound(settings, len(net.side_a), len(net.side_b))
    detected = await poll(lambda: _sees(net, [net.side_a, net.side_b]), bound, "each side declares the other dead")
    processed = {node: c.processed for node, c in (await net.counters()).items()}
    await asyncio.gather(net.write(0, range(1000, 1000 + DURING)), net.write(1, range(2000, 2000 + DURING)))

    async def both_sides_work() -> bool:  # on each side a worker has processed something since the cut
        now = await net.counters()
        return all(any(now[node].processed > processed[node] for node in side if node in now)
                   for side in (net.side_a, net.side_b))

    await poll(both_sides_work, DRAIN_BOUND, "workers on both sides work during the partition")

    # -- healing: membership reconverges, the backlog drains ---------------------
    backlog = (await net.ledger()).pending
    await net.heal()
    healed = time.monotonic()
    bound = reconverge_bound(settings)
    reconverged = await poll(lambda: _sees(net, [everyone]), bound, "membership reconverges after healing")
    incarnations = _incarnations(await net.views())
    await _drained(net)
    catch_up = time.monotonic() - healed
    counters = await _settled(net)

    # -- after: fresh observations through both store nodes, split with no repeat
    await asyncio.gather(net.write(0, range(3000, 3000 + AFTER // 2)), net.write(1, range(4000, 4000 + AFTER // 2)))
    ledger = await _drained(net)
    after = await _settled(net)
    # A suspicion or death after reconvergence (a loaded machine) moves ownership and may cause a repeat.
    stable = _incarnations(await net.views()) == incarnations and await _sees(net, [everyone])
    figures = Figures(
        observations=len(ledger.observations), detected=detected, reconverged=reconverged, reconverge_bound=bound,
        backlog_at_heal=backlog, catch_up=catch_up, repeats_until_caught_up=_total(counters, "repeats"),
        repeats_after=_total(after, "repeats") - _total(counters, "repeats"),
        retried_after=_total(after, "retried_writes") - _total(counters, "retried_writes"),
        inference_calls=_total(after, "llm_calls"),
        views_stable_after=stable)

    assert figures.observations == BEFORE + 2 * DURING + AFTER
    assert ledger.missed_or_repeated() == []  # none missed, each marked once, one claim each
    await poll(lambda: _sees(net, [everyone]), bound, "membership converged at the end")
    if stable:  # views agree: one owner per observation, so no repeat but those of retried calls
        assert figures.repeats_after <= figures.retried_after
    return figures
