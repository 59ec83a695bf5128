"""Three store nodes over standalone FalkorDB and PostgreSQL; one killed with kill -9 while 20 clients write.

The engines are the session's servers (``falkordb_server``, ``postgres_url``): FalkorDB and PostgreSQL from
the wheels the embedded mode uses, started by the test session as plain servers, owned by no node, reached
by port and URL. Over them: three ``run_node.py`` store processes (store, llm, embed; offline model, the test
profile), two inference nodes and one validation node (in this process; they reach the store nodes only
through the network). Twenty clients write observations through all three store nodes over HTTP, each
acknowledged write searched for at once on every store node still alive; after a third of the writes the
first store node is killed with SIGKILL, and the clients retry what it did not answer on another store node
under the same idempotency key.

Afterwards, read straight from the engines: every acknowledged observation is in the graph exactly once (and
nothing else is), every observation was inferred once (one done-marker and one claim of the inference
source), every observation has its vector row and the shared index queue is empty, the graph's schema
set-up and the vector sync pass ran once among the three nodes, and no surviving node embedded a row another
had written (``vector_index_repeats``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from ledger import observation_text, read_ledger
from netsupport import ADMIN_TOKEN, CLUSTER_KEY, NodeFactory, client_token, eventually, until

from mnemonet.model.ids import keyed_id
from mnemonet.model.records import VALIDATION_SOURCE
from mnemonet.node.peer_node import PeerNode
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB, free_port

REPO = Path(__file__).resolve().parents[2]
STORES, CLIENTS, WRITES_PER_CLIENT = 3, 20, 5
WRITES = CLIENTS * WRITES_PER_CLIENT
KILL_AFTER = WRITES // 3  # acknowledged writes before the first store node is killed
CALL_TIMEOUT = 20.0  # seconds a client call may take before it is retried on another store node
READY_WITHIN = 180.0  # three store processes importing and loading their models at once on two loaded cores
DRAIN_WITHIN = 120.0
INDEX_READ_WAIT = 10.0  # the documented bound (settings: index_read_wait), as the nodes run with it
INDEX_LEASE = 2.0  # a dead node's queued rows are taken over this long after its last renewal
# The workers split the backlog (the store's extraction would otherwise infer each claim in the same call).
NODE_ENV = {"MNEMONET_PROFILE": "test", "MNEMONET_LLM": "offline", "MNEMONET_INFER_WITH_EXTRACTION": "off",
            "MNEMONET_INDEX_READ_WAIT": str(INDEX_READ_WAIT), "MNEMONET_INDEX_LEASE": str(INDEX_LEASE),
            "MNEMONET_VECTOR_SYNC_INTERVAL": "3600", "MNEMONET_REQUEST_TIMEOUT": "10"}
WORKER_TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.1, worker_batch_size=10,
                     request_timeout=10.0)


@dataclass
class Run:
    """What the clients saw."""

    acked: dict[int, str] = field(default_factory=dict)  # write number -> observation id
    searches: list[float] = field(default_factory=list)  # seconds each search of an acknowledged write took
    missed: list[str] = field(default_factory=list)  # a search that did not find its write
    retried: int = 0  # calls sent again to another store node


async def _spawn(port: int, peers: list[str], env: dict[str, str], data_dir: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "--capabilities", "store,llm,embed", "--port", str(port),
        "--bootstrap", ",".join(peers), env={**os.environ, **env, "MNEMONET_DATA_DIR": str(data_dir)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _ready(http: httpx.AsyncClient, url: str) -> None:
    async def answers() -> bool:
        try:  # a write-free call that opens the store (the first call builds it)
            return (await http.post(f"{url}/v1/stats", json={}, timeout=60.0)).status_code == 200
        except httpx.HTTPError:
            return False

    await until(answers, READY_WITHIN, f"{url} serves", step=0.5)


async def _search(http: httpx.AsyncClient, url: str, text: str) -> list[str] | None:
    """The ids a search on ``url`` finds for ``text``; None when that node does not answer (it was killed)."""
    try:
        resp = await http.post(f"{url}/v1/search", json={"query": text, "k": 5, "kinds": ["observation"]})
    except httpx.HTTPError:
        return None
    assert resp.status_code == 200, f"search on {url}: HTTP {resp.status_code} {resp.text}"
    return [hit["id"] for hit in resp.json()["result"]]


async def test_three_store_nodes_over_shared_engines_survive_a_kill9_with_every_write_once(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str, test_data_dir: Path,
    make_node: NodeFactory,
) -> None:
    ports = [free_port() for _ in range(STORES)]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    env = {**NODE_ENV, "MNEMONET_CLUSTER_KEY": CLUSTER_KEY, "PYTHONPATH": str(REPO / "src"),
           "MNEMONET_FALKORDB_PORT": str(falkordb_server.port), "MNEMONET_DATABASE_URL": postgres_url,
           "MNEMONET_GRAPH_NAME": unique_name, "MNEMONET_VECTOR_SCHEMA": unique_name}
    procs = [await _spawn(port, [u for u in urls if u != url], env, test_data_dir / f"scale-{i}")
             for i, (port, url) in enumerate(zip(ports, urls, strict=True))]
    run, killed = Run(), asyncio.Event()
    alive = list(urls)
    headers = {"authorization": f"Bearer {client_token('read,write', name='scale')}"}
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(headers=headers, trust_env=False, timeout=CALL_TIMEOUT) as http:
            await asyncio.gather(*(_ready(http, url) for url in urls))
            workers = [await make_node({capability}, bootstrap=",".join(urls), **WORKER_TIMERS)
                       for capability in ("inference", "inference", "validation")]
            await eventually(lambda: _sees_stores(workers, urls), 60.0, "the workers see the three store nodes")
            ready = time.monotonic() - started

            async def write(i: int) -> None:
                key = f"{unique_name}-{i}"
                for attempt in range(2 * STORES):  # the same key every time: a retry must not write twice
                    url = urls[(i + attempt) % STORES]
                    run.retried += attempt > 0
                    try:
                        resp = await http.post(f"{url}/v1/observe", json={
                            "text": observation_text(i), "source": "scale", "idempotency_key": key})
                    except httpx.HTTPError:
                        continue
                    if resp.status_code in (502, 503, 504):
                        continue
                    assert resp.status_code == 200, f"observe {i}: HTTP {resp.status_code} {resp.text}"
                    obs_id = resp.json()["result"]["observation_id"]
                    assert obs_id == keyed_id("obs", key, "scale")
                    run.acked[i] = obs_id
                    break
                else:
                    raise AssertionError(f"observe {i}: no store node acknowledged it")
                if len(run.acked) >= KILL_AFTER and not killed.is_set():
                    killed.set()
                    procs[0].send_signal(signal.SIGKILL)
                    alive.remove(urls[0])
                for url in list(alive):  # found on every store node still alive, at once
                    begun = time.monotonic()
                    ids = await _search(http, url, observation_text(i))
                    if ids is None and url not in alive:
                        continue  # killed while it searched
                    run.searches.append(time.monotonic() - begun)
                    if ids is None or obs_id not in ids:
                        run.missed.append(f"write {i} ({obs_id}) not found on {url}: {ids}")

            async def client(n: int) -> None:
                for j in range(WRITES_PER_CLIENT):
                    await write(n * WRITES_PER_CLIENT + j)

            writing = time.monotonic()
            await asyncio.gather(*(client(n) for n in range(CLIENTS)))
            wrote = time.monotonic() - writing
            assert killed.is_set() and await asyncio.wait_for(procs[0].wait(), 10.0) == -signal.SIGKILL

            driver = FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name)
            try:
                drained = await _drained(driver)
                ledger = await read_ledger(driver.read)
                counts = {r["id"]: r["n"] for r in await driver.read(
                    "MATCH (o:Observation) RETURN o.id AS id, count(*) AS n", {})}
                validated = await driver.read(
                    "MATCH (:Source {name: $source})-[p:PROCESSED]->(s:Statement) RETURN s.id AS id, count(p) AS n",
                    {"source": VALIDATION_SOURCE})
            finally:
                await driver.close()
            stats = [(await http.post(f"{url}/v1/stats", json={},
                                      headers={"authorization": f"Bearer {ADMIN_TOKEN}"})).json()["result"]
                     for url in alive]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 30.0)
    queued, rows, jobs = await _postgres(postgres_url, unique_name, sorted(run.acked.values()))

    search_p95 = statistics.quantiles(run.searches, n=20)[-1]
    ran = ", ".join(f"{j['key']} {j['starts']}/{j['completions']}" for j in jobs)
    print(f"\nscale-out: {STORES} store nodes ready with 3 workers in {ready:.1f}s; {len(run.acked)}/{WRITES} "
          f"acknowledged in {wrote:.1f}s by {CLIENTS} clients ({run.retried} calls retried on another node, "
          f"store 0 killed after {KILL_AFTER}); {len(run.searches)} searches of acknowledged writes on every live "
          f"store node: p50 {statistics.median(run.searches) * 1000:.0f} ms, p95 {search_p95 * 1000:.0f} ms, max "
          f"{max(run.searches) * 1000:.0f} ms (bound {INDEX_READ_WAIT:.0f}s); inference drained {drained:.1f}s after "
          f"the last write; taken over from the dead node's queue: "
          f"{sum(s['vector_index_taken_over'] for s in stats)} rows; jobs (starts/completions): {ran}")

    assert run.missed == [], run.missed[:5]
    # Found within the bound: no search gave up waiting for queued rows (wall time varies with the machine's load).
    assert sum(s["vector_reads_unsettled"] for s in stats) == 0
    assert len(run.acked) == WRITES  # the survivors took every retry
    assert all(n == 1 for n in counts.values()), "an observation was written twice"
    assert set(counts) == set(run.acked.values()), "an acknowledged write is missing, or another was written"
    assert ledger.missed_or_repeated() == []  # every observation inferred once: one marker, one claim
    assert all(r["n"] == 1 for r in validated), "a statement validated twice"
    assert queued == 0 and rows == len(run.acked), "an acknowledged write without its vector row"
    by_kind = {j["kind"]: j for j in jobs}
    assert (by_kind["schema"]["starts"], by_kind["schema"]["completions"]) == (1, 1)  # set up by one node
    assert (by_kind["vector-sync"]["starts"], by_kind["vector-sync"]["completions"]) == (1, 1)
    assert all(s["vector_index_repeats"] == 0 for s in stats), "a survivor embedded a row another had written"


def _sees_stores(workers: list[PeerNode], urls: list[str]) -> bool:
    return all(sum(1 for m in w.membership.alive("store")) == len(urls) for w in workers)


async def _drained(driver: FalkorDriver) -> float:
    """Seconds until the inference workers have processed every observation."""
    begun = time.monotonic()

    async def done() -> bool:
        return (await read_ledger(driver.read)).pending == 0

    await until(done, DRAIN_WITHIN, "the inference backlog drains", step=0.5)
    return time.monotonic() - begun


async def _postgres(url: str, schema: str, ids: list[str]) -> tuple[int, int, list[dict[str, Any]]]:
    """Rows left in the shared index queue, vector rows of ``ids``, and the job ledger."""
    conn = await asyncpg.connect(url)
    try:
        queued = await conn.fetchval(f'SELECT count(*) FROM "{schema}".index_queue')
        rows = await conn.fetchval(f'SELECT count(*) FROM "{schema}".embeddings WHERE id = ANY($1::text[])', ids)
        jobs = [dict(r) for r in await conn.fetch(
            f'SELECT key, kind, starts, completions, state FROM "{schema}".jobs ORDER BY key')]
    finally:
        await conn.close()
    return int(queued), int(rows), jobs
