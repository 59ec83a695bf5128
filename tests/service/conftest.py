"""A MemoryService per test on the session's embedded servers, with the offline language model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


@pytest.fixture(scope="session")
def embedder():
    """One offline embedding model for the session (it is stateless)."""
    return make_embedder(Settings())


@pytest.fixture
def service_settings(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str) -> Settings:
    return Settings(
        llm="offline", graph_backend="falkordb", falkordb_port=falkordb_server.port,
        graph_name=unique_name, database_url=postgres_url,
    )


@pytest.fixture
async def service(service_settings: Settings, embedder, unique_name: str) -> AsyncIterator[MemoryService]:
    svc = await build_memory_service(
        service_settings, make_language_model(service_settings), embedder, vector_schema=unique_name
    )
    yield svc
    await svc.close()


@pytest.fixture
async def spaced(service: MemoryService) -> SpacedMemory:
    """The test's store with two spaces, ``alpha`` and ``beta``, made by an admin ``ops``."""
    memory = SpacedMemory(service)
    await memory.create_space("alpha", by="ops")
    await memory.create_space("beta", by="ops")
    return memory

