"""Database connection pools sized from what the node admits (issue 31 row 18).

500 concurrent ``remember`` calls: 45-75 of those the node admitted failed with "graph unavailable ...
Too many connections": the FalkorDB client kept its library's pool of 100 connections (a command past
them fails at once) while the node admits ``max_concurrent_requests`` (256) requests at once. The graph
pool now holds one connection per admitted request, and a command finding them all busy waits for one;
the PostgreSQL pool stays small (``vector_pool_size``: a connection is a server process) and its
callers wait for a connection as they always did.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore
from mnemonet.store.vectors import VectorStore


@pytest.fixture
async def stores(falkordb_server: EmbeddedFalkorDB, postgres_url: str,
                 unique_name: str) -> AsyncIterator[tuple[GraphStore, VectorStore, GraphStore]]:
    """A graph store of a node admitting 160 requests, its vector store, and one of a node admitting 20."""
    admits = Settings(falkordb_port=falkordb_server.port, graph_name=unique_name, database_url=postgres_url,
                      max_concurrent_requests=160)
    graph = await GraphStore.open(admits)
    await graph.ensure_indexes()
    small = await GraphStore.open(admits.model_copy(update={"max_concurrent_requests": 20}))
    vectors = await VectorStore.open(admits, schema=unique_name)
    await vectors.ensure_model("test", 3)
    yield graph, vectors, small
    await asyncio.gather(graph.close(), small.close(), vectors.close())


async def test_every_admitted_request_gets_a_graph_connection_and_more_wait(
    stores: tuple[GraphStore, VectorStore, GraphStore]
) -> None:
    graph, vectors, small = stores
    # Started together, each read takes a connection before any reply frees one: as many connections at
    # once as reads (the library's pool refused the 101st with "Too many connections").
    admitted = await asyncio.gather(*(graph.recent_observations(5) for _ in range(160)), return_exceptions=True)
    assert [r for r in admitted if isinstance(r, BaseException)] == []
    # More reads than connections (20): the others wait for one and succeed.
    waited = await asyncio.gather(*(small.recent_observations(5) for _ in range(150)), return_exceptions=True)
    assert [r for r in waited if isinstance(r, BaseException)] == []
    # PostgreSQL: as many callers as the node admits share vector_pool_size connections, waiting their turn.
    counted = await asyncio.gather(*(vectors.count() for _ in range(160)), return_exceptions=True)
    assert [r for r in counted if isinstance(r, BaseException)] == []
