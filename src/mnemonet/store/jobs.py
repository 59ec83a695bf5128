"""Work that must happen once across the store nodes sharing one PostgreSQL: a lock and a ledger in the engine.

Store nodes are front-ends: any number of them serve one graph server and one
PostgreSQL. What one of them does for all (set up a schema, create or erase a
space, finish an erasure's compaction, run a vector sync pass) is made once by
the engine, never by agreement among the nodes:

- ``exclusive(name)``: a PostgreSQL advisory lock, held on a connection of
  its own while the work runs (not a pooled one: holders waiting on each other
  would otherwise take the connections the work needs). The server lets it go
  when that connection goes, so a node killed mid-job (``kill -9``: the kernel
  closes its sockets) frees it at once and another node can take the job over.
- ``once(key, run)``: the same lock around a row of ``jobs`` that counts who
  started the job, how often, and whether it finished; a finished job is
  skipped. ``starts`` above one means a node died in it (or failed) and
  another finished it; ``completions`` is never above one.

The tables live in the default space's schema (``vector_schema.create_coordination``):
every store node of a deployment reads the same ones, whichever space it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg

from mnemonet.model.errors import Busy
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.store.errors import DependencyUnavailable
from mnemonet.store.index_queue import IndexQueue
from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)

T = TypeVar("T")
_UNREACHABLE = (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
                asyncpg.CannotConnectNowError)


def new_holder() -> str:
    """A name for this process among the store nodes: host, pid and a random part (a restart is a new holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class JobBusy(Busy):
    """Another store node holds the job's lock past ``job_lock_wait``."""


@dataclass(frozen=True)
class JobRecord:
    """One row of the ledger."""

    key: str
    kind: str
    starts: int
    completions: int
    holder: str
    state: str  # running or done
    detail: dict[str, Any]


class Jobs:
    """Advisory locks and the job ledger of one deployment (its default vector store's database and schema)."""

    def __init__(self, store: VectorStore, holder: str) -> None:
        self._store = store
        self._q = quote_schema(store.schema)
        self.holder = holder
        self._settings = store.settings

    @contextlib.asynccontextmanager
    async def exclusive(self, name: str, wait: float | None = None) -> AsyncIterator[None]:
        """Hold the lock ``name`` (across every node on this database) while the block runs.

        Waits up to ``wait`` seconds (``job_lock_wait`` unless given) for a holder elsewhere, then raises
        ``JobBusy``. Polled with ``pg_try_advisory_lock``: a blocking wait would sit on the statement timeout.
        """
        limit = self._settings.job_lock_wait if wait is None else wait
        key = f"{self._store.schema}:{name}"  # the schema keeps deployments (and tests) on one server apart
        try:
            conn = await self._store.connect()
        except _UNREACHABLE as exc:
            raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc
        try:  # closing the connection lets the lock go, whatever happened meanwhile
            await self._lock(conn, name, key, limit)
            yield
        finally:
            await _close(conn)

    async def _lock(self, conn: asyncpg.Connection, name: str, key: str, limit: float) -> None:
        deadline = time.monotonic() + limit
        try:
            while not await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key):
                if time.monotonic() >= deadline:
                    raise JobBusy(f"another store node holds {name!r} (waited {limit:.0f}s, job_lock_wait)")
                await asyncio.sleep(self._settings.job_lock_poll)
        except _UNREACHABLE as exc:
            raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc

    async def once(self, key: str, kind: str, run: Callable[[], Awaitable[T]],
                   detail: dict[str, Any] | None = None) -> tuple[bool, T | None]:
        """Run ``run`` unless the ledger says job ``key`` finished; ``(ran, result)``.

        Under ``exclusive(key)``, so one node runs it at a time; a node that died in it left the row
        ``running``, and the next call runs it again (``starts`` counts both).
        """
        async with self.exclusive(key):
            record = await self.get(key)
            if record is not None and record.state == "done":
                return False, None
            await self._started(key, kind, detail or {})
            result = await run()
            await self.finish(key)
            return True, result

    async def periodic(self, key: str, kind: str, interval: float,
                       run: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """Run ``run`` unless another node runs job ``key`` now or finished it less than ``interval`` seconds
        ago (a pass each node would otherwise make once per interval); ``(ran, result)``."""
        try:
            async with self.exclusive(key, wait=0):
                rows = await _fetch(self._store,
                                    f"""SELECT extract(epoch FROM now() - finished_at) AS age FROM {self._q}.jobs
                                        WHERE key = $1 AND state = 'done'""", key)
                if rows and rows[0]["age"] is not None and float(rows[0]["age"]) < interval:
                    return False, None
                await self._started(key, kind, {})
                result = await run()
                await self.finish(key)
                return True, result
        except JobBusy:  # another node's pass is under way
            return False, None

    async def start(self, key: str, kind: str, detail: dict[str, Any]) -> None:
        """Record that this node began job ``key`` (call under ``exclusive(key)``); ``finish`` when it is done."""
        await self._started(key, kind, detail)

    async def _started(self, key: str, kind: str, detail: dict[str, Any]) -> None:
        await _execute(self._store,
            f"""INSERT INTO {self._q}.jobs AS j (key, kind, starts, completions, holder, state, detail, started_at)
                VALUES ($1, $2, 1, 0, $3, 'running', $4::jsonb, now())
                ON CONFLICT (key) DO UPDATE SET starts = j.starts + 1, holder = $3, state = 'running',
                    detail = $4::jsonb, started_at = now()""",
            key, kind, self.holder, _json(detail))

    async def finish(self, key: str) -> None:
        """Record job ``key`` done (once: a job already done is not counted again)."""
        await _execute(self._store,
            f"""UPDATE {self._q}.jobs SET completions = completions + 1, state = 'done', finished_at = now()
                WHERE key = $1 AND state = 'running'""", key)

    async def forget_jobs(self, key_prefix: str) -> None:
        """Drop the ledger rows whose key starts with ``key_prefix`` (what an erased space left)."""
        await _execute(self._store, f"DELETE FROM {self._q}.jobs WHERE starts_with(key, $1)", key_prefix)

    async def get(self, key: str) -> JobRecord | None:
        """The ledger row of job ``key``, if any."""
        rows = await _fetch(self._store,
            f"SELECT key, kind, starts, completions, holder, state, detail FROM {self._q}.jobs WHERE key = $1", key)
        return _record(rows[0]) if rows else None

    async def ledger(self, kind: str | None = None) -> list[JobRecord]:
        """Every ledger row (of ``kind``), oldest first: what ran, how often, where."""
        rows = await _fetch(self._store,
            f"""SELECT key, kind, starts, completions, holder, state, detail FROM {self._q}.jobs
                WHERE $1::text IS NULL OR kind = $1 ORDER BY started_at, key""", kind)
        return [_record(r) for r in rows]


async def _close(conn: asyncpg.Connection) -> None:
    """Close the lock's connection (the server drops its advisory locks with the session)."""
    try:
        await asyncio.shield(conn.close(timeout=5.0))
    except Exception:  # already broken: the server sees the session end all the same
        conn.terminate()


async def _execute(store: VectorStore, sql: str, *args: Any) -> None:
    async with store.acquire() as conn:
        await conn.execute(sql, *args)


async def _fetch(store: VectorStore, sql: str, *args: Any) -> list[Any]:
    async with store.acquire() as conn:
        return list(await conn.fetch(sql, *args))


def _json(detail: dict[str, Any]) -> str:
    import json

    return json.dumps(detail, sort_keys=True)


def _record(row: Any) -> JobRecord:
    return JobRecord(key=row["key"], kind=row["kind"], starts=row["starts"], completions=row["completions"],
                     holder=row["holder"], state=row["state"], detail=dict(row["detail"]))


@dataclass(frozen=True)
class Coordination:
    """What the store nodes over one PostgreSQL coordinate through: the job ledger, and (``index_queue``
    shared) the index queue of one space."""

    jobs: Jobs
    queue: IndexQueue | None

    @classmethod
    def of(cls, store: VectorStore, shared_queue: bool) -> Coordination:
        """Over the default space's vector store ``store``, as a new holder."""
        holder = new_holder()
        return cls(Jobs(store, holder), IndexQueue(store, DEFAULT_SPACE, holder) if shared_queue else None)

    def for_space(self, space: str) -> Coordination:
        """The same ledger and holder, with the queue of ``space``."""
        return Coordination(self.jobs, None if self.queue is None else self.queue.for_space(space))
