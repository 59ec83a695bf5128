"""The embedded PostgreSQL server: its memory setting is applied on start, and it restarts in one process."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from mnemonet.store.embedded_postgres import EmbeddedPostgres


async def _shared_buffers(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval("SHOW shared_buffers")
    finally:
        await conn.close()


async def test_shared_buffers_applied_on_start_and_kept_across_restarts(test_data_dir: Path, unique_name: str) -> None:
    data_dir = test_data_dir / unique_name
    server = EmbeddedPostgres(data_dir, shared_buffers="160MB")
    url = await server.start()
    try:
        # initdb leaves 128MB: the first start changes it and restarts.
        assert await _shared_buffers(url) == "160MB"
    finally:
        await server.stop()
    # The same data directory again in this process, with another size.
    again = EmbeddedPostgres(data_dir, shared_buffers="192MB")
    url = await again.start()
    try:
        assert await _shared_buffers(url) == "192MB"
    finally:
        await again.stop()


@pytest.mark.parametrize("size", ["512", "512MB'; DROP TABLE x; --", "0MB", "512MB\n", "1TB"])
def test_bad_shared_buffers_refused(tmp_path: Path, size: str) -> None:
    with pytest.raises(ValueError, match="shared_buffers"):
        EmbeddedPostgres(tmp_path / "pg", shared_buffers=size)
