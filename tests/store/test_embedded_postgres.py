"""The embedded PostgreSQL server: its memory setting is applied on start, and it restarts in one process."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from mnemonet.store.embedded_postgres import EmbeddedPostgres


async def _start_and_read_shared_buffers(data_dir: Path, size: str) -> str:
    """Start a server on ``data_dir`` asking for ``size``, read what it runs with, stop it."""
    server = EmbeddedPostgres(data_dir, shared_buffers=size)
    url = await server.start()
    try:
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetchval("SHOW shared_buffers")
        finally:
            await conn.close()
    finally:
        await server.stop()


async def test_shared_buffers_applied_on_start_and_kept_across_restarts(test_data_dir: Path, unique_name: str) -> None:
    data_dir = test_data_dir / unique_name
    # initdb leaves 128MB: the first start changes it and restarts.
    assert await _start_and_read_shared_buffers(data_dir, "160MB") == "160MB"
    # The same data directory again in this process, with another size.
    assert await _start_and_read_shared_buffers(data_dir, "192MB") == "192MB"


@pytest.mark.parametrize("size", ["512", "512MB'; DROP TABLE x; --", "0MB", "512MB\n", "1TB"])
def test_bad_shared_buffers_refused(tmp_path: Path, size: str) -> None:
    with pytest.raises(ValueError, match="shared_buffers"):
        EmbeddedPostgres(tmp_path / "pg", shared_buffers=size)
