"""A store node restarted (SIGTERM, or kill -9 and a pause) is whole again: routed calls from workers succeed.

The store is a run_node.py process (reaching the session's FalkorDB and
PostgreSQL, as in test_kill9); two worker nodes bootstrap through it, so
after the store goes away they still see each other — the case where a node
that re-bootstraps only when it knows nobody never calls its seed again.
The store is restarted with the same flags (a new process and a new node
id). Measured: seconds from the restart until a routed ``observe`` from a
worker succeeds, split into the store's own start-up and the rejoin after it.
Asserted: within ``RESTART_TARGET`` (the issue's 10 s), or, on a machine too
loaded for that, within the cold start of the store's own code measured just
before (``cold_start``) plus the rejoin bound the settings give.
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
from typing import Any

import httpx
import pytest
from faultsupport import BOUND_MARGIN
from netsupport import ADMIN_TOKEN, CLUSTER_KEY, NodeFactory, eventually

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import Envelope, Kind, encode
from mnemonet.p2p.errors import P2PError
from mnemonet.p2p.membership import MemberState
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

REPO = Path(__file__).resolve().parents[2]
START_WITHIN = 120.0  # seconds the store process may take to serve (imports, the embedding model) on a loaded machine
RESTART_TARGET = 10.0  # seconds from a store's restart until routed calls work again (issue 14)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rejoin_bound(settings: Settings) -> float:
    """Seconds from the restarted store serving until a worker's routed call succeeds.

    A worker tries its seed again at most ``rejoin_backoff_max x (1 + jitter)``
    after its last failed try, checks every ``link_maintenance_interval``, and
    a join round trip takes up to ``control_timeout``; the call itself is one
    more round trip. (The restarted store also calls the peers it remembers at
    once, which is usually faster.)
    """
    wait = settings.rejoin_backoff_max * (1 + settings.rejoin_jitter) + settings.link_maintenance_interval
    return BOUND_MARGIN * (wait + 2 * settings.control_timeout)


def cold_start() -> float:
    """Seconds a fresh interpreter takes to import a store node's code and load the offline model, now.

    The CPU work a restarted store must do before it can answer an ``observe``
    (2.3 s of CPU, measured); on two loaded cores its wall time is what varies.
    """
    code = ("import mnemonet.node.peer_node, mnemonet.service; "
            "from mnemonet.llm.offline import nlp; nlp.pipeline()")
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    return time.monotonic() - started


class StoreProcess:
    """One run_node.py store process, restartable with the same flags."""

    def __init__(self, falkordb: EmbeddedFalkorDB, postgres_url: str, graph: str, data_dir: Path,
                 node_id: str = "") -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "MNEMONET_CLUSTER_KEY": CLUSTER_KEY, "MNEMONET_LLM": "offline",
                    "PYTHONPATH": str(REPO / "src"), "MNEMONET_FALKORDB_PORT": str(falkordb.port),
                    "MNEMONET_DATABASE_URL": postgres_url, "MNEMONET_GRAPH_NAME": graph,
                    "MNEMONET_DATA_DIR": str(data_dir), "MNEMONET_NODE_ID": node_id}
        self.data_dir = data_dir
        self.log = data_dir / "store.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> float:
        """Start the process and wait until it serves; the monotonic time it was started."""
        started = time.monotonic()
        with self.log.open("a") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, str(REPO / "run_node.py"), "--capabilities", "store,llm,embed",
                "--port", str(self.port), env=self.env, stdout=log, stderr=subprocess.STDOUT)
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {ADMIN_TOKEN}"}, trust_env=False) as http:

            async def serving() -> bool:
                try:
                    return (await http.post(f"{self.url}/v1/stats", json={}, timeout=30.0)).status_code == 200
                except httpx.HTTPError:
                    return False

            deadline = started + START_WITHIN
            while not await serving():
                assert self.proc.returncode is None, f"store exited with {self.proc.returncode}; see {self.log}"
                assert time.monotonic() < deadline, f"store not serving within {START_WITHIN}s; see {self.log}"
                await asyncio.sleep(0.1)
        return started

    async def stop(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        await asyncio.wait_for(self.proc.wait(), 30.0)


async def _routed_call_ok(node: PeerNode, key: str) -> bool:
    try:
        await node.client.observe("the store answers again", idempotency_key=key)
    except P2PError:
        return False
    return True


async def _until_routed_call_ok(node: PeerNode, key: str, within: float) -> float:
    start = time.monotonic()
    while not await _routed_call_ok(node, key):
        assert time.monotonic() - start < within, f"no routed call succeeded within {within:.1f}s"
        await asyncio.sleep(0.05)
    return time.monotonic()


@pytest.mark.parametrize("fault", ["sigterm", "kill9"])
async def test_routed_calls_succeed_again_after_the_store_restarts(
    fault: str, make_node: NodeFactory, falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
    test_data_dir: Path,
) -> None:
    store = StoreProcess(falkordb_server, postgres_url, unique_name, test_data_dir / f"restart-{unique_name}")
    await store.start()
    try:
        workers = []
        for _ in range(2):
            workers.append(await make_node({"cli"}, bootstrap=store.url, request_timeout=10.0, rpc_attempts=1))
        settings = workers[0].settings
        await eventually(lambda: all(len(w.membership.alive()) == 3 for w in workers), 10.0, "all three joined")
        assert await _routed_call_ok(workers[0], f"{unique_name}-before")

        if fault == "sigterm":
            await store.stop(signal.SIGTERM)
        else:
            await store.stop(signal.SIGKILL)
        await eventually(lambda: all(len(w.membership.alive()) == 2 for w in workers), 30.0,
                         "workers hold the old store gone")
        if fault == "kill9":
            # A long outage, waited for as a condition (it was a 10 s sleep): every worker has backed off to its
            # longest wait between tries of the store's URL, the worst case rejoin_bound allows for.
            await eventually(lambda: all(w.cluster.peers.backoff(store.url) >= settings.rejoin_backoff_max
                                         for w in workers), 30.0, "workers backed off to their longest wait")
        assert not await _routed_call_ok(workers[0], f"{unique_name}-during")

        cold = await asyncio.to_thread(cold_start)
        restarted = await store.start()
        serving = time.monotonic()
        bound = rejoin_bound(settings)
        ok = await asyncio.gather(*(_until_routed_call_ok(w, f"{unique_name}-after-{i}", bound)
                                    for i, w in enumerate(workers)))
        total = max(ok) - restarted
        total_bound = max(RESTART_TARGET, cold + bound)
        print(f"\nstore restart ({fault}): store serving {serving - restarted:.2f}s after the restart; "
              f"routed calls from both workers ok {max(ok) - serving:.2f}s later "
              f"({total:.2f}s after the restart; bound {total_bound:.1f}s = max({RESTART_TARGET:.0f}s, "
              f"cold start {cold:.2f}s + rejoin {bound:.1f}s); load {os.getloadavg()[0]:.1f})")
        assert total <= total_bound, f"routed calls ok {total:.2f}s after the restart (bound {total_bound:.1f}s)"
    finally:
        if store.proc is not None and store.proc.returncode is None:
            await store.stop(signal.SIGTERM)


async def _suspect(store: StoreProcess, node_id: str, incarnation: int) -> None:
    """A key holder's gossip to the store: it is suspect at ``incarnation`` (the store refutes, one higher)."""
    claim = {"node_id": node_id, "url": store.url, "capabilities": ["embed", "llm", "store"],
             "incarnation": incarnation, "state": "suspect"}
    env = Envelope(kind=Kind.GOSSIP, sender="forger", target=node_id, payload={"updates": [claim]})
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.post(f"{store.url}/v1/peer", content=encode(env, CLUSTER_KEY.encode()))).status_code == 204


async def test_a_store_restarted_under_its_id_wins_it_back_whatever_incarnation_the_workers_saw(
    make_node: NodeFactory, falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
    test_data_dir: Path,
) -> None:
    # Issue 31, row 7: one gossip from a key holder raised the store's incarnation by 2**20; it refuted at once,
    # but after its next kill -9 and restart (the same node id, at incarnation 0) routed calls from the workers
    # answered 503 for minutes: every record of itself the store was sent was a jump it refused.
    node_id = f"store-{unique_name}"
    store = StoreProcess(falkordb_server, postgres_url, unique_name, test_data_dir / f"identity-{unique_name}",
                         node_id=node_id)
    await store.start()
    try:
        workers = [await make_node({"cli"}, bootstrap=store.url, request_timeout=10.0, rpc_attempts=1)
                   for _ in range(2)]
        settings = workers[0].settings
        jump = settings.max_incarnation_jump

        def store_record(worker: PeerNode) -> Any:
            return worker.membership.get(node_id)

        def held_alive_at(incarnation: int) -> bool:
            return all((r := store_record(w)) is not None and r.state is MemberState.ALIVE
                       and r.incarnation >= incarnation for w in workers)

        await eventually(lambda: held_alive_at(0), 30.0, "the workers joined the store")
        await _suspect(store, node_id, store_record(workers[0]).incarnation)  # an ordinary refutation first
        await eventually(lambda: held_alive_at(1), 10.0, "the workers took the store's refutation")
        high = store_record(workers[0]).incarnation + jump - 1  # the most a claim may raise it
        await _suspect(store, node_id, high)
        await eventually(lambda: held_alive_at(high + 1), 10.0, "the workers took the refutation 2**20 higher")
        remembered = store.data_dir / "peers" / f"{node_id}.json"
        await eventually(lambda: remembered.exists() and all(w.url in remembered.read_text() for w in workers),
                         30.0, "the store remembers its peers")

        await store.stop(signal.SIGKILL)
        await eventually(lambda: all(store_record(w).state is MemberState.DEAD for w in workers), 30.0,
                         "the workers hold the store dead")
        assert not await _routed_call_ok(workers[0], f"{unique_name}-during")

        cold = await asyncio.to_thread(cold_start)
        restarted = await store.start()
        bound = rejoin_bound(settings)
        ok = await asyncio.gather(*(_until_routed_call_ok(w, f"{unique_name}-after-{i}", cold + bound)
                                    for i, w in enumerate(workers)))
        print(f"\nstore restarted under its id after a 2**20 refutation: routed calls from both workers ok "
              f"{max(ok) - restarted:.2f}s after the restart (bound {cold + bound:.1f}s = cold start {cold:.2f}s "
              f"+ rejoin {bound:.1f}s); its incarnation {store_record(workers[0]).incarnation} > {high + 1}")
        assert held_alive_at(high + 2)
    finally:
        if store.proc is not None and store.proc.returncode is None:
            await store.stop(signal.SIGTERM)
