"""Inference throughput with 1, 2 and 3 inference nodes, and language-model calls per observation.

    python bench/agents_throughput.py [--n 200] [--mixed 96] [--calls-only]

Each run starts a store+llm+embed node and the inference nodes (real
sockets, one process, offline language model, embedded FalkorDB and
PostgreSQL started here), writes ``n`` observations straight into a fresh
graph and times until the inference backlog is empty. A last run adds a
validation node and ``mixed`` observations written through ``observe``
(preferences, feelings, workplaces) and counts the language-model calls per
observation, everything included: extraction (``observe``), inference (the
worker's ``infer`` and any claim parsing in ``record_inference``) and
validation (``judge_pairs``, cardinality questions) -- four times, with
``infer_with_extraction`` off (extraction and inference separate calls) and at
its default, auto (the store node sees the inference node, so one call extracts
and infers), each with ``validation_judge_wait`` 0 (every
pass judges its own ambiguous pairs: the behaviour before the wait existed)
and at its default (pairs held across passes). ``--calls-only`` skips the
throughput runs. The load average is printed beside the table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.agents import InferenceAgent  # noqa: E402
from mnemonet.embed import make_embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model import ObservationRecord, SourceSpec  # noqa: E402
from mnemonet.node.peer_node import PeerNode  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402

KEY = "bench-cluster-key"
NODE: dict[str, Any] = dict(
    host="127.0.0.1", port=0, cluster_key=KEY, llm="offline", gossip_interval=0.1, probe_interval=0.25,
    probe_timeout=0.15, suspicion_timeout=1.5, link_maintenance_interval=0.2, worker_poll_interval=0.2,
    worker_event_debounce=0.05, log_level="WARNING",
)
MIXED = ["I prefer morning meetings", "actually I hate mornings, afternoon is better", "I like {x}",
         "I dislike {x}", "Person{i} works at Company{i}.", "I love {x}", "I live in Town{i}", "I prefer {x}"]
THINGS = ["tea", "jazz", "chess", "opera", "sushi", "tennis", "poetry", "hiking"]


async def _service(falkor: EmbeddedFalkorDB, pg_url: str, **overrides: Any) -> MemoryService:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    settings = Settings(llm="offline", falkordb_port=falkor.port, falkordb_password=falkor.password or "",
                        graph_name=name, database_url=pg_url, **overrides)
    return await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                      vector_schema=name)


async def _network(service: MemoryService, workers: list[str], **worker_settings: Any) -> list[PeerNode]:
    store = PeerNode(Settings(**NODE), {"store", "llm", "embed"}, {"store": service})
    await store.start()
    nodes = [store]
    for capability in workers:
        node = PeerNode(Settings(**NODE, bootstrap=store.url, **worker_settings), {capability})
        await node.start()
        nodes.append(node)
    deadline = time.monotonic() + 10
    while not all(len(n.membership.alive()) == len(nodes) for n in nodes):
        if time.monotonic() > deadline:
            raise RuntimeError("nodes did not join")
        await asyncio.sleep(0.05)
    return nodes


async def _drained(service: MemoryService, source: str) -> None:
    while await service.pending_observations(source, limit=1):  # noqa: ASYNC110 - the backlog is in the store
        await asyncio.sleep(0.05)


def _worker_stats(nodes: list[PeerNode]) -> dict[str, dict[str, int]]:
    return {w["worker"]: w for n in nodes for w in n.worker_stats()}


async def inference_run(falkor: EmbeddedFalkorDB, pg_url: str, workers: int, n: int) -> float:
    """Observations per second through ``workers`` inference nodes."""
    service = await _service(falkor, pg_url)
    nodes = await _network(service, ["inference"] * workers)
    try:
        started = time.monotonic()
        for i in range(n):  # straight into the graph: the timing is the workers', not the extraction's
            await service.graph.write_observation(ObservationRecord(
                id=f"obs-{i}", text=f"Person{i} works at Company{i}.", source=SourceSpec(name="bench")))
        await _drained(service, InferenceAgent.source)
        return n / (time.monotonic() - started)
    finally:
        for node in reversed(nodes):
            await node.stop()
        await service.close()


async def llm_calls_run(falkor: EmbeddedFalkorDB, pg_url: str, n: int, mode: str,
                        judge_wait: float) -> dict[str, int]:
    """Calls by purpose (and the contradictions found) for ``n`` observations, one node of each worker;
    ``mode``: the store's ``infer_with_extraction``; ``judge_wait``: the validation node's ``validation_judge_wait``."""
    service = await _service(falkor, pg_url, infer_with_extraction=mode)
    nodes = await _network(service, ["inference", "validation"], validation_judge_wait=judge_wait)
    try:
        for i in range(n):
            text = MIXED[i % len(MIXED)].format(i=i, x=THINGS[(i // len(MIXED)) % len(THINGS)])
            await nodes[0].client.observe(text)
        await _drained(service, InferenceAgent.source)
        while await service.pending_statements("validation-agent", limit=1):  # noqa: ASYNC110 - store backlog
            await asyncio.sleep(0.05)
        validation = _worker_stats(nodes)["validation"]
        # The service's own counters: every call it made to the model, by purpose (the workers' infer
        # reaches the model through it); judge_pairs goes from the validation node to the llm peer.
        calls = service.llm_calls
        return {"observations": n, "extraction": calls["observe"], "inference": calls["infer"] +
                calls["record_inference"], "validation": validation["llm_calls"],
                "contradictions": validation["contradictions"]}
    finally:
        for node in reversed(nodes):
            await node.stop()
        await service.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="observations per inference run")
    parser.add_argument("--mixed", type=int, default=96, help="observations in the language-model-calls run")
    parser.add_argument("--calls-only", action="store_true", help="only the language-model-calls runs")
    args = parser.parse_args()
    data = REPO / ".data" / "bench" / f"agents-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    pg_url = await pg.start()
    try:
        rates = {} if args.calls_only else {w: await inference_run(falkor, pg_url, w, args.n) for w in (1, 2, 3)}
        defaults = Settings()
        waits = (0.0, defaults.validation_judge_wait)
        runs = {(mode, wait): await llm_calls_run(falkor, pg_url, args.mixed, mode, wait)
                for mode in ("off", defaults.infer_with_extraction) for wait in waits}
    finally:
        await pg.stop()
        await falkor.stop()
    if rates:
        print("\n| inference nodes | observations/s | vs 1 node |\n|---|---|---|")
        for workers, rate in rates.items():
            print(f"| {workers} | {rate:.1f} | {rate / rates[1]:.2f}x |")
    n = args.mixed
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{n} observations through observe, 1 inference + 1 validation node; model calls (per observation); "
          f"load average {load}")
    print("\n| infer_with_extraction | validation_judge_wait | extraction | inference | validation | total "
          "| contradictions |")
    print("|---|---|---|---|---|---|---|")
    for (mode, wait), c in runs.items():
        total = c["extraction"] + c["inference"] + c["validation"]
        cells = [f"{c[k]} ({c[k] / n:.2f})" for k in ("extraction", "inference", "validation")]
        print(f"| {mode} | {wait:g} s | {' | '.join(cells)} | {total} ({total / n:.2f}) "
              f"| {c['contradictions']} |")


if __name__ == "__main__":
    asyncio.run(main())
