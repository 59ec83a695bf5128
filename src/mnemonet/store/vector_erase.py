"""Erasure from the vector index (``forget``): rows deleted, then the files compacted so the bytes are gone.

A deleted row stays in the table's heap file until VACUUM FULL rewrites it,
and in the write-ahead log until the segments holding it are removed. Its
values may also sit in the planner's statistics: ANALYZE (autovacuum's
too) keeps sampled values of text columns (most common values, histogram
bounds, frequent lexemes) in ``pg_statistic``, found there by a byte grep
after an erasure under load (issue 31, row 3). So ``compact`` rewrites the
tables, replaces their statistics by a sample of what remains (an empty
table's are deleted: ANALYZE leaves an empty table's old ones), rewrites
``pg_statistic`` so the old versions are gone, switches to a new WAL segment
and checkpoints: the server then deletes the old segments (the embedded
server runs with ``wal_recycle = off``; one that recycles renames old
segments for reuse with their bytes intact). The statistics catalog and the
checkpoint need a superuser (the embedded server's role, and the compose
file's): for another role ``compact`` rewrites the tables and says it could
not vouch for the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
from pgvector import Vector

from mnemonet.store.errors import DependencyUnavailable
from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Erasure:
    """What ``erase`` did."""

    deleted: int  # rows of the erased ids
    scrubbed: int  # other rows whose embedding context quoted an erased text, now emptied
    # (id, text) of the scrubbed rows with a vector: made with the erased text's, to be made again alone
    stale: list[tuple[str, str]]


async def erase(store: VectorStore, ids: Sequence[str], fragments: Sequence[str]) -> Erasure:
    """Delete the rows of ``ids`` (keeping the keyword statistics true), and empty the embedding context
    of other rows quoting any of ``fragments`` (pieces of erased texts).

    One transaction; the keyword totals row is updated first, as the insert trigger does, so a
    concurrent writer queues instead of deadlocking.
    """
    q = quote_schema(store.schema)
    id_list, pieces = list(ids), [f for f in fragments if f]
    try:
        async with store.acquire() as conn, conn.transaction():
            await conn.execute(
                f"""UPDATE {q}.keyword_totals SET docs = docs - x.n, lexemes = lexemes - x.l
                    FROM (SELECT count(*) AS n, coalesce(sum(length(tsv)), 0) AS l
                          FROM {q}.embeddings WHERE id = ANY($1::text[])) AS x""",
                id_list,
            )
            await conn.execute(
                f"""UPDATE {q}.keyword_lexemes AS k SET docs = k.docs - g.n
                    FROM (SELECT l, count(*) AS n FROM {q}.embeddings, unnest(tsvector_to_array(tsv)) AS l
                          WHERE id = ANY($1::text[]) GROUP BY l) AS g
                    WHERE k.lexeme = g.l""",
                id_list,
            )
            # A word only the erased rows used is itself a piece of them (a name, often).
            await conn.execute(f"DELETE FROM {q}.keyword_lexemes WHERE docs <= 0")
            status = await conn.execute(f"DELETE FROM {q}.embeddings WHERE id = ANY($1::text[])", id_list)
            await conn.execute(f"DELETE FROM {q}.usage WHERE id = ANY($1::text[])", id_list)
            scrubbed = []
            if pieces:
                scrubbed = await conn.fetch(
                    f"""UPDATE {q}.embeddings SET context = ''
                        WHERE context <> '' AND EXISTS (SELECT 1 FROM unnest($1::text[]) AS f
                                                        WHERE strpos(context, f) > 0)
                        RETURNING id, text, embedding IS NOT NULL AS has_vector""",
                    pieces,
                )
    except (OSError, asyncpg.exceptions.ConnectionDoesNotExistError) as exc:
        raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc
    return Erasure(deleted=int(status.rsplit(" ", 1)[-1]), scrubbed=len(scrubbed),
                   stale=[(r["id"], r["text"]) for r in scrubbed if r["has_vector"]])


async def replace_vectors(store: VectorStore, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
    """Set the vector of each (id, vector) row that still exists."""
    q = quote_schema(store.schema)
    try:
        async with store.acquire() as conn:
            await conn.executemany(f"UPDATE {q}.embeddings SET embedding = $2 WHERE id = $1",
                                   [(row_id, Vector(list(vector))) for row_id, vector in vectors])
    except (OSError, asyncpg.exceptions.ConnectionDoesNotExistError) as exc:
        raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc


_TABLES = ("embeddings", "keyword_lexemes", "keyword_totals", "usage")


async def compact(store: VectorStore) -> bool:
    """VACUUM FULL the index's tables and sample their statistics afresh, then ``flush_log``.

    True when all of it ran; False when the role is not a superuser (the heap files are rewritten
    all the same, but the statistics and the log are not vouched for).
    """
    q = quote_schema(store.schema)
    timeout = store.settings.forget_compaction_timeout
    async with store.acquire() as conn:
        for table in _TABLES:
            await conn.execute(f"VACUUM FULL {q}.{table}", timeout=timeout)
        if not await _superuser(conn):
            return False
        tables = [f"{q}.{table}" for table in _TABLES]
        await conn.execute("DELETE FROM pg_catalog.pg_statistic WHERE starelid = ANY($1::regclass[])", tables,
                           timeout=timeout)
        for table in tables:
            await conn.execute(f"ANALYZE {table}", timeout=timeout)
    return await flush_log(store)


async def flush_log(store: VectorStore) -> bool:
    """Rewrite the statistics catalog, switch the WAL and checkpoint, so no file holds erased values.

    Enough alone after ``drop`` (a dropped schema's files are truncated when the drop commits and
    unlinked at the checkpoint; its tables' statistics are left as dead rows of ``pg_statistic``);
    False when the role is not a superuser.
    """
    timeout = store.settings.forget_compaction_timeout
    async with store.acquire() as conn:
        if not await _superuser(conn):
            return False
        await conn.execute("VACUUM FULL pg_catalog.pg_statistic", timeout=timeout)
        await conn.execute("SELECT pg_switch_wal()", timeout=timeout)
        await conn.execute("CHECKPOINT", timeout=timeout)
    return True


async def _superuser(conn: asyncpg.Connection) -> bool:
    """Whether this role may rewrite the statistics catalog and checkpoint (a warning when not)."""
    if await conn.fetchval("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user"):
        return True
    log.warning("vectors.compact: this role is not a superuser; the statistics catalog and old log segments "
                "may keep values of erased rows")
    return False
