"""Exactly once across scaled inference workers, through a worker's death.

Three inference nodes split 120 observations by rendezvous hashing: each is
processed by one node, no claim is duplicated, none is missed. Then one node
is killed in the middle of a second batch of 120; once the survivors own its
share and catch up, still none is missed or duplicated. The catch-up time
(kill to empty backlog) is printed.

Why 120 and not the 300 this once used: every observation is parsed,
embedded and inferred for real, so the test's time grows with the batch
(64 s of a loaded suite at 300). What it guards does not: a worker that
ignores ownership repeats a third of any batch; the race at the death is
between the items in flight when the victim dies (``worker_batch_size`` x
``worker_concurrency`` of them, up to 40), and 120 leaves the victim ~30
unstarted items of the second batch to take over, as 300 did with ~75.

Every wait is on a condition with a bound taken from the settings, never on
throughput: on a loaded machine the batches take minutes, so a wait fails
only when nothing moves for longer than a routed call may take. Routed calls
get the default ``request_timeout``: with the fast test timers' 5 s, a
worker's ``record_inference`` outlived its caller under load, the store
committed it anyway, the worker counted a failure and the item was gone
from the backlog, so "workers counted their replies" never came true.
"""

from __future__ import annotations

import asyncio
import time

from netsupport import NodeFactory, eventually, sees_all

from mnemonet.agents import InferenceAgent
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.cluster import detector_config, membership_config
from mnemonet.p2p.detector import detection_bound
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

NETWORK = "memory"  # agents between real nodes: ownership and exactly-once are the point, not the sockets
BATCH = 120
WRITERS = 16
REQUEST_TIMEOUT: float = Settings.model_fields["request_timeout"].default
WORKER_TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.1, worker_batch_size=10,
                     request_timeout=REQUEST_TIMEOUT)
SOURCE = InferenceAgent.source
# The workers' split of a backlog is what is tested: with the default (auto) the store infers each claim in
# its extraction call once it knows an inference node, and the workers would have nothing to split.
STORE_SETTINGS = dict(infer_with_extraction="off")



async def _write(node: PeerNode, start: int, count: int) -> None:
    """``count`` observations through the store node's client, ``WRITERS`` at a time; each supports one claim."""
    slots = asyncio.Semaphore(WRITERS)

    async def one(i: int) -> None:
        async with slots:
            await node.client.observe(f"Person{i} works at Company{i}.", idempotency_key=f"obs-{i}")

    await asyncio.gather(*(one(i) for i in range(start, start + count)))


def _processed(nodes: list[PeerNode]) -> list[int]:
    return [w["processed"] for n in nodes for w in n.worker_stats()]


async def _ledger(service: MemoryService) -> tuple[dict[str, int], dict[str, int]]:
    """Per observation: PROCESSED markers by the inference source, and claims it derived from it."""
    marks = await service.graph.read_query(
        "MATCH (:Source {name: $source})-[p:PROCESSED]->(o:Observation) RETURN o.id AS id, count(p) AS n",
        {"source": SOURCE})
    claims = await service.graph.read_query(
        "MATCH (:Source {name: $source})<-[:ASSERTED_BY]-(s:Statement)-[:DERIVED_FROM]->(o:Observation) "
        "RETURN o.id AS id, count(s) AS n", {"source": SOURCE})
    return {r["id"]: r["n"] for r in marks}, {r["id"]: r["n"] for r in claims}


async def _backlog_empty(service: MemoryService, stall: float) -> float:
    """Wait until no observation is pending; fail if the backlog stops shrinking for ``stall`` seconds."""
    start = last_progress = time.monotonic()
    pending = len(await service.pending_observations(SOURCE, limit=BATCH))
    while pending:
        await asyncio.sleep(0.2)
        now_pending = len(await service.pending_observations(SOURCE, limit=BATCH))
        if now_pending < pending:
            last_progress = time.monotonic()
        pending = now_pending
        assert time.monotonic() - last_progress < stall, f"the inference backlog stuck at {pending} for {stall:.0f}s"
    return time.monotonic() - start


async def _processed_reaches(workers: list[PeerNode], target: int, stall: float) -> None:
    """Wait until the workers processed ``target`` items; fail if their count stops rising for ``stall`` seconds."""
    last, last_progress = sum(_processed(workers)), time.monotonic()
    while last < target:
        await asyncio.sleep(0.1)
        now = sum(_processed(workers))
        if now > last:
            last, last_progress = now, time.monotonic()
        assert time.monotonic() - last_progress < stall, f"workers stuck at {last} processed for {stall:.0f}s"


async def _settled(workers: list[PeerNode], within: float) -> None:
    """Wait until every pass a worker had under way has ended (so its count is final while the backlog is empty).

    ``passes`` counts a pass when it starts and a worker's passes run one
    after the other, so a pass begun after this call means the earlier ones ended.
    """
    started = [w["passes"] for n in workers for w in n.worker_stats()]
    await eventually(lambda: all(w["passes"] > before for w, before in zip(
        (w for n in workers for w in n.worker_stats()), started, strict=True)), within, "worker passes ended")


async def test_three_inference_nodes_process_each_observation_once_through_a_death(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **WORKER_TIMERS)
    workers = [await make_node({"inference"}, seed=store, **WORKER_TIMERS) for _ in range(3)]
    await eventually(lambda: sees_all([store, *workers]), 5.0, "all nodes joined")
    s = store.settings
    # A routed call ends (answered or timed out) within request_timeout; a worker polls every worker_poll_interval.
    reply_bound = REQUEST_TIMEOUT + 2 * s.worker_poll_interval
    # A dead worker's share moves once the survivors declare it dead.
    takeover = detection_bound(4, membership_config(s), detector_config(s)) + reply_bound

    # -- 300 observations, three live workers ---------------------------------
    await _write(store, 0, BATCH)
    await _backlog_empty(store_service, reply_bound)
    marks, claims = await _ledger(store_service)
    assert len(marks) == BATCH and set(marks.values()) == {1}  # none missed, each marked once
    assert len(claims) == BATCH and set(claims.values()) == {1}  # one claim each, no duplicate
    # The marker commits before the reply (and the claim's embedding) reaches the worker: let replies land,
    # then let every pass under way end, so a repeat in flight would be counted too.
    await eventually(lambda: sum(_processed(workers)) >= BATCH, reply_bound, "workers counted their replies")
    await _settled(workers, reply_bound)
    assert sum(_processed(workers)) == BATCH  # each processed by exactly one node
    assert sum(w["failed"] for n in workers for w in n.worker_stats()) == 0
    assert all(p > 0 for p in _processed(workers))  # and the work was split

    # -- 300 more; one worker dies in the middle ------------------------------
    victim, survivors = workers[0], workers[1:]
    done_before = sum(_processed(workers))
    writing = asyncio.create_task(_write(store, BATCH, BATCH))
    await _processed_reaches(workers, done_before + BATCH // 4, reply_bound)  # the second batch under way
    await victim.kill()
    killed_at = time.monotonic()
    await writing
    # The victim's share stays pending until the survivors own it: the backlog must not stall longer than that.
    after_writes = await _backlog_empty(store_service, takeover)
    catch_up = time.monotonic() - killed_at

    marks, claims = await _ledger(store_service)
    assert len(marks) == 2 * BATCH and set(marks.values()) == {1}
    assert len(claims) == 2 * BATCH and set(claims.values()) == {1}
    absorbed = sum(w["duplicates_absorbed"] for n in survivors for w in n.worker_stats())
    print(f"\ncatch-up after killing one of 3 inference nodes mid-batch: {catch_up:.2f}s from the kill, "
          f"{after_writes:.2f}s after the last write (repeats absorbed by the store: {absorbed}; "
          f"stall bound {takeover:.1f}s)")
