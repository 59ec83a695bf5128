"""A real store node (embedded FalkorDB and PostgreSQL, offline model) on a free port, for the adapters."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import node_factory

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.node.peer_node import PeerNode
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


@pytest.fixture
async def memory(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
                 ) -> AsyncIterator[SpacedMemory]:
    """The store's memory, in this test's own graph and vector schema."""
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url)
    service = await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                         vector_schema=unique_name)
    spaced = SpacedMemory(service)
    yield spaced
    await spaced.close()


@pytest.fixture
async def store_node(memory: SpacedMemory) -> AsyncIterator[PeerNode]:
    """A store+llm+embed node with a cluster key (clients need tokens: netsupport.client_token)."""
    async with node_factory() as make:
        yield await make({"store", "llm", "embed"}, providers={"store": memory}, node_id="store",
                         request_timeout=60.0)
