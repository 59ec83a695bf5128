"""Spaces placed on engine servers: a second FalkorDB and a second PostgreSQL database beside the default ones.

The placement map (``engine_servers``, ``space_placement``) is read when a space is created and its server is
recorded in the registry, so another store node opens the space there too; one that does not know the server
says so instead of opening an empty space on the default one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from mnemonet.llm import make_language_model
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.errors import DependencyUnavailable

TEXT = "Oskar Lindqvist keeps the east region's keys."


@pytest.fixture
async def east(test_data_dir: Path, postgres_url: str, unique_name: str) -> AsyncIterator[tuple[EmbeddedFalkorDB, str]]:
    """A second FalkorDB (with a password) and a second PostgreSQL database."""
    server = EmbeddedFalkorDB(test_data_dir / f"{unique_name}-east")
    await server.start()
    database = f"{unique_name}_east"
    conn = await asyncpg.connect(postgres_url)
    await conn.execute(f'CREATE DATABASE "{database}"')
    await conn.close()
    yield server, urlunsplit(urlsplit(postgres_url)._replace(path=f"/{database}"))
    await server.stop()
    conn = await asyncpg.connect(postgres_url)
    await conn.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
    await conn.close()


@pytest.fixture
def placed(service_settings: Settings, east: tuple[EmbeddedFalkorDB, str]) -> Settings:
    server, url = east
    return _with(service_settings, engine_servers={"east": {
        "falkordb": f"{server.host}:{server.port}", "falkordb_password": server.password, "database_url": url}},
        space_placement={"alpha": "east"})


def _with(settings: Settings, **changes: object) -> Settings:
    """``settings`` with ``changes``, validated (the maps become their types)."""
    return Settings(**{**{name: getattr(settings, name) for name in settings.model_fields_set}, **changes})


async def _store(settings: Settings, embedder: Any, schema: str) -> SpacedMemory:
    return SpacedMemory(await build_memory_service(settings, make_language_model(settings), embedder,
                                                   vector_schema=schema))


async def _graphs(host: str, port: int, password: str | None) -> list[str]:
    driver = FalkorDriver(host, port, "unused", password=password)
    try:
        return [g.decode() if isinstance(g, bytes) else g
                for g in await driver._client.execute_command("GRAPH.LIST")]
    finally:
        await driver.close()


async def test_a_space_created_on_a_named_server_lives_there_and_every_node_opens_it_there(
    placed: Settings, east: tuple[EmbeddedFalkorDB, str], falkordb_server: EmbeddedFalkorDB, embedder,
    unique_name: str,
) -> None:
    server, url = east
    first = await _store(placed, embedder, unique_name)
    second = await _store(placed, embedder, unique_name)  # another store node, the same settings
    try:
        alpha = await first.create_space("alpha", by="ops")
        beta = await first.create_space("beta", by="ops")
        assert (alpha.server, beta.server) == ("east", "")
        memory = await first.memory("alpha")
        written = await memory.observe(TEXT, source="ops")
        await memory.indexer.drained()  # indexed behind the write

        # The graph and the rows are on the east servers, not on the default ones.
        key = f"{unique_name}__alpha"
        assert key in await _graphs(server.host, server.port, server.password)
        assert key not in await _graphs(falkordb_server.host, falkordb_server.port, None)
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval(f'SELECT count(*) FROM "{key}".embeddings WHERE id = $1',
                                       written.observation_id) == 1
        finally:
            await conn.close()

        hits = await second.search("Who keeps the keys of the east region?", k=3, space="alpha")
        assert hits and hits[0].id == written.observation_id
        assert await second.search("Who keeps the keys of the east region?", k=3, space="beta") == []

        report = await second.forget(whole_space=True, space="alpha", by="ops")
        assert report.observations == 1 and report.graph_compacted
        assert key not in await _graphs(server.host, server.port, server.password)
    finally:
        await second.close()
        await first.close()


async def test_a_node_that_does_not_know_a_space_s_server_says_so(
    placed: Settings, embedder, unique_name: str,
) -> None:
    first = await _store(placed, embedder, unique_name)
    unaware = await _store(_with(placed, engine_servers={}, space_placement={}), embedder, unique_name)
    try:
        await first.create_space("alpha", by="ops")
        with pytest.raises(DependencyUnavailable, match="engine server 'east'"):
            await unaware.memory("alpha")
    finally:
        await unaware.close()
        await first.close()


def test_the_placement_map_names_only_known_servers() -> None:
    with pytest.raises(ValueError, match="no engine server named 'west'"):
        Settings(engine_servers={"east": {"falkordb": "10.0.0.7:6379"}}, space_placement={"alpha": "west"})
    with pytest.raises(ValueError, match="falkordb"):
        Settings(engine_servers={"east": {"falkordb": "no port here"}})
