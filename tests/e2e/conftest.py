"""Multi-node scenarios reuse the network test helpers of ``tests/p2p/netsupport.py``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import NodeFactory, node_factory

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.p2p.memory_network import MemoryNetwork
from mnemonet.p2p.network import SOCKETS
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


@pytest.fixture
async def make_node(request: pytest.FixtureRequest) -> AsyncIterator[NodeFactory]:
    """Start nodes on free local ports; each still running is killed after the test.

    A module that sets ``NETWORK = "memory"`` runs its nodes on one ``MemoryNetwork`` per test instead:
    for tests of routing, RPC and events, where the network is not the point.
    """
    network = MemoryNetwork() if getattr(request.module, "NETWORK", "sockets") == "memory" else SOCKETS
    async with node_factory(network) as make:
        yield make


@pytest.fixture
async def store_service(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str
) -> AsyncIterator[MemoryService]:
    """The store node's MemoryService (offline model), in this test's own graph and vector schema.

    A test module may set ``STORE_SETTINGS`` (a dict) to change the service's settings.
    """
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url, **getattr(request.module, "STORE_SETTINGS", {}))
    service = await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                         vector_schema=unique_name)
    yield service
    await service.close()
