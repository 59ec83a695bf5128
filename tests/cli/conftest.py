"""A running store node (real MemoryService on the session's embedded databases) for CLI tests."""

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
from mnemonet.service import build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


@pytest.fixture
async def store_node(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str) -> AsyncIterator[PeerNode]:
    """A store+llm+embed node on a free port, its memory in this test's own graph and schema."""
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url)
    llm, embedder = make_language_model(settings), make_embedder(settings)
    service = await build_memory_service(settings, llm, embedder, vector_schema=unique_name)
    try:
        async with node_factory() as make:
            yield await make({"store", "llm", "embed"}, providers={"store": service, "llm": llm, "embed": embedder},
                             node_id="store")
    finally:
        await service.close()
