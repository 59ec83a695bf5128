"""A real memory network for dashboard and MCP tests: a store node on a real MemoryService plus peers.

The service runs on the session's embedded FalkorDB and PostgreSQL with the
offline language model, in its own graph and schema; nodes are real
``PeerNode``s on free local ports with the fast timers of ``tests/p2p/netsupport.py``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import CLUSTER_KEY, NodeFactory, client_token, node_factory

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.model.api import MemoryAPI
from mnemonet.model.views import StatementView
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

__all__ = ["CLUSTER_KEY", "READ_TOKEN", "NodeFactory", "make_node", "service", "write_meeting_scenario"]

# What the dashboard holds: a client token with the read scope (never the cluster key).
READ_TOKEN = client_token("read", name="viewer")


@functools.cache
def _embedder():
    return make_embedder(Settings())  # stateless: one offline model for the whole run


@pytest.fixture
async def service(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str
) -> AsyncIterator[MemoryService]:
    """A MemoryService in its own graph and schema."""
    settings = Settings(llm="offline", graph_backend="falkordb", falkordb_port=falkordb_server.port,
                        graph_name=unique_name, database_url=postgres_url)
    svc = await build_memory_service(settings, make_language_model(settings), _embedder(), vector_schema=unique_name)
    yield svc
    await svc.close()


@pytest.fixture
async def make_node() -> AsyncIterator[NodeFactory]:
    """Start nodes on free local ports; each still running is killed after the test."""
    async with node_factory() as make:
        yield make


async def write_meeting_scenario(memory: MemoryAPI) -> tuple[StatementView, StatementView]:
    """The meeting scenario plus the contradiction claim; returns (morning, afternoon) preferences."""
    first = await memory.observe("I prefer morning meetings", source="user")
    second = await memory.observe("actually I hate mornings, afternoon is better", source="user")
    morning = first.statements[0]
    afternoon = next(s for s in second.statements if s.predicate == "prefers")
    claim = await memory.claim(f"{afternoon.sentence()} contradicts {morning.sentence()}", source="validator")
    assert set(claim.contradicts) == {morning.id, afternoon.id}
    return morning, afternoon
