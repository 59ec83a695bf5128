"""run_node.py as real processes: join, health, graceful leave on SIGTERM, refused public bind."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from mnemonet.p2p.tokens import create_token

REPO = Path(__file__).resolve().parents[2]
START_WITHIN = 120.0  # seconds a run_node.py process may take to serve on a loaded machine
FAST_FLAGS = ["--profile", "test"]  # short timers (mnemonet/profiles.py): membership settles in seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


KEY = "process-test-key"
# /health shows members only to a client token with the read scope.
READ = {"authorization": f"Bearer {create_token(KEY, 'e2e', ['read'], 3600)[0]}"}


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline",
           "PYTHONPATH": str(REPO / "src")}
    return await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), *args, *FAST_FLAGS,
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _health(http: httpx.AsyncClient, port: int) -> dict | None:
    try:
        return (await http.get(f"http://127.0.0.1:{port}/health")).json()
    except httpx.HTTPError:
        return None


async def test_two_processes_join_and_leave_on_sigterm() -> None:
    port_a, port_b = _free_port(), _free_port()
    a = await _spawn("--capabilities", "llm", "--port", str(port_a))
    b = await _spawn("--capabilities", "cli", "--port", str(port_b), "--bootstrap", f"http://127.0.0.1:{port_a}")
    seen: dict[str, dict | None] = {}
    try:
        async with httpx.AsyncClient(trust_env=False, headers=READ) as http:
            async def poll() -> None:
                seen["a"] = await _health(http, port_a)

            async def both_alive() -> bool:
                await poll()
                h = seen["a"]
                return h is not None and sum(m["state"] == "alive" for m in h["members"]) == 2

            async def both_serving() -> bool:
                return all([await _health(http, port) is not None for port in (port_a, port_b)])

            # Start-up (imports) takes 20 s and more on two loaded cores; membership is timed from serving on.
            await _until(both_serving, START_WITHIN, "both processes serve")
            await _until(both_alive, 15.0, "both processes see each other")
            health = seen["a"]
            assert health is not None
            assert health["capabilities"] == ["llm"]

            async def warmed_up() -> bool:
                await poll()
                h = seen["a"]
                return h is not None and h["dependencies"] == {"llm": "ready"}

            # No call needed it: the node loads its model in the background once it serves (``warm_up``).
            await _until(warmed_up, START_WITHIN, "the llm provider is built without a call")

            b.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(b.wait(), 10.0) == 0

            async def b_left() -> bool:
                await poll()
                h = seen["a"]
                return h is not None and any(m["state"] == "left" for m in h["members"])

            await _until(b_left, 3.0, "the stopped process is marked left")
    finally:
        for proc in (a, b):
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 10.0)
    assert a.returncode == 0


async def _until(check, within: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"not true within {within}s: {what}")
        await asyncio.sleep(0.1)


def test_refuses_public_bind_without_key_and_documents_flags() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MNEMONET_CLUSTER_KEY"}
    env["PYTHONPATH"] = str(REPO / "src")
    refused = subprocess.run([sys.executable, str(REPO / "run_node.py"), "--host", "0.0.0.0", "--port", "0"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "cluster key" in refused.stderr
    helped = subprocess.run([sys.executable, str(REPO / "run_node.py"), "--help"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0
    for flag in ("--profile", "--capabilities", "--bootstrap", "--advertise-url", "--cluster-key", "--insecure",
                 "--data-dir", "--gossip-fanout", "--suspicion-timeout"):
        assert flag in helped.stdout
