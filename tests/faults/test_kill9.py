"""kill -9 of a store node process while a client writes 250 observations through two store nodes sharing one database.

Both run_node.py processes reach the session's FalkorDB (``--falkordb-port``)
and PostgreSQL (``database_url``). The client sends each observation to one
node and, when that node fails or does not answer, retries it on the other
under the same idempotency key. Afterwards the graph is read directly: every
acknowledged observation is there exactly once, every other one at most once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from mnemonet.model.ids import keyed_id
from mnemonet.p2p.tokens import create_token
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

REPO = Path(__file__).resolve().parents[2]
KEY = "kill9-test-key"
# What can be lost or doubled is what is in flight at the kill (CONCURRENCY calls) and its retries; the writes
# after it show the survivor takes everything. 250 (was 500: every write is parsed and embedded for real, so
# the count set the test's time) keeps 100 before the kill and 150 after.
WRITES = 250
CONCURRENCY = 8
KILL_AFTER = 100  # acknowledged writes before the first node is killed
CALL_TIMEOUT = 20.0  # seconds one client call may take before it is retried on the other node


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _spawn(
    port: int, falkordb_port: int, postgres_url: str, graph: str, data_dir: Path
) -> asyncio.subprocess.Process:
    env = {**os.environ, "MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline", "PYTHONPATH": str(REPO / "src"),
           "MNEMONET_FALKORDB_PORT": str(falkordb_port), "MNEMONET_DATABASE_URL": postgres_url,
           "MNEMONET_GRAPH_NAME": graph, "MNEMONET_DATA_DIR": str(data_dir)}
    return await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "--capabilities", "store,llm,embed", "--port", str(port),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _ready(http: httpx.AsyncClient, url: str, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            # A write-free call that opens the store (the first call builds it).
            resp = await http.post(f"{url}/v1/stats", json={}, timeout=30.0)
            if resp.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"{url} not ready within {within}s")


async def test_kill9_of_a_store_process_loses_and_duplicates_nothing(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str, test_data_dir: Path
) -> None:
    urls = [f"http://127.0.0.1:{_free_port()}" for _ in range(2)]
    procs = [await _spawn(int(url.rsplit(":", 1)[1]), falkordb_server.port, postgres_url, unique_name,
                          test_data_dir / f"kill9-{i}") for i, url in enumerate(urls)]
    acked: set[str] = set()
    failed: set[str] = set()
    killed = asyncio.Event()
    headers = {"authorization": f"Bearer {create_token(KEY, 'kill9', ['read', 'write'], 3600)[0]}"}
    try:
        async with httpx.AsyncClient(headers=headers, trust_env=False, timeout=CALL_TIMEOUT) as http:
            await asyncio.gather(*(_ready(http, url, 120.0) for url in urls))
            queue: asyncio.Queue[int] = asyncio.Queue()
            for i in range(WRITES):
                queue.put_nowait(i)

            async def write(i: int) -> None:
                key = f"{unique_name}-{i}"
                for attempt in range(4):  # the same key on every attempt: a retry must not duplicate
                    url = urls[(i + attempt) % 2]
                    try:
                        resp = await http.post(f"{url}/v1/observe", json={"text": f"fact number {i} is kept",
                                                                          "source": "kill9", "idempotency_key": key})
                    except httpx.HTTPError:
                        continue
                    if resp.status_code == 200:
                        assert resp.json()["result"]["observation_id"] == keyed_id("obs", key, "kill9")
                        acked.add(key)
                        if len(acked) >= KILL_AFTER and not killed.is_set():
                            killed.set()
                            procs[0].send_signal(signal.SIGKILL)
                        return
                    if resp.status_code not in (502, 503, 504):
                        raise AssertionError(f"observe {i}: HTTP {resp.status_code} {resp.text}")
                failed.add(key)

            async def worker() -> None:
                while not queue.empty():
                    await write(queue.get_nowait())

            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
            took = time.monotonic() - started
        assert killed.is_set() and await asyncio.wait_for(procs[0].wait(), 10.0) == -signal.SIGKILL
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 20.0)

    driver = FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name)
    try:
        rows = await driver.read("MATCH (o:Observation) RETURN o.id AS id, count(*) AS n", {})
    finally:
        await driver.close()
    counts = {row["id"]: row["n"] for row in rows}
    print(f"\nkill -9: {len(acked)} acknowledged, {len(failed)} failed of {WRITES} in {took:.1f}s; "
          f"{len(counts)} observations in the graph")
    assert all(n == 1 for n in counts.values()), "an observation was written twice"
    assert {keyed_id("obs", key, "kill9") for key in acked} <= set(counts), "an acknowledged observation is missing"
    assert set(counts) <= {keyed_id("obs", f"{unique_name}-{i}", "kill9") for i in range(WRITES)}
    assert len(acked) == WRITES  # the surviving node took every retry
