"""Embedded server processes: tie a child to its parent's life, find and stop servers left in a directory.

``die_with_parent`` asks Linux to send the child SIGTERM when its parent
goes (``PR_SET_PDEATHSIG``), so ``kill -9`` of a node stops its FalkorDB
gracefully (a Redis SIGTERM is a SHUTDOWN) instead of leaving it running.
The signal follows the *thread* that forked, not the process: servers are
started on the event loop's thread, which lives as long as the node; never
start one from a thread-pool thread (``asyncio.to_thread``), whose exit
would stop the server.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get ``sig`` when this thread exits; None where Linux is not."""
    if _libc is None:
        return None
    prctl = _libc.prctl  # looked up before the fork: the child only calls it
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would signal us
            os._exit(1)

    return preexec


def processes_in(directory: Path, executable: str | None = None) -> list[int]:
    """Pids of the live servers whose working directory is ``directory`` (and whose binary is ``executable``).

    Servers ``chdir`` into their data directory, so this finds them whatever
    their process title says. A server's own forks (a FalkorDB append-only
    rewrite, PostgreSQL's backends) share its directory and are left out, as
    are zombies (exited, not yet reaped).
    """
    target = str(Path(directory).resolve())
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != target:
                continue
            if executable is not None and os.readlink(entry / "exe") != executable:
                continue
            # State and parent from one read: a fork that exits meanwhile must not pass for a server.
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile, or not ours to look at
            continue
        if fields[0] not in ("Z", "X"):
            parents[int(entry.name)] = int(fields[1])
    # A fork's parent is a server in the directory, or one exiting (a zombie whose directory is gone already).
    return [pid for pid, parent in parents.items() if parent not in parents and _state(parent) not in ("Z", "X")]


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0]


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has stopped running)."""
    return _state(pid) not in ("Z", "X", None)


def stop_process(pid: int, timeout: float) -> bool:
    """SIGTERM ``pid`` and wait up to ``timeout`` s for it to exit, then SIGKILL it; True if it exited on SIGTERM."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    if _wait_gone(pid, timeout):
        return True
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    _wait_gone(pid, timeout)
    return False


def _wait_gone(pid: int, timeout: float) -> bool:
    # Not our child: no waitpid, so poll /proc (the process is ours only by its directory).
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
