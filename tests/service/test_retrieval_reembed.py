"""``run_node.py reembed`` switches a real index to the configured embedder, with progress."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from mnemonet.embed.base import Embedder
from mnemonet.settings import Settings
from mnemonet.store.vector_types import DimensionMismatch, VectorItem
from mnemonet.store.vectors import VectorStore

REPO = Path(__file__).resolve().parents[2]
TEXTS = {"a": "Ivy repairs vintage radios", "b": "the ferry to the island leaves at noon", "c": "Jun grows tomatoes"}


async def test_reembed_command_switches_the_index_model(
    postgres_url: str, unique_name: str, embedder: Embedder
) -> None:
    settings = Settings(database_url=postgres_url, vector_batch_size=2)
    store = await VectorStore.open(settings, schema=unique_name)
    try:
        old = [VectorItem(i, "observation", t, "old-model", [1.0] + [0.0] * 7, 1) for i, t in TEXTS.items()]
        await store.upsert(old)
        [query] = await embedder.embed(["who fixes old radios?"], kind="query")
        with pytest.raises(DimensionMismatch, match="run_node.py reembed"):
            await store.knn(query, 3, model=embedder.model)
    finally:
        await store.close()

    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "reembed", "--database-url", postgres_url,
        "--vector-schema", unique_name, "--vector-batch-size", "2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == f"re-embedding schema '{unique_name}': old-model (8-d) -> {embedder.model} (384-d)"
    assert "  2/3 rows" in lines and "  3/3 rows" in lines, "progress after each batch"
    assert lines[-1] == f"done: 3 rows re-embedded with {embedder.model}"

    store = await VectorStore.open(settings, schema=unique_name)
    try:
        assert (store.model, store.dimension) == (embedder.model, 384)
        hits = await store.knn(query, 3, model=embedder.model)
        assert [h.id for h in hits][0] == "a"
    finally:
        await store.close()


async def test_reembed_command_reports_a_bad_flag_clearly(postgres_url: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "reembed", "--database-url", postgres_url,
        "--vector-schema", "Not-A-Schema", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 1
    assert "reembed failed: schema: 'Not-A-Schema' must match" in err.decode()
