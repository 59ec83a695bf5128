"""Graph store fixtures: a GraphStore per test, on embedded FalkorDB and, when configured, on real Neo4j.

Set ``MNEMONET_TEST_NEO4J_URI`` (and ``MNEMONET_TEST_NEO4J_USER``,
``MNEMONET_TEST_NEO4J_PASSWORD``, optionally ``MNEMONET_TEST_NEO4J_DATABASE``)
to run every contract test against Neo4j too. Neo4j Community has one
database, so each Neo4j test starts by clearing it: never point this at a
database whose data you want to keep.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from mnemonet.settings import Settings
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore

NEO4J_URI = os.environ.get("MNEMONET_TEST_NEO4J_URI", "")

BACKENDS = [
    "falkordb",
    pytest.param(
        "neo4j",
        marks=[pytest.mark.neo4j, pytest.mark.skipif(not NEO4J_URI, reason="MNEMONET_TEST_NEO4J_URI is not set")],
    ),
]


@pytest.fixture(params=BACKENDS)
async def graph_store(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, unique_name: str
) -> AsyncIterator[GraphStore]:
    """An empty, indexed GraphStore of its own."""
    if request.param == "neo4j":
        from mnemonet.store.dialects.neo4j import Neo4jDriver

        driver = Neo4jDriver(
            NEO4J_URI,
            os.environ.get("MNEMONET_TEST_NEO4J_USER", "neo4j"),
            os.environ.get("MNEMONET_TEST_NEO4J_PASSWORD", ""),
            os.environ.get("MNEMONET_TEST_NEO4J_DATABASE", "neo4j"),
        )
        store = GraphStore(driver, Settings())
        await store.clear()
    else:
        store = GraphStore(FalkorDriver(falkordb_server.host, falkordb_server.port, unique_name), Settings())
    await store.ensure_indexes()
    yield store
    if request.param == "neo4j":
        await store.clear()
    await store.close()
