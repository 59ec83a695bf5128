"""Re-embed every stored text with another embedder: how an index switches model or dimension.

Texts (each with its context, ``contextual_vector``) are embedded batch by
batch into an unlogged staging table (so a large index is never held in
memory), then one short transaction swaps the vectors in, retypes the column
and builds the HNSW index after the bulk load (building once is far faster
than inserting into a built index). Rows written while the embedding ran are
picked up inside that transaction; keyword-only rows stay without a vector.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import asyncpg
from pgvector import Vector

from mnemonet.embed.base import Embedder
from mnemonet.model.errors import Busy
from mnemonet.store import vector_schema
from mnemonet.store.vector_types import DimensionMismatch, as_vector, contextual_vector, quote_schema
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)

_STAGING = "embeddings_reembed"


class ReembedBusy(Busy, RuntimeError):
    """Another re-embed of the same schema is running."""


async def reembed(
    store: VectorStore, embedder: Embedder, progress: Callable[[int, int], None] | None = None
) -> int:
    """Switch ``store`` to ``embedder``'s model and dimension; return how many rows were re-embedded.

    ``progress(done, total)`` is called after each batch.
    """
    model, dim = embedder.model, embedder.dimension
    if not isinstance(model, str) or not model.strip():
        raise ValueError("embedder.model: must be a non-empty string")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= 16000:
        raise ValueError("embedder.dimension: expected an integer from 1 to 16000")
    q = quote_schema(store.schema)
    batch = store.settings.vector_batch_size
    async with store.acquire() as conn:
        if not await conn.fetchval("SELECT pg_try_advisory_lock(hashtext($1))", f"reembed:{store.schema}"):
            raise ReembedBusy(f"another re-embed of schema {store.schema!r} is running")
        try:
            await conn.execute(f"DROP TABLE IF EXISTS {q}.{_STAGING}")
            await conn.execute(f"CREATE UNLOGGED TABLE {q}.{_STAGING} (id text PRIMARY KEY, embedding vector({dim}) "
                "NOT NULL)")
            total = await store.count()
            done, last_id = 0, ""
            while True:
                rows = await conn.fetch(
                    f"""SELECT id, text, context FROM {q}.embeddings
                        WHERE id > $1 AND embedding IS NOT NULL ORDER BY id LIMIT $2""",
                    last_id,
                    batch,
                )
                if not rows:
                    break
                await _embed_into_staging(conn, store.schema, embedder, rows)
                done += len(rows)
                last_id = rows[-1]["id"]
                if progress is not None:
                    progress(done, max(total, done))
            done += await _swap(conn, store, embedder, q)
        finally:
            try:
                await conn.execute(f"DROP TABLE IF EXISTS {q}.{_STAGING}")
                await conn.execute("SELECT pg_advisory_unlock(hashtext($1))", f"reembed:{store.schema}")
            except BaseException:
                # The pool does not reset sessions (VectorStore.open): closing this one frees the lock.
                conn.terminate()
                raise
    store.record_model(model, dim)
    log.info("vectors.reembed schema=%s model=%s dimension=%d rows=%d", store.schema, model, dim, done)
    return done


async def _swap(conn: asyncpg.Connection, store: VectorStore, embedder: Embedder, q: str) -> int:
    """Move the staged vectors in and rebuild the index in one transaction; return late rows embedded."""
    async with conn.transaction():
        await vector_schema.lock_ddl(conn)
        # Writers wait from here on; readers keep the old index until commit.
        await conn.execute(f"LOCK TABLE {q}.embeddings IN SHARE ROW EXCLUSIVE MODE")
        late = await conn.fetch(
            f"""SELECT e.id, e.text, e.context FROM {q}.embeddings e
                WHERE e.embedding IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {q}.{_STAGING} r WHERE r.id = e.id)"""
        )
        if late:
            await _embed_into_staging(conn, store.schema, embedder, late)
        await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
        # Untyped first, so old and new dimensions may coexist until every row is replaced.
        await conn.execute(f"ALTER TABLE {q}.embeddings ALTER COLUMN embedding TYPE vector")
        await conn.execute(
            f"UPDATE {q}.embeddings e SET embedding = r.embedding, model = $1 FROM {q}.{_STAGING} r WHERE r.id = e.id",
            embedder.model,
        )
        await vector_schema.set_dimension(conn, q, embedder.model, embedder.dimension, store.settings)
    return len(late)


async def _embed_into_staging(
    conn: asyncpg.Connection, schema: str, embedder: Embedder, rows: Sequence[asyncpg.Record]
) -> None:
    contexts = sorted({r["context"] for r in rows if r["context"]})
    texts = [r["text"] for r in rows] + contexts
    vectors = await embedder.embed(texts, "passage")
    if len(vectors) != len(texts):
        raise DimensionMismatch(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
    context_vectors = dict(zip(contexts, vectors[len(rows):], strict=True))
    records = []
    for row, own in zip(rows, vectors[: len(rows)], strict=True):
        context = row["context"]
        vector = contextual_vector(own, context_vectors.get(context), len(row["text"]), len(context))
        vec = as_vector(vector, f"embedding of {row['id']!r}")
        if len(vec) != embedder.dimension:
            raise DimensionMismatch(
                f"embedder {embedder.model!r} claims dimension {embedder.dimension} but returned {len(vec)}"
            )
        records.append((row["id"], Vector(vec)))
    # COPY is ~150x faster than row inserts (measured: 53k rows/s).
    await conn.copy_records_to_table(_STAGING, schema_name=schema, records=records, columns=["id", "embedding"])
