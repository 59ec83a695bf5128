"""DDL of the vector store: tables, indexes and the one-model-per-index record.

The ``embedding`` column starts untyped (``vector``) and gets its dimension
when the index is first configured (first upsert, or ``ensure_model``): the
HNSW index needs a fixed dimension, and the store does not know it before
it sees the first vector. Every DDL step runs under one advisory lock, so
nodes opening the same database at once do not race.
"""

from __future__ import annotations

import asyncpg

from mnemonet.settings import Settings

# Any constant works; it only has to be the same for every mnemonet process.
_DDL_LOCK_KEY = 0x6D6E656D6F  # "mnemo"


async def lock_ddl(conn: asyncpg.Connection) -> None:
    """Serialise DDL across processes for the rest of the current transaction."""
    await conn.execute("SELECT pg_advisory_xact_lock($1)", _DDL_LOCK_KEY)


async def create_base(conn: asyncpg.Connection, q: str) -> None:
    """Create the extension, schema ``q`` (already quoted), tables and non-vector indexes; idempotent."""
    async with conn.transaction():
        await lock_ddl(conn)
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {q}.embedding_meta (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    model text NOT NULL,
                    dimension integer NOT NULL CHECK (dimension > 0))"""
        )
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {q}.embeddings (
                    id text PRIMARY KEY,
                    kind text NOT NULL,
                    text text NOT NULL,
                    model text NOT NULL,
                    embedding vector NOT NULL,
                    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
                    created_at bigint NOT NULL,
                    metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb)"""
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS embeddings_tsv_idx ON {q}.embeddings USING gin (tsv)")
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS embeddings_kind_created_idx ON {q}.embeddings (kind, created_at)"
        )


async def read_meta(conn: asyncpg.Connection, q: str) -> tuple[str, int] | None:
    """The index's (model, dimension), or None before the first vector."""
    row = await conn.fetchrow(f"SELECT model, dimension FROM {q}.embedding_meta")
    return (row["model"], row["dimension"]) if row else None


async def set_dimension(conn: asyncpg.Connection, q: str, model: str, dimension: int, settings: Settings) -> None:
    """Record (model, dimension), type the column and build the HNSW index; call inside a transaction.

    The column is retyped through the untyped ``vector`` so existing rows
    (re-embedded ones) are checked against the new dimension by PostgreSQL.
    """
    await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
    await conn.execute(f"ALTER TABLE {q}.embeddings ALTER COLUMN embedding TYPE vector({int(dimension)})")
    await conn.execute(
        f"""INSERT INTO {q}.embedding_meta (singleton, model, dimension) VALUES (true, $1, $2)
            ON CONFLICT (singleton) DO UPDATE SET model = EXCLUDED.model, dimension = EXCLUDED.dimension""",
        model,
        dimension,
    )
    await build_hnsw(conn, q, settings)


async def build_hnsw(conn: asyncpg.Connection, q: str, settings: Settings) -> None:
    """Build the HNSW cosine index (after bulk loads: inserting into a built index is ~150x slower than COPY)."""
    # WITH options cannot be bound parameters; they are validated integers from settings.
    m, efc = int(settings.hnsw_m), int(settings.hnsw_ef_construction)
    await conn.execute(
        f"CREATE INDEX IF NOT EXISTS embeddings_hnsw_idx ON {q}.embeddings "
        f"USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {efc})"
    )


async def reset(conn: asyncpg.Connection, q: str) -> None:
    """Empty the table and forget its model, so the next vector configures it afresh; call inside a transaction."""
    await conn.execute(f"TRUNCATE {q}.embeddings")
    await conn.execute(f"DELETE FROM {q}.embedding_meta")
    await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
    await conn.execute(f"ALTER TABLE {q}.embeddings ALTER COLUMN embedding TYPE vector")
