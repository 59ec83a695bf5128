"""Compaction after an erasure (``store/vector_erase.py``) on the session's embedded PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from mnemonet.settings import Settings
from mnemonet.store import vector_erase
from mnemonet.store.vectors import VectorStore


@pytest.fixture
async def plain_role_url(postgres_url: str, unique_name: str) -> AsyncIterator[str]:
    """The database URL of a role that is not a superuser but may create its own schema."""
    conn = await asyncpg.connect(postgres_url)
    try:
        database = await conn.fetchval("SELECT current_database()")
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # a superuser's, as an operator would
        await conn.execute(f'CREATE ROLE "{unique_name}" LOGIN')
        await conn.execute(f'GRANT CREATE ON DATABASE "{database}" TO "{unique_name}"')
        parts = urlsplit(postgres_url)
        yield urlunsplit(parts._replace(netloc=f"{unique_name}@{parts.netloc.rpartition('@')[2]}"))
        await conn.execute(f'DROP SCHEMA IF EXISTS "{unique_name}" CASCADE')
        await conn.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM "{unique_name}"')
        await conn.execute(f'DROP ROLE "{unique_name}"')
    finally:
        await conn.close()


async def test_a_role_that_is_not_a_superuser_compacts_the_tables_and_vouches_for_no_more(
    plain_role_url: str, unique_name: str,
) -> None:
    store = await VectorStore.open(Settings(database_url=plain_role_url), schema=unique_name)
    try:
        # Its own tables are rewritten; the statistics catalog and the checkpoint are a superuser's.
        assert await vector_erase.compact(store) is False
        assert await vector_erase.flush_log(store) is False
    finally:
        await store.close()
