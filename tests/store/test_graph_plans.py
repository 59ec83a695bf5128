"""The engine's plan for reads by a list of ids: index lookups, never a scan of every node.

At a million statements a scan of every node costs ~0.25 s a call (``bench/scale.py``); the plan says so
at any size, so FalkorDB's ``GRAPH.EXPLAIN`` on an empty, indexed graph is enough to check it.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from mnemonet.settings import Settings
from mnemonet.store import graph_cypher as q
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore

# Every read whose only parameter is the list of ids.
BY_IDS = sorted(name for name, text in vars(q).items()
                if isinstance(text, str) and set(re.findall(r"\$(\w+)", text)) == {"ids"})


@pytest.mark.parametrize("name", BY_IDS)
async def test_a_read_by_ids_looks_each_id_up_in_an_index(
    name: str, falkordb_server: EmbeddedFalkorDB, unique_name: str
) -> None:
    driver = FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name)
    store = GraphStore(driver, Settings())
    try:
        await store.ensure_indexes()
        text = f"CYPHER ids=['st-1'] {getattr(q, name)}"
        # FalkorDB builds an index after CREATE INDEX has answered: until it is built the planner scans, so the
        # plan is read until it uses an index (a busy machine may take a moment), failing if it never does.
        deadline = asyncio.get_running_loop().time() + 15.0
        while True:
            plan = await driver._client.execute_command("GRAPH.EXPLAIN", unique_name, text)
            steps = [s.decode() if isinstance(s, bytes) else str(s) for s in plan]
            if any("Node By Index Scan" in s for s in steps) or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)
        assert any("Node By Index Scan" in s for s in steps), steps
        assert not any("All Node Scan" in s for s in steps), steps
    finally:
        await store.close()
