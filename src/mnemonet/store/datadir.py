"""The data directory's lock: one node (one process) at a time starts embedded servers in a data directory.

An exclusive ``fcntl.flock`` on ``<data_dir>/mnemonet.lock``, taken before
any embedded server starts and held while they run. The kernel drops it
when the holder dies, however it dies, so a free lock also says "whoever
started the servers found here is gone": their servers are orphans to
reuse or stop, never a live node's to share. The holder's pid is written
into the file so the refusal can name it.

Two nodes in one process (``run_node.py demo``, tests) each open the file
themselves, and flock refuses the second open file description, so they are
refused too; stores opened inside a process that holds the lock share it
(``hold``), and it is let go when its last holder releases it.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from mnemonet.settings import Settings

LOCK_FILE = "mnemonet.lock"

# Data directories this process holds, so stores opened inside a node share the node's lock.
_held: dict[Path, DataDirLock] = {}


class DataDirInUse(RuntimeError):
    """Another node holds the data directory's lock."""

    def __init__(self, directory: Path, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"data directory {directory} is in use by {holder} (another mnemonet node); "
            "stop that node or pass a different --data-dir"
        )
        self.directory = directory
        self.pid = pid


def uses_embedded_servers(settings: Settings) -> bool:
    """True if a store built from ``settings`` starts embedded FalkorDB or PostgreSQL in ``data_dir``."""
    external_graph = settings.graph_backend == "neo4j" or (settings.falkordb_port != 0 and bool(settings.falkordb_host))
    return not external_graph or not settings.database_url


class DataDirLock:
    """The exclusive lock on one data directory; ``acquire`` raises ``DataDirInUse`` at once if it is taken."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory).resolve()
        self.path = self.directory / LOCK_FILE
        self._fd: int | None = None
        self._shares = 0  # holders besides the one that acquired it (``hold``)

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (creating the directory) and record this process's pid in it."""
        if self._fd is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise DataDirInUse(self.directory, holder_pid(self.directory)) from None
        # Children (the servers) must not inherit the lock: O_CLOEXEC keeps it this process's alone.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        _held[self.directory] = self

    def release(self) -> None:
        """Let go of one hold; the last one gives the lock up (the pid stays; only the flock says who holds it)."""
        if self._shares > 0:
            self._shares -= 1
            return
        if self._fd is None:
            return
        if _held.get(self.directory) is self:
            del _held[self.directory]
        fd, self._fd = self._fd, None
        os.close(fd)  # closing the only descriptor drops the flock


def holder_pid(directory: Path) -> int | None:
    """The pid recorded in ``directory``'s lock file, if one is there."""
    try:
        text = (Path(directory) / LOCK_FILE).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def held_here(directory: Path) -> bool:
    """True if this process holds ``directory``'s lock."""
    return Path(directory).resolve() in _held


def hold(directory: Path) -> DataDirLock:
    """``directory``'s lock for one more user in this process (taken now if nobody here holds it); ``release`` it."""
    lock = _held.get(Path(directory).resolve())
    if lock is not None:
        lock._shares += 1
        return lock
    lock = DataDirLock(directory)
    lock.acquire()
    return lock
