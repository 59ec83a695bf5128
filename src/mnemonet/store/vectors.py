"""The vector index: embeddings keyed by graph ids in PostgreSQL + pgvector.

k-NN over an HNSW cosine index, keyword search over a generated English
``tsvector`` column (ranked by BM25, ``vector_keyword``), and hybrid search
fusing the two by reciprocal rank fusion. One index holds one model's
vectors: the model and dimension are recorded by the first upsert (or
``ensure_model``) and anything else is refused with ``DimensionMismatch``
until ``vector_reembed.reembed`` switches the index over.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

import asyncpg
from pgvector import Vector
from pgvector.asyncpg import register_vector

from mnemonet.settings import Settings
from mnemonet.store import datadir, vector_schema
from mnemonet.store.embedded_postgres import EmbeddedPostgres
from mnemonet.store.errors import DependencyUnavailable
from mnemonet.store.vector_keyword import keyword_sql
from mnemonet.store.vector_types import (
    DimensionMismatch,
    VectorHit,
    VectorItem,
    as_vector,
    check_item,
    check_k,
    check_kinds,
    check_query,
    check_since,
    mismatch,
    quote_schema,
    tie_order,
)

log = logging.getLogger(__name__)

__all__ = ["DimensionMismatch", "VectorHit", "VectorItem", "VectorStore"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
# PostgreSQL cannot be reached, went away, or did not answer in time: a 503 "vectors unavailable", not a bug.
_UNREACHABLE = (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
                asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError)


def _reachable(
    method: Callable[_P, Coroutine[Any, Any, _R]],
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """Raise ``DependencyUnavailable("vectors", ...)`` when ``method`` fails for want of a database."""

    @functools.wraps(method)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await method(*args, **kwargs)
        except _UNREACHABLE as exc:
            raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc

    return wrapper


class VectorStore:
    """Embeddings of observations, statements, concepts and summaries; see the module docstring."""

    def __init__(
        self, pool: asyncpg.Pool, settings: Settings, schema: str, server: EmbeddedPostgres | None
    ) -> None:
        self._pool = pool
        self._settings = settings
        self.schema = schema
        self._q = quote_schema(schema)
        self._server = server
        self._url = ""  # where ``connect`` goes (set by ``open``)
        self._lock: datadir.DataDirLock | None = None  # the data dir's lock, when open() took it
        self._meta: tuple[str, int] | None = None
        self._meta_lock = asyncio.Lock()
        self._owns_pool = True  # a space's store borrows the pool of the store it was made from

    # -- lifecycle ------------------------------------------------------------

    @classmethod
    async def open(cls, settings: Settings, *, schema: str = "mnemonet", tables: bool = True) -> VectorStore:
        """Connect (to ``settings.database_url``, or to an embedded PostgreSQL started here) and create the schema.

        The embedded server lives in ``settings.data_dir / "postgres"`` and is stopped by ``close()``.
        ``tables`` False: only the connections and the extension, for a database holding only the spaces
        placed on it (their stores come from ``for_space``).
        """
        q = quote_schema(schema)
        server: EmbeddedPostgres | None = None
        lock: datadir.DataDirLock | None = None
        url = settings.database_url
        try:
            if not url:
                lock = datadir.hold(settings.data_dir)  # shared with the node's, inside a node
                server = EmbeddedPostgres(settings.data_dir / "postgres", settings.postgres_shared_buffers)
                url = await server.start()
            # The extension must exist before a pool connection can register its codec.
            conn = await asyncpg.connect(url, timeout=settings.vector_command_timeout)
            try:
                if tables:
                    await vector_schema.create_base(conn, q)
                    await vector_schema.create_coordination(conn, q)
                else:
                    await vector_schema.create_extension(conn)
                ext_schema = await conn.fetchval(
                    "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
                )
            finally:
                await conn.close()
            pool = await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=settings.vector_pool_size,
                command_timeout=settings.vector_command_timeout,
                init=_connection_init(ext_schema),
                # No session state is ever changed (no SET, LISTEN, cursor or lock outlives its
                # statement or transaction), so a released connection needs no RESET ALL: that is
                # one more round trip after every query (~0.3 ms here). An open transaction is
                # still rolled back by the pool.
                reset=_keep_session,
                # Session defaults, not SETs: strict_order iterative scans keep filtered k-NN
                # (kinds/since) and large candidate pools from returning fewer than k rows.
                server_settings={
                    "hnsw.ef_search": str(int(settings.hnsw_ef_search)),
                    "hnsw.iterative_scan": "strict_order",
                },
            )
        except BaseException:
            if server is not None:
                await server.stop()
            if lock is not None:
                lock.release()
            raise
        store = cls(pool, settings, schema, server)
        store._lock = lock
        store._url = url
        if tables:
            async with pool.acquire() as conn:
                store._meta = await vector_schema.read_meta(conn, q)
        return store

    @_reachable
    async def for_space(self, schema: str) -> VectorStore:
        """The index of one memory space: its own schema (table, HNSW index, keyword statistics) on this
        store's pool, created if new.

        A table per space rather than a ``space`` column: a k-NN scan of one space's HNSW index never
        visits another space's rows, so a filter cannot starve it of candidates (recall stays that of a
        store holding one space), and BM25's document frequencies are the space's own (another team's
        words do not shift this team's ranking). Measured in bench/spaces.py.
        """
        q = quote_schema(schema)
        async with self._pool.acquire() as conn:
            await vector_schema.create_base(conn, q)
            meta = await vector_schema.read_meta(conn, q)
        store = VectorStore(self._pool, self._settings, schema, None)
        store._owns_pool = False
        store._url = self._url
        store._meta = meta
        return store

    @_reachable
    async def drop(self) -> None:
        """Delete this index's schema and every row in it (a deleted space)."""
        async with self._meta_lock, self._pool.acquire() as conn, conn.transaction():
            await vector_schema.lock_ddl(conn)
            await conn.execute(f"DROP SCHEMA IF EXISTS {self._q} CASCADE")
            self._meta = None

    async def close(self) -> None:
        """Close the pool and stop the embedded server if this store started it."""
        if not self._owns_pool:
            return
        await self._pool.close()
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- the index's model ------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The settings this store was opened with."""
        return self._settings

    @property
    def model(self) -> str | None:
        """The model the index holds vectors of, or None while it is empty and unconfigured."""
        return self._meta[0] if self._meta else None

    @property
    def dimension(self) -> int | None:
        """The index's vector dimension, or None while unconfigured."""
        return self._meta[1] if self._meta else None

    @_reachable
    async def ensure_model(self, model: str, dimension: int) -> None:
        """Configure the index for (model, dimension) if it is new; raise ``DimensionMismatch`` if it holds another."""
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model: must be a non-empty string")
        if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= 16000:
            raise ValueError("dimension: expected an integer from 1 to 16000 (pgvector's limit)")
        if self._meta is None:
            async with self._meta_lock, self._pool.acquire() as conn, conn.transaction():
                await vector_schema.lock_ddl(conn)
                # Another process may have configured it since this store opened.
                self._meta = await vector_schema.read_meta(conn, self._q)
                if self._meta is None:
                    await vector_schema.set_dimension(conn, self._q, model, dimension, self._settings)
                    self._meta = (model, dimension)
                    log.info("vectors.configure schema=%s model=%s dimension=%d", self.schema, model, dimension)
        self._check(model, dimension)

    def _check(self, model: str | None, dimension: int) -> None:
        assert self._meta is not None
        index_model, index_dim = self._meta
        if dimension != index_dim:
            raise mismatch("dimension", dimension, index_model, index_dim)
        if model is not None and model != index_model:
            raise mismatch("model", model, index_model, index_dim)

    def record_model(self, model: str, dimension: int) -> None:
        """Record the switch ``vector_reembed.reembed`` made in the database (not for other callers)."""
        self._meta = (model, dimension)

    # -- writes -----------------------------------------------------------------

    @_reachable
    async def upsert(self, items: Sequence[VectorItem]) -> int:
        """Insert rows in batches of ``vector_batch_size``; an id already present is left alone.

        Everything is validated before anything is written, and all batches
        commit together. Returns how many rows were new.
        """
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            raise ValueError("items: expected a list of VectorItem")
        if not items:
            return 0
        checked = [check_item(item, self._settings, i) for i, item in enumerate(items)]
        first = next(((item, vec) for item, (vec, _) in zip(items, checked, strict=True) if vec is not None), None)
        if self._meta is None and first is not None:
            # The first vector ever written fixes the index's model and dimension.
            await self.ensure_model(first[0].model, len(first[1]))
        for i, (item, (vec, _)) in enumerate(zip(items, checked, strict=True)):
            if vec is None:
                continue
            try:
                self._check(item.model, len(vec))
            except DimensionMismatch as exc:
                raise DimensionMismatch(f"items[{i}]: {exc}") from None
        size = self._settings.vector_batch_size
        inserted = 0
        sql = f"""INSERT INTO {self._q}.embeddings (id, kind, text, model, embedding, created_at, metadata, context)
                  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::vector[],
                                       $6::bigint[], $7::jsonb[], $8::text[])
                  ON CONFLICT (id) DO NOTHING"""
        async with self._pool.acquire() as conn, conn.transaction():
            for start in range(0, len(items), size):
                part = items[start : start + size]
                vecs = checked[start : start + size]
                status = await conn.execute(
                    sql,
                    [it.id for it in part],
                    [it.kind for it in part],
                    [it.text for it in part],
                    [it.model for it in part],
                    # Wrapped so asyncpg's array encoder does not iterate into each vector.
                    [None if v is None else Vector(v) for v, _ in vecs],
                    [it.created_at for it in part],
                    [meta for _, meta in vecs],
                    [it.context for it in part],
                )
                inserted += int(status.rsplit(" ", 1)[-1])
        return inserted

    @_reachable
    async def clear(self) -> None:
        """Delete every row and forget the model, so the next upsert may use any model (admin only)."""
        async with self._meta_lock, self._pool.acquire() as conn, conn.transaction():
            await vector_schema.lock_ddl(conn)
            await vector_schema.reset(conn, self._q)
            self._meta = None

    # -- reads ------------------------------------------------------------------

    @_reachable
    async def knn(
        self,
        vector: Sequence[float],
        k: int,
        kinds: Sequence[str] | None = None,
        since: int | None = None,
        *,
        model: str | None = None,
    ) -> list[VectorHit]:
        """The ``k`` nearest rows by cosine similarity (score = 1 - cosine distance)."""
        vec = as_vector(vector, "vector")
        check_k(k, self._settings)
        kinds, since = check_kinds(kinds), check_since(since)
        if self._meta is None:
            return []
        self._check(model, len(vec))
        where, args = _filters(kinds, since, first_param=3)
        sql = f"""SELECT id, kind, text, created_at, metadata, embedding <=> $1 AS distance
                  FROM {self._q}.embeddings WHERE embedding IS NOT NULL {where}
                  ORDER BY embedding <=> $1 LIMIT $2"""
        rows = await self._pool.fetch(sql, Vector(vec), k, *args)
        return [_hit(r, 1.0 - float(r["distance"]), vector_rank=i) for i, r in enumerate(rows, 1)]

    @_reachable
    async def keyword(
        self, query: str, k: int, kinds: Sequence[str] | None = None, since: int | None = None
    ) -> list[VectorHit]:
        """Full-text search: rows sharing English lexemes with ``query``, ranked by BM25 (or ``ts_rank_cd``,
        setting ``keyword_scoring``); which rows are ranked is bounded, see ``vector_keyword``."""
        check_query(query, self._settings)
        check_k(k, self._settings)
        kinds, since = check_kinds(kinds), check_since(since)
        where, args = _filters(kinds, since, first_param=8)
        s = self._settings
        rows = await self._pool.fetch(
            keyword_sql(self._q, where, s.keyword_scoring),
            query, k, s.bm25_k1, s.bm25_b, s.keyword_common_rows, s.keyword_max_candidates, s.keyword_pair_rows, *args,
        )
        return [_hit(r, float(r["rank"]), keyword_rank=i) for i, r in enumerate(rows, 1)]

    @_reachable
    async def hybrid(
        self,
        query: str,
        vector: Sequence[float] | Callable[[], Awaitable[Sequence[float]]],
        k: int,
        kinds: Sequence[str] | None = None,
        since: int | None = None,
        *,
        model: str | None = None,
    ) -> list[VectorHit]:
        """k-NN and keyword search fused by reciprocal rank fusion: score = sum of 1/(rrf_k + rank).

        ``vector`` is the query's vector, or an async function that computes it:
        keyword search, which needs no vector, then runs while the query is embedded.
        """
        check_k(k, self._settings)
        pool_k = min(k * self._settings.hybrid_candidate_factor, self._settings.vector_max_k)

        async def dense() -> list[VectorHit]:
            query_vector = await vector() if callable(vector) else vector
            return await self.knn(query_vector, pool_k, kinds, since, model=model)

        dense_hits, lexical = await asyncio.gather(dense(), self.keyword(query, pool_k, kinds, since))
        return fuse(dense_hits, lexical, k, self._settings.rrf_k)

    @_reachable
    async def ids_missing(self, ids: Sequence[str]) -> list[str]:
        """The ids (in the order given) that have no row yet: what a retry still has to index."""
        id_list = _check_ids(ids, self._settings)
        rows = await self._pool.fetch(
            f"""SELECT t.id FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)
                WHERE NOT EXISTS (SELECT 1 FROM {self._q}.embeddings e WHERE e.id = t.id)
                ORDER BY t.n""",
            id_list,
        )
        return [r["id"] for r in rows]

    @_reachable
    async def get(self, ids: Sequence[str]) -> list[VectorItem]:
        """The stored rows for ``ids``, in the order given; unknown ids are skipped."""
        id_list = _check_ids(ids, self._settings)
        rows = await self._pool.fetch(
            f"""SELECT e.id, e.kind, e.text, e.model, e.embedding, e.created_at, e.metadata, e.context
                FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)
                JOIN {self._q}.embeddings e ON e.id = t.id ORDER BY t.n""",
            id_list,
        )
        return [
            VectorItem(
                id=r["id"],
                kind=r["kind"],
                text=r["text"],
                model=r["model"],
                vector=None if r["embedding"] is None else r["embedding"].to_list(),
                created_at=r["created_at"],
                metadata=r["metadata"],
                context=r["context"],
            )
            for r in rows
        ]

    @_reachable
    async def ping(self) -> None:
        """One real query round trip through the pool (raises ``DependencyUnavailable`` when PostgreSQL is down)."""
        await self._pool.fetch(f"SELECT id FROM {self._q}.embeddings LIMIT 1")

    @_reachable
    async def count(self) -> int:
        """Number of stored rows."""
        return int(await self._pool.fetchval(f"SELECT count(*) FROM {self._q}.embeddings"))

    async def connect(self) -> asyncpg.Connection:
        """A connection of its own, outside the pool (for a session that outlives one query: an advisory lock)."""
        return await asyncpg.connect(self._url, timeout=self._settings.vector_command_timeout)

    def acquire(self) -> Any:
        """A pooled connection for raw SQL; leave no session state on it (the pool does not reset it, see ``open``)."""
        return self._pool.acquire()


def fuse(dense: list[VectorHit], lexical: list[VectorHit], k: int, rrf_k: int) -> list[VectorHit]:
    """Reciprocal rank fusion of two ranked lists; equal scores ordered by ``tie_order``."""
    fused: dict[str, dict[str, Any]] = {}
    for hits, rank_field in ((dense, "vector_rank"), (lexical, "keyword_rank")):
        for rank, hit in enumerate(hits, 1):
            entry = fused.setdefault(hit.id, {"hit": hit, "score": 0.0, "vector_rank": None, "keyword_rank": None})
            entry["score"] += 1.0 / (rrf_k + rank)
            entry[rank_field] = rank
    ranked = sorted(fused.values(), key=lambda e: (-e["score"], *tie_order(
        e["vector_rank"], e["keyword_rank"], e["hit"].created_at, e["hit"].id)))[:k]
    return [
        VectorHit(
            id=e["hit"].id,
            kind=e["hit"].kind,
            text=e["hit"].text,
            score=e["score"],
            vector_rank=e["vector_rank"],
            keyword_rank=e["keyword_rank"],
            created_at=e["hit"].created_at,
            metadata=e["hit"].metadata,
        )
        for e in ranked
    ]


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset on release: nothing to undo (see ``open``)."""


def _connection_init(ext_schema: str) -> Any:
    async def init(conn: asyncpg.Connection) -> None:
        await register_vector(conn, schema=ext_schema)
        # Metadata goes in as JSON text (already checked and serialised) and comes back as a dict.
        await conn.set_type_codec("jsonb", encoder=lambda v: v, decoder=json.loads, schema="pg_catalog")

    return init


def _filters(kinds: list[str] | None, since: int | None, *, first_param: int) -> tuple[str, list[Any]]:
    """``AND ...`` conditions (fixed SQL text, values as parameters from ``$first_param``) for kinds/since."""
    clauses: list[str] = []
    args: list[Any] = []
    if kinds is not None:
        args.append(kinds)
        clauses.append(f"kind = ANY(${first_param + len(args) - 1}::text[])")
    if since is not None:
        args.append(since)
        clauses.append(f"created_at >= ${first_param + len(args) - 1}")
    return "".join(f" AND {c}" for c in clauses), args


def _check_ids(ids: Sequence[str], settings: Settings) -> list[str]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise ValueError("ids: expected a list of strings")
    if len(ids) > settings.vector_max_ids:
        raise ValueError(f"ids: {len(ids)} ids exceed the limit of {settings.vector_max_ids} (setting vector_max_ids)")
    for i, id_ in enumerate(ids):
        if not isinstance(id_, str) or not id_ or len(id_) > settings.vector_max_id_chars:
            raise ValueError(f"ids[{i}]: must be a non-empty string of at most {settings.vector_max_id_chars} "
                "characters")
    return list(ids)


def _hit(
    row: asyncpg.Record, score: float, *, vector_rank: int | None = None, keyword_rank: int | None = None
) -> VectorHit:
    return VectorHit(
        id=row["id"],
        kind=row["kind"],
        text=row["text"],
        score=score,
        vector_rank=vector_rank,
        keyword_rank=keyword_rank,
        created_at=row["created_at"],
        metadata=row["metadata"],
    )
