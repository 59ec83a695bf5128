"""Unfinished uploads to the peer endpoints cannot take a node's memory (issue 17, High 4).

A peer envelope is authenticated by a tag over its whole body, so the node
must read before it can check. It once read every body up to 8 MiB at once:
60 unfinished 8 MiB uploads took a store from 173 MB to 638 MB and never gave
it back. This runs a real node process (``run_node.py``) and measures its
resident memory from /proc while 60 such uploads hang on it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
UPLOADS = 60
DECLARED = 8 * 1024 * 1024  # the node's default max_envelope_bytes: a size it must accept
CHUNK = 64 * 1024
MAX_GROWTH_KB = 50 * 1024


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc status")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def node_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = _free_port()
    env = {**os.environ, "MNEMONET_CLUSTER_KEY": "rss-test-key",
           # Hold every read as long as the test looks: the worst case for memory, not the timeout's work.
           "MNEMONET_PEER_READ_TIMEOUT": "120",
           # No model loading in the background while RSS is measured (the offline pipeline is ~60 MB).
           "MNEMONET_WARM_UP": "false"}
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "run_node.py"), "--capabilities", "llm", "--port", str(port),
         "--data-dir", str(tmp_path), "--log-level", "ERROR"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


async def _wait_healthy(proc: subprocess.Popen[bytes], url: str) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"node exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            try:
                if (await http.get(f"{url}/health", timeout=2.0)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "node did not answer /health within 60s"
            await asyncio.sleep(0.2)


async def _unfinished_upload(port: int, path: str) -> tuple[asyncio.StreamWriter, int]:
    """Send all but the last byte of a declared 8 MiB body; stop early if the node stops reading."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST {path} HTTP/1.1\r\nhost: node\r\ncontent-type: application/octet-stream\r\n"
                 f"content-length: {DECLARED}\r\n\r\n".encode())
    sent = 0
    chunk = b"0" * CHUNK
    while sent < DECLARED - 1:
        piece = chunk[: DECLARED - 1 - sent]
        writer.write(piece)
        try:
            await asyncio.wait_for(writer.drain(), 5.0)  # a node that stopped reading: the upload stalls here
        except (TimeoutError, ConnectionError):
            break
        sent += len(piece)
    return writer, sent


async def test_sixty_unfinished_8mib_uploads_grow_a_node_by_less_than_50mb(
        node_process: tuple[subprocess.Popen[bytes], str]) -> None:
    proc, url = node_process
    await _wait_healthy(proc, url)
    port = int(url.rsplit(":", 1)[1])
    async with httpx.AsyncClient(trust_env=False) as http:  # warm the peer endpoint's code path
        assert (await http.post(f"{url}/v1/peer", content=b"x" * 100)).status_code == 400
    before = _rss_kb(proc.pid)
    paths = ["/v1/peer", "/v1/join"]
    uploads = await asyncio.gather(*(_unfinished_upload(port, paths[i % 2]) for i in range(UPLOADS)))
    during = _rss_kb(proc.pid)
    sent = sum(n for _, n in uploads)
    try:
        async with httpx.AsyncClient(trust_env=False) as http:  # the node serves on meanwhile
            assert (await http.get(f"{url}/health", timeout=10.0)).status_code == 200
    finally:
        for writer, _ in uploads:
            writer.close()
    growth = during - before
    print(f"\n{UPLOADS} unfinished uploads, {sent / 2**20:.0f} MiB sent: RSS {before // 1024} -> "
          f"{during // 1024} MB (+{growth // 1024} MB)")
    assert growth < MAX_GROWTH_KB, f"resident memory grew by {growth // 1024} MB"
