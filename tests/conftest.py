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

# `make test` runs the suite in parallel workers (pytest-xdist, `-n`): each gets its share of the cores
# for the embedder's OpenMP team, which libgomp reads once, when the engine loads (after this import).
# A team per worker of as many threads as the machine has cores oversubscribes it, and libgomp then
# stops spinning between a forward pass's steps: one text's embedding took 180 ms instead of 60 on
# these two loaded cores. Node processes the tests start inherit it.
if workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))

# Collected first, so the parallel workers (`--dist loadscope --no-loadscope-reorder`: a module at a
# time, in this order) start the long modules early and fill the end with short ones, instead of
# finishing on one long module while the other worker is idle: the Cypher linter (npm install and
# Neo4j's front-end on a fresh clone: the longest module, 26 s idle), the multi-node scenario folders,
# and the wheel test (pip builds and installs it).
LONG_FIRST = ("store/test_graph_cypher_lint.py", "faults/", "e2e/", "scenarios/", "test_wheel.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the long modules first; the order within each group stays as collected."""
    tests = REPO / "tests"

    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))

    items.sort(key=rank)


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
