"""A real MemoryService per test (embedded FalkorDB + PostgreSQL, offline model), and worker settings."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


@pytest.fixture(scope="session")
def agents_embedder():
    """One offline embedding model for the session (it is stateless)."""
    return make_embedder(Settings())


@pytest.fixture
def agent_settings(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str) -> Settings:
    return Settings(
        llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name, database_url=postgres_url,
        worker_poll_interval=0.2, worker_event_debounce=0.0,
    )


@pytest.fixture
async def service(agent_settings: Settings, agents_embedder, unique_name: str) -> AsyncIterator[MemoryService]:
    svc = await build_memory_service(
        agent_settings, make_language_model(agent_settings), agents_embedder, vector_schema=unique_name)
    yield svc
    await svc.close()
