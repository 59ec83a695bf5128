"""Embedded servers tied to their node and to their data directory (issue 14, items 2 and 3).

Real ``run_node.py`` store processes with embedded FalkorDB and PostgreSQL in
one data directory. A watcher scans ``/proc`` all along for servers whose
working directory is that data directory's ``falkordb``/``postgres`` (the
servers ``chdir`` there) and records the most that ever ran at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from mnemonet.model.ids import keyed_id
from mnemonet.p2p.tokens import create_token
from mnemonet.store.datadir import DataDirLock
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.server_process import processes_in

REPO = Path(__file__).resolve().parents[2]
KEY = "data-dir-test-key"
READY_WITHIN = 180.0  # a cold start loads the embedding model and may initdb, on two loaded cores
WRITES = 10  # acknowledged observations per run
REFUSED_WITHIN = 5.0  # the bound for a second node on a used directory (idle machine)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spawn(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    """A store node on ``data_dir``; its log (stderr) goes to a file beside it, named by the node's pid."""
    env = {**os.environ, "MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline", "PYTHONPATH": str(REPO / "src"),
           "MNEMONET_DATA_DIR": str(data_dir), "MNEMONET_GRAPH_NAME": "faults"}
    for name in ("MNEMONET_FALKORDB_PORT", "MNEMONET_DATABASE_URL", "MNEMONET_GRAPH_BACKEND"):
        env.pop(name, None)  # embedded servers in data_dir: what this test is about
    log = data_dir.parent / f"node-{port}-{time.monotonic_ns()}.log"
    with log.open("wb") as stderr:  # a file, not a pipe: nobody reads the log while the node runs
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "run_node.py"), "--capabilities", "store,llm,embed", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    _logs[proc.pid] = log
    return proc


_logs: dict[int, Path] = {}


def servers(data_dir: Path) -> dict[str, list[int]]:
    """Pids of the FalkorDB servers and PostgreSQL postmasters running in ``data_dir`` (not their forks)."""
    return {"falkordb": processes_in(data_dir / "falkordb"), "postgres": processes_in(data_dir / "postgres")}


def _describe(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        parent = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1]
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (parent {parent}): {cmd[:120]}"


@asynccontextmanager
async def watched(data_dir: Path) -> AsyncIterator[dict[str, int]]:
    """The most servers of each kind seen running at once in ``data_dir`` while the block runs."""
    most = {"falkordb": 0, "postgres": 0}
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            for kind, pids in (await asyncio.to_thread(servers, data_dir)).items():
                if len(pids) > 1:  # say which, in the test's output, for whoever reads a failure
                    print(f"\ntwo {kind} servers in {data_dir}: {[_describe(pid) for pid in pids]}")
                most[kind] = max(most[kind], len(pids))
            await asyncio.sleep(0.02)

    task = asyncio.create_task(watch())
    try:
        yield most
    finally:
        done.set()
        await task


async def _ready(http: httpx.AsyncClient, url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the node exited with {proc.returncode}: {_stderr(proc)}"
        try:
            if (await http.post(f"{url}/v1/stats", json={}, timeout=60.0)).status_code == 200:  # opens the store
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"{url} not ready within {READY_WITHIN}s")


def _stderr(proc: subprocess.Popen[bytes]) -> str:
    return _logs[proc.pid].read_text(errors="replace")[-3000:]


def _python_startup() -> float:
    """Seconds this machine takes now to start Python and import what runs before the data-dir lock."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import mnemonet.node.cli_entry"], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    return time.monotonic() - started


async def _observe(http: httpx.AsyncClient, url: str, key: str) -> bool:
    resp = await http.post(f"{url}/v1/observe", json={"text": f"the note {key} is kept", "source": "faults",
                                                        "idempotency_key": key})
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["observation_id"] == keyed_id("obs", key, "faults")
    return bool(resp.json()["result"]["created"])


async def _terminate(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(proc.wait, 60.0)


def _cleanup(procs: list[subprocess.Popen[bytes]], data_dir: Path) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pids in servers(data_dir).values():
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


async def _observation_counts(data_dir: Path) -> dict[str, int]:
    """Every observation id in the graph with how often it is there, read from the files under the lock."""
    lock = DataDirLock(data_dir)
    lock.acquire()
    server = EmbeddedFalkorDB(data_dir / "falkordb")
    try:
        await server.start()
        driver = FalkorDriver(server.host, server.port, "faults", password=server.password)
        try:
            rows = await driver.read("MATCH (o:Observation) RETURN o.id AS id, count(*) AS n", {})
        finally:
            await driver.close()
    finally:
        await server.stop()
        lock.release()
    return {row["id"]: row["n"] for row in rows}


async def test_kill9_restart_keeps_one_server_per_directory_and_every_write_once(
    test_data_dir: Path, unique_name: str
) -> None:
    data_dir = test_data_dir / unique_name / "node"  # not under /tmp/pytest-of-root (0700): PostgreSQL runs as
    data_dir.parent.mkdir(parents=True)  # its own user and must reach it
    headers = {"authorization": f"Bearer {create_token(KEY, 'faults', ['read', 'write'], 3600)[0]}"}
    procs: list[subprocess.Popen[bytes]] = []
    acked: set[str] = set()
    try:
        async with watched(data_dir) as most, httpx.AsyncClient(headers=headers, trust_env=False,
                                                                timeout=60.0) as http:
            # Run 1: writes, then kill -9 of the node.
            port = _free_port()
            url = f"http://127.0.0.1:{port}"
            procs.append(_spawn(data_dir, port))
            await _ready(http, url, procs[-1])
            for i in range(WRITES):
                assert await _observe(http, url, f"run1-{i}")
                acked.add(f"run1-{i}")
            first_run = servers(data_dir)
            assert len(first_run["falkordb"]) == 1 and len(first_run["postgres"]) == 1
            procs[-1].send_signal(signal.SIGKILL)
            assert await asyncio.to_thread(procs[-1].wait, 30.0) == -signal.SIGKILL
            # Its FalkorDB follows it (parent-death signal): no orphan on the append-only files.
            started = time.monotonic()
            while servers(data_dir)["falkordb"]:
                assert time.monotonic() - started < 20.0, "the killed node's FalkorDB kept running"
                await asyncio.sleep(0.05)
            orphan_gone = time.monotonic() - started

            # Run 2: restart on the same directory, retry run 1's writes, write more, SIGTERM.
            procs.append(_spawn(data_dir, port))
            await _ready(http, url, procs[-1])
            for key in sorted(acked):
                assert not await _observe(http, url, key), f"{key}: a retry wrote it again"
            for i in range(WRITES):
                assert await _observe(http, url, f"run2-{i}")
                acked.add(f"run2-{i}")
            assert await _terminate(procs[-1]) == 0

            # Whatever the first run left behind is killed now (as a reboot or a cleanup would).
            left = servers(data_dir)
            for pids in left.values():
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)

            # Run 3: starts, and serves.
            procs.append(_spawn(data_dir, port))
            await _ready(http, url, procs[-1])
            assert await _observe(http, url, "run3-0")
            acked.add("run3-0")
            assert await _terminate(procs[-1]) == 0
        counts = await _observation_counts(data_dir)
    finally:
        _cleanup(procs, data_dir)
    print(f"\nkill -9 + restarts: FalkorDB of the killed node gone {orphan_gone:.2f}s after the kill; "
          f"left after the graceful stop: {left}; most servers at once: {most}; {len(acked)} acknowledged writes")
    assert most == {"falkordb": 1, "postgres": 1}, f"two servers ran on one directory: {most}"
    assert left == {"falkordb": [], "postgres": []}, f"a graceful stop left servers running: {left}"
    assert all(n == 1 for n in counts.values()), "an observation was written twice"
    assert set(counts) == {keyed_id("obs", key, "faults") for key in acked}, "an acknowledged observation is missing"


async def test_a_second_node_on_a_used_data_directory_exits_at_once_naming_it(
    test_data_dir: Path, unique_name: str
) -> None:
    data_dir = test_data_dir / unique_name / "node"
    data_dir.parent.mkdir(parents=True)
    headers = {"authorization": f"Bearer {create_token(KEY, 'faults', ['read', 'write'], 3600)[0]}"}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        async with watched(data_dir) as most, httpx.AsyncClient(headers=headers, trust_env=False,
                                                                timeout=60.0) as http:
            port = _free_port()
            url = f"http://127.0.0.1:{port}"
            procs.append(_spawn(data_dir, port))
            await _ready(http, url, procs[0])
            assert await _observe(http, url, "first-0")

            # The refusal comes right after Python starts and reads its settings; on two cores shared by
            # many test runs that start alone can take seconds, so the bound grows with it (never below 5 s).
            startup = await asyncio.to_thread(_python_startup)
            bound = max(REFUSED_WITHIN, 2 * startup)
            started = time.monotonic()
            procs.append(_spawn(data_dir, _free_port()))
            try:
                code = await asyncio.to_thread(procs[1].wait, bound)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"a second node on {data_dir} still runs after {bound:.1f}s") from None
            took = time.monotonic() - started
            message = _stderr(procs[1])
            assert code != 0
            assert str(data_dir.resolve()) in message and f"process {procs[0].pid}" in message, message

            # The first node keeps serving, on its own servers.
            assert procs[0].poll() is None
            assert await _observe(http, url, "first-1")
            assert (await http.get(f"{url}/health")).json()["status"] == "ok"
            assert await _terminate(procs[0]) == 0
    finally:
        _cleanup(procs, data_dir)
    print(f"\nsecond node on a used data directory: exit code {code} after {took:.2f}s "
          f"(bound {bound:.1f}s; Python start-up with the settings import alone took {startup:.2f}s)")
    assert most == {"falkordb": 1, "postgres": 1}, most


async def test_two_store_nodes_in_one_process_cannot_share_a_data_directory(tmp_path: Path) -> None:
    """``run_node.py demo`` twice in one process (or two nodes built by hand): the second store node is refused
    before it serves; nodes without embedded servers (the demo's workers, the CLI) share the directory."""
    from netsupport import fast_settings

    from mnemonet.node.peer_node import PeerNode
    from mnemonet.store.datadir import DataDirInUse

    directory = str(tmp_path.resolve())  # noqa: ASYNC240 (once, before anything runs)
    settings = fast_settings(data_dir=tmp_path, llm="offline")
    first = PeerNode(settings, {"store", "llm", "embed"})
    await first.start()
    try:
        second = PeerNode(settings, {"store", "llm", "embed"})
        try:
            await second.start()
        except DataDirInUse as exc:
            refused = str(exc)
        else:
            await second.stop()
            raise AssertionError("a second store node started on a used data directory")
        assert second.state == "stopped" and not second.url  # refused before serving anything
        assert directory in refused and f"process {os.getpid()}" in refused
        worker = PeerNode(settings.model_copy(update={"bootstrap": first.url}), {"inference"})
        await worker.start()  # no embedded servers: no lock to take
        await worker.stop()
    finally:
        await first.stop()
    again = PeerNode(settings, {"store", "llm", "embed"})
    await again.start()  # the first node let go of the directory when it stopped
    await again.stop()
