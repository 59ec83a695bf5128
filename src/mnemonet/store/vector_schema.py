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


async def create_extension(conn: asyncpg.Connection) -> None:
    """Create the pgvector extension alone (a database that holds only spaces placed on it); idempotent."""
    async with conn.transaction():
        await lock_ddl(conn)
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


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
                    embedding vector,
                    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
                    created_at bigint NOT NULL,
                    metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
                    context text NOT NULL DEFAULT '')"""
        )
        # Tables made before contextual embeddings lack the column; their rows had no context.
        await conn.execute(f"ALTER TABLE {q}.embeddings ADD COLUMN IF NOT EXISTS context text NOT NULL DEFAULT ''")
        # Keyword-only rows (statements an observation yields, concept names) have no vector; tables made
        # before them required one.
        await conn.execute(f"ALTER TABLE {q}.embeddings ALTER COLUMN embedding DROP NOT NULL")
        await conn.execute(f"CREATE INDEX IF NOT EXISTS embeddings_tsv_idx ON {q}.embeddings USING gin (tsv)")
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS embeddings_kind_created_idx ON {q}.embeddings (kind, created_at)"
        )
        await create_keyword_stats(conn, q)
        # How often and when each item was last returned by a search: written in batches, off the read path.
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {q}.usage (
                    id text PRIMARY KEY,
                    uses bigint NOT NULL,
                    last_used_at bigint NOT NULL)"""
        )


async def create_coordination(conn: asyncpg.Connection, q: str) -> None:
    """The tables store nodes sharing this database coordinate through (in the default space's schema ``q``).

    ``jobs``: the ledger of work done once across nodes (``store/jobs.py``). ``index_queue``: rows of
    acknowledged writes not indexed yet, each held by the node that will index it until its lease runs
    out (``store/index_queue.py``). Idempotent.
    """
    async with conn.transaction():
        await lock_ddl(conn)
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {q}.jobs (
                    key text PRIMARY KEY,
                    kind text NOT NULL,
                    starts integer NOT NULL,
                    completions integer NOT NULL,
                    holder text NOT NULL,
                    state text NOT NULL,
                    detail jsonb NOT NULL DEFAULT '{{}}'::jsonb,
                    started_at timestamptz NOT NULL,
                    finished_at timestamptz)"""
        )
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {q}.index_queue (
                    seq bigserial PRIMARY KEY,
                    space text NOT NULL,
                    id text NOT NULL,
                    kind text NOT NULL,
                    text text NOT NULL,
                    created_at bigint NOT NULL,
                    metadata jsonb NOT NULL,
                    vector boolean NOT NULL,
                    holder text NOT NULL,
                    held_until timestamptz NOT NULL,
                    UNIQUE (space, id))"""
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS index_queue_space_seq_idx ON {q}.index_queue (space, seq)")
        await conn.execute(f"CREATE INDEX IF NOT EXISTS index_queue_held_idx ON {q}.index_queue (held_until)")


async def create_keyword_stats(conn: asyncpg.Connection, q: str) -> None:
    """Document frequencies of lexemes, kept by a trigger on every insert: BM25's IDF and length norm.

    Counting at query time would scan the GIN posting list of every query
    lexeme, which for a word in half the rows costs as much as the search;
    a table read is one index lookup per lexeme. A statement-level trigger
    with a transition table counts every insert path once per statement
    (rows skipped by ON CONFLICT are not in it). It updates the totals row
    first: a writer holds that row until it commits before it touches any
    lexeme row, so writers whose batches share words queue instead of
    deadlocking (the cost: vector writes commit one at a time).
    An index created before these tables existed is counted once here, with
    inserts blocked meanwhile. Call inside a transaction holding the DDL lock.
    """
    await conn.execute(
        f"""CREATE TABLE IF NOT EXISTS {q}.keyword_lexemes (
                lexeme text PRIMARY KEY,
                docs bigint NOT NULL)"""
    )
    await conn.execute(
        f"""CREATE TABLE IF NOT EXISTS {q}.keyword_totals (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                docs bigint NOT NULL,
                lexemes bigint NOT NULL)"""
    )
    await conn.execute(
        f"""CREATE OR REPLACE FUNCTION {q}.count_keyword_lexemes() RETURNS trigger LANGUAGE plpgsql AS $body$
            BEGIN
                UPDATE {q}.keyword_totals SET
                    docs = docs + (SELECT count(*) FROM new_rows),
                    lexemes = lexemes + (SELECT coalesce(sum(length(tsv)), 0) FROM new_rows);
                INSERT INTO {q}.keyword_lexemes AS k (lexeme, docs)
                    SELECT l, count(*) FROM new_rows, unnest(tsvector_to_array(new_rows.tsv)) AS l GROUP BY l
                ON CONFLICT (lexeme) DO UPDATE SET docs = k.docs + EXCLUDED.docs;
                RETURN NULL;
            END $body$"""
    )
    counted = await conn.fetchval(f"SELECT count(*) FROM {q}.keyword_totals")
    if not counted:
        await conn.execute(f"LOCK TABLE {q}.embeddings IN SHARE MODE")
        await conn.execute(
            f"""INSERT INTO {q}.keyword_lexemes (lexeme, docs)
                SELECT l, count(*) FROM {q}.embeddings, unnest(tsvector_to_array(tsv)) AS l GROUP BY l"""
        )
        await conn.execute(
            f"""INSERT INTO {q}.keyword_totals (docs, lexemes)
                SELECT count(*), coalesce(sum(length(tsv)), 0) FROM {q}.embeddings"""
        )
    await conn.execute(
        f"""CREATE OR REPLACE TRIGGER embeddings_count_keyword_lexemes AFTER INSERT ON {q}.embeddings
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {q}.count_keyword_lexemes()"""
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
    await conn.execute(f"TRUNCATE {q}.embeddings, {q}.keyword_lexemes, {q}.usage")
    await conn.execute(f"UPDATE {q}.keyword_totals SET docs = 0, lexemes = 0")
    await conn.execute(f"DELETE FROM {q}.embedding_meta")
    await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
    await conn.execute(f"ALTER TABLE {q}.embeddings ALTER COLUMN embedding TYPE vector")
