"""Inference workers on both sides of a partition made by the kernel: ``run_node.py`` processes in two
Linux network namespaces joined by one veth pair, cut and healed under them.

The scenario and what it asserts are in ``partition_scenario.py`` (the
in-process run of the same scenario is ``test_partition_agents.py``). Here
nothing in the nodes knows about the fault: packets between the namespaces
are dropped by the kernel (``netns.py``), so open TCP connections stall,
connects time out, and every timeout is the nodes' own. Both store processes
reach the session's FalkorDB through a relay on the root namespace's end of
their side's veth, and its PostgreSQL through its Unix socket. Needs root
and ``ip`` (iproute2); skipped, saying why, without them.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from ledger import Ledger, observation_text, read_ledger
from netns import NetnsPair, Side, TcpRelay, unavailable
from partition_scenario import View, WorkerCounters, run_scenario

from mnemonet.p2p.tokens import create_token
from mnemonet.settings import Settings
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

REPO = Path(__file__).resolve().parents[2]
KEY = "netns-partition-key"
WRITERS = 8
START_BOUND = 120.0  # seconds for five Python processes (two loading the embedding model) on two loaded cores
NETNS_UNAVAILABLE = unavailable()  # None where this machine can make network namespaces
# Timers for five processes on two loaded cores: fast enough to split and heal in seconds, with a probe
# timeout that a descheduled process still meets. request_timeout: see test_partition_agents.py.
TIMERS: dict[str, Any] = dict(
    llm="offline", probe_interval=0.5, probe_timeout=0.3, indirect_probes=2, suspicion_timeout=2.0,
    gossip_interval=0.2, push_pull_interval=1.0, link_maintenance_interval=0.5, control_timeout=1.0,
    link_connect_timeout=1.0, request_timeout=10.0, rejoin_backoff_initial=0.2, rejoin_backoff_max=1.0,
    shutdown_timeout=1.0, worker_poll_interval=0.5, worker_event_debounce=0.1, worker_batch_size=10,
)
_FAILOVERS = re.compile(r'^mnemonet_rpc_failovers_total\{[^}]*method="record_inference"[^}]*\} (\S+)$', re.M)


@dataclass
class NodeProcess:
    """One ``run_node.py`` in a namespace, and the URL the test reaches it at."""

    node_id: str
    side: Side
    port: int
    process: asyncio.subprocess.Process

    @property
    def url(self) -> str:
        """Where the test (in the root namespace) reaches the node."""
        return f"http://{self.side.root_ip}:{self.port}"

    @property
    def peer_url(self) -> str:
        """Where the other nodes reach it: its advertised address on the cross veth."""
        return f"http://{self.side.peer_ip}:{self.port}"


class NetnsNetwork:
    """``PartitionedNetwork`` over node processes in two namespaces, read through their HTTP API."""

    def __init__(self, pair: NetnsPair, http: httpx.AsyncClient, driver: FalkorDriver) -> None:
        self._pair = pair
        self._http = http
        self._driver = driver
        self.nodes: dict[str, NodeProcess] = {}
        self.side_a: list[str] = []
        self.side_b: list[str] = []

    async def start_node(self, side: Side, port: int, capabilities: str, name: str, env: dict[str, str],
                         logs: Path, seed: NodeProcess | None = None) -> NodeProcess:
        """Start ``run_node.py`` inside ``side``'s namespace, listening on every address of it."""
        node_id = f"{name}-{uuid.uuid4().hex[:6]}"
        argv = [*side.exec_argv(), sys.executable, str(REPO / "run_node.py"), "--capabilities", capabilities,
                "--host", "0.0.0.0", "--port", str(port), "--advertise-url", f"http://{side.peer_ip}:{port}"]
        if seed is not None:
            argv += ["--bootstrap", seed.peer_url]
        # The child keeps its own copy of the descriptor; opening a log file does not stall the test's loop.
        with open(logs / f"{name}.log", "wb") as log:  # noqa: ASYNC230
            process = await asyncio.create_subprocess_exec(
                *argv, env={**env, "MNEMONET_NODE_ID": node_id, "MNEMONET_DATA_DIR": str(logs / name)},
                stdout=asyncio.subprocess.DEVNULL, stderr=log)
        node = self.nodes[node_id] = NodeProcess(node_id, side, port, process)
        (self.side_a if side is self._pair.a else self.side_b).append(node_id)
        return node

    async def ready(self) -> None:
        """Every node answers ``/health``; both store nodes have opened the store."""
        async def up(node: NodeProcess) -> None:
            deadline = asyncio.get_running_loop().time() + START_BOUND
            while asyncio.get_running_loop().time() < deadline:
                assert node.process.returncode is None, f"{node.node_id} exited with {node.process.returncode}"
                try:
                    if "store" in (await self._health(node))["capabilities"]:
                        await self._post(node, "stats", {})  # the first call opens the store
                    return
                except httpx.HTTPError:
                    await asyncio.sleep(0.3)
            raise AssertionError(f"{node.node_id} not ready within {START_BOUND}s")

        await asyncio.gather(*(up(node) for node in self.nodes.values()))

    async def stop(self) -> None:
        """SIGTERM every node (they leave gracefully), SIGKILL what is still there after a while."""
        for node in self.nodes.values():
            if node.process.returncode is None:
                node.process.send_signal(signal.SIGTERM)
        for node in self.nodes.values():
            try:
                await asyncio.wait_for(node.process.wait(), 20.0)
            except TimeoutError:
                node.process.kill()
                await node.process.wait()

    async def _health(self, node: NodeProcess) -> dict[str, Any]:
        resp = await self._http.get(f"{node.url}/health")
        resp.raise_for_status()
        return resp.json()

    async def _post(self, node: NodeProcess, method: str, body: dict[str, Any]) -> Any:
        resp = await self._http.post(f"{node.url}/v1/{method}", json=body)
        assert resp.status_code == 200, f"{method} on {node.node_id}: HTTP {resp.status_code} {resp.text}"
        return resp.json()["result"]

    # -- PartitionedNetwork ------------------------------------------------------------
    async def views(self) -> dict[str, View]:
        healths = await asyncio.gather(*(self._health(node) for node in self.nodes.values()))
        return {h["node_id"]: {m["node_id"]: (m["state"], m["incarnation"]) for m in h["members"]} for h in healths}

    async def counters(self) -> dict[str, WorkerCounters]:
        async def one(node: NodeProcess) -> tuple[str, WorkerCounters]:
            stats = next(w for w in (await self._health(node))["workers"] if w.get("worker") == "inference")
            metrics = (await self._http.get(f"{node.url}/metrics")).text
            retried = sum(float(value) for value in _FAILOVERS.findall(metrics))
            return node.node_id, WorkerCounters(passes=stats["passes"], processed=stats["processed"],
                                                repeats=stats["duplicates_absorbed"], llm_calls=stats["llm_calls"],
                                                retried_writes=int(retried))

        workers = [node for node in self.nodes.values() if node.node_id not in (self.side_a[0], self.side_b[0])]
        return dict(await asyncio.gather(*(one(node) for node in workers)))

    async def write(self, side: int, keys: range) -> None:
        store = self.nodes[(self.side_a, self.side_b)[side][0]]
        slots = asyncio.Semaphore(WRITERS)

        async def one(i: int) -> None:
            async with slots:
                await self._post(store, "observe", {"text": observation_text(i), "source": "user",
                                                    "idempotency_key": f"obs-{i}"})

        await asyncio.gather(*(one(i) for i in keys))

    async def ledger(self) -> Ledger:
        return await read_ledger(self._driver.read)

    async def cut(self) -> None:
        await self._pair.cut()

    async def heal(self) -> None:
        await self._pair.heal()


@pytest.fixture
def netns_pair() -> Iterator[NetnsPair]:
    """Two fresh namespaces and their veths, deleted again whatever the test did."""
    pair = NetnsPair(uuid.uuid4().hex[:5])
    pair.create()
    try:
        yield pair
    finally:
        pair.destroy()


@pytest.fixture
async def netns_network(netns_pair: NetnsPair, falkordb_server: EmbeddedFalkorDB, postgres_url: str,
                        unique_name: str, test_data_dir: Path) -> AsyncIterator[NetnsNetwork]:
    """Side A: a store node and two inference nodes; side B: a store node and one inference node.

    Every process is stopped before the namespaces go (this fixture is torn down first). Each
    node logs warnings and errors to ``<test data dir>/netns-<graph name>/<node>.log``.
    """
    a, b = netns_pair.a, netns_pair.b
    relay = TcpRelay(falkordb_server.host, falkordb_server.port)
    relay_port = await relay.start([a.gateway_ip, b.gateway_ip])
    logs = test_data_dir / f"netns-{unique_name}"
    logs.mkdir(parents=True)
    driver = FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name)
    # The workers' split of a backlog is what is tested: with the default (auto) the store nodes would infer
    # each claim in the extraction call, and the workers would have nothing to split.
    common = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MNEMONET_CLUSTER_KEY": KEY,
              "MNEMONET_INFER_WITH_EXTRACTION": "off",
              "MNEMONET_DATABASE_URL": postgres_url, "MNEMONET_GRAPH_NAME": unique_name,
              "MNEMONET_FALKORDB_PORT": str(relay_port), "MNEMONET_LOG_LEVEL": "WARNING",
              **{f"MNEMONET_{name.upper()}": str(value) for name, value in TIMERS.items()}}
    env_a, env_b = ({**common, "MNEMONET_FALKORDB_HOST": side.gateway_ip} for side in (a, b))
    token, _ = create_token(KEY, "netns", ["read", "write", "speak-for"], 3600)
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, trust_env=False, timeout=30.0) as http:
        net = NetnsNetwork(netns_pair, http, driver)
        try:
            store_a = await net.start_node(a, 9000, "store,llm,embed", "store-a", env_a, logs)
            await net.start_node(a, 9001, "inference", "infer-a1", env_a, logs, seed=store_a)
            await net.start_node(a, 9002, "inference", "infer-a2", env_a, logs, seed=store_a)
            await net.start_node(b, 9000, "store,llm,embed", "store-b", env_b, logs, seed=store_a)
            await net.start_node(b, 9001, "inference", "infer-b1", env_b, logs, seed=store_a)
            await net.ready()
            yield net
        finally:
            await net.stop()
            await driver.close()
            await relay.close()


@pytest.mark.skipif(NETNS_UNAVAILABLE is not None,
                    reason=f"cannot partition with network namespaces here: {NETNS_UNAVAILABLE}")
async def test_inference_on_both_sides_of_a_kernel_partition_processes_each_observation_once(
    netns_network: NetnsNetwork, netns_pair: NetnsPair
) -> None:
    figures = await run_scenario(netns_network, Settings(**TIMERS))
    print(f"\npartition with agents (network namespaces, {netns_pair.cut_method}): {figures.line()}")
