"""Session-wide embedded servers: one FalkorDB and one PostgreSQL for the whole run.

Each test works in its own graph (FalkorDB key) or schema (PostgreSQL), so
tests never see each other's data.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.embedded_postgres import EmbeddedPostgres

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def test_data_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Under the repository, not /root: embedded PostgreSQL opens read access on every parent.

    Removed after a run with no failure (the servers using it stop first), so
    runs do not pile up; kept after a failure, for the servers' and nodes' logs.
    """
    path = REPO / ".data" / "test" / f"run-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    yield path
    if not request.session.testsfailed:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
async def falkordb_server(test_data_dir: Path) -> AsyncIterator[EmbeddedFalkorDB]:
    # No password on the session's shared server: tests reach it by port (falkordb_port=...) from many files.
    # The password a node's own embedded server requires is tested in tests/store/test_embedded_security.py.
    server = EmbeddedFalkorDB(test_data_dir / "falkordb", password=False)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="session")
async def postgres_url(test_data_dir: Path) -> AsyncIterator[str]:
    server = EmbeddedPostgres(test_data_dir / "postgres")
    url = await server.start()
    yield url
    await server.stop()


@pytest.fixture
def unique_name() -> str:
    """A fresh graph key / schema name for one test."""
    return f"t_{uuid.uuid4().hex[:12]}"
