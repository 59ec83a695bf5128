"""Acknowledged writes survive a restart of the embedded server: graceful stop and kill -9."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """Under the repository's .data/, like every embedded server's data."""
    path = REPO / ".data" / "test" / f"durability-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _record(i: int) -> ObservationRecord:
    return ObservationRecord(
        id=f"o{i}", text=f"observation {i}", source=SourceSpec(name="alice"),
        statements=(StatementSpec(id=f"s{i}", subject="user", predicate="visited", object=f"city {i}"),),
    )


@pytest.mark.parametrize("crash", [False, True], ids=["graceful", "kill-9"])
@pytest.mark.parametrize("grouped", [False, True], ids=["one-by-one", "group-commit"])
async def test_writes_survive_restart(data_dir: Path, crash: bool, grouped: bool) -> None:
    """Group commit keeps the promise: every write it acknowledged was fsynced in its group first."""
    # Grouped: the five writes go as one group once all are queued (the wait only bounds it, it is never
    # waited out). One by one: the default settings, where a lone write waits for no company (with the
    # grouped settings each of the five sequential writes waited its 30 s out: 180 s a test).
    settings = Settings(data_dir=data_dir, graph_name="durable")
    if grouped:
        settings = settings.model_copy(update={"graph_group_commit_max": 5, "graph_group_commit_wait": 30.0})
    store = await GraphStore.open(settings)
    try:
        await store.ensure_indexes()
        if grouped:
            written = await asyncio.gather(*(store.write_observation(_record(i)) for i in range(5)))
            assert store.write_groups.groups == 1
            assert all(r.created for r in written)
        else:
            for i in range(5):
                assert (await store.write_observation(_record(i))).created
        before = await store.counts()
        assert store.server is not None
        if crash:
            store.server.kill()  # SIGKILL right after the last acknowledged write
    finally:
        await store.close()
    # Reopened with the defaults: its one retried write must not wait out the grouped settings' 30 s.
    reopened = await GraphStore.open(Settings(data_dir=data_dir, graph_name="durable"))
    try:
        assert await reopened.counts() == before
        assert [s.object for s in await reopened.statements_from_observation("o4")] == ["city 4"]
        assert not (await reopened.write_observation(_record(4))).created
    finally:
        await reopened.close()


async def test_compacted_log_restores_the_graph(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, graph_name="durable")
    store = await GraphStore.open(settings)
    try:
        await store.ensure_indexes()
        for i in range(5):
            await store.write_observation(_record(i))
        before = await store.counts()
        assert store.server is not None
        # Two at once: the second finds a rewrite in progress and waits for it.
        await asyncio.gather(store.server.compact(), store.server.compact())
        store.server.kill()
    finally:
        await store.close()
    reopened = await GraphStore.open(settings)
    try:
        assert await reopened.counts() == before
    finally:
        await reopened.close()
