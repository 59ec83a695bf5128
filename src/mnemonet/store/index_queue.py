"""The shared index queue: rows of acknowledged writes not indexed yet, in PostgreSQL for every store node to see.

A write is indexed behind its acknowledgement (``index_in_background``). With
one store node, the node's own memory says what is still waiting. With several
over one PostgreSQL, a search on node B must also wait for what node A
acknowledged, and if A dies its waiting rows must still be indexed, once. So
before a write is acknowledged, the rows it will be indexed with go into
``index_queue`` (one insert, committed without waiting for the log flush: a
row lost with PostgreSQL is found again by the vector sync, as any row whose
index write failed), held by the writing node for ``index_lease`` seconds,
which the node renews while it works through them:

- a search on any node reads the queue's high-water mark for its space and
  waits until every row up to it is gone (``settled``): the writes
  acknowledged before it are in the index;
- the holder re-claims a batch before embedding it (``hold``), indexes it,
  then deletes its rows (``done``);
- a row whose lease ran out (its node died, or stalled past the lease) is
  taken over by another node (``take_over``: ``FOR UPDATE SKIP LOCKED``, so
  two nodes never take the same row), and the old holder's ``hold`` no longer
  returns it: the work is done once. ``lapsed_spaces`` finds the spaces that
  have such rows with one query, whatever the number of spaces.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import asyncpg

from mnemonet.store.errors import DependencyUnavailable
from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True)
class QueuedRow:
    """One row to index: what ``VectorIndexer`` needs to make it, on whichever node takes it."""

    id: str
    kind: str
    text: str
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: bool = True


def _reachable(method: Callable[_P, Coroutine[Any, Any, _R]]) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """Raise ``DependencyUnavailable("vectors", ...)`` when ``method`` fails for want of a database."""

    @functools.wraps(method)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await method(*args, **kwargs)
        except (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
                asyncpg.CannotConnectNowError) as exc:
            raise DependencyUnavailable("vectors", f"postgresql: {type(exc).__name__}: {exc}") from exc

    return wrapper


class IndexQueue:
    """One space's share of the queue table (in the default space's schema of ``store``), as ``holder`` sees it."""

    def __init__(self, store: VectorStore, space: str, holder: str) -> None:
        self._store = store
        self._q = quote_schema(store.schema)
        self.space = space
        self.holder = holder
        self._lease = store.settings.index_lease

    def _locked(self, where: str) -> str:
        """The rows ``where`` selects, locked in queue order: statements that change many rows at once (a renewal,
        a hold, a removal) take their locks in one order, so two of them never wait on each other in a cycle
        (PostgreSQL had reported "deadlock detected" between a renewal and a removal under load)."""
        return f"SELECT seq FROM {self._q}.index_queue WHERE {where} ORDER BY seq FOR UPDATE"

    def for_space(self, space: str) -> IndexQueue:
        """The same queue table and holder, for another space."""
        return IndexQueue(self._store, space, self.holder)

    @_reachable
    async def put(self, rows: Sequence[QueuedRow]) -> None:
        """Record ``rows`` as waiting, held by this node; a row already queued is left as it is."""
        if not rows:
            return
        async with self._store.acquire() as conn, conn.transaction():
            # Visibility, not durability: a row lost with the server is one the vector sync finds missing.
            await conn.execute("SET LOCAL synchronous_commit = off")
            await conn.execute(
                f"""INSERT INTO {self._q}.index_queue (space, id, kind, text, created_at, metadata, vector, holder,
                                                      held_until)
                    SELECT $1, t.id, t.kind, t.text, t.created_at, t.metadata, t.vector, $2,
                           now() + make_interval(secs => $3)
                    FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::jsonb[], $9::boolean[])
                         AS t(id, kind, text, created_at, metadata, vector)
                    ON CONFLICT (space, id) DO NOTHING""",
                self.space, self.holder, self._lease, [r.id for r in rows], [r.kind for r in rows],
                [r.text for r in rows], [r.created_at for r in rows], [json.dumps(r.metadata) for r in rows],
                [r.vector for r in rows])

    @_reachable
    async def renew(self) -> int:
        """Extend the lease on every row of this space this node holds; how many it holds."""
        async with self._store.acquire() as conn:
            status = await conn.execute(
                f"""WITH held AS ({self._locked("space = $1 AND holder = $2")})
                    UPDATE {self._q}.index_queue AS q SET held_until = now() + make_interval(secs => $3)
                    FROM held WHERE q.seq = held.seq""", self.space, self.holder, self._lease)
        return int(status.rsplit(" ", 1)[-1])

    @_reachable
    async def hold(self, ids: Sequence[str]) -> set[str]:
        """Of ``ids``, those this node still holds, their leases renewed: the ones it may index now."""
        async with self._store.acquire() as conn:
            rows = await conn.fetch(
                f"""WITH held AS ({self._locked("space = $1 AND id = ANY($2::text[]) AND holder = $3")})
                    UPDATE {self._q}.index_queue AS q SET held_until = now() + make_interval(secs => $4)
                    FROM held WHERE q.seq = held.seq RETURNING q.id""",
                self.space, list(ids), self.holder, self._lease)
        return {r["id"] for r in rows}

    @_reachable
    async def done(self, ids: Sequence[str]) -> None:
        """Remove ``ids`` from the queue: indexed (or failed, left to the vector sync)."""
        if not ids:
            return
        async with self._store.acquire() as conn:
            await conn.execute(f"""WITH gone AS ({self._locked("space = $1 AND id = ANY($2::text[])")})
                                   DELETE FROM {self._q}.index_queue AS q USING gone WHERE q.seq = gone.seq""",
                               self.space, list(ids))

    @_reachable
    async def take_over(self, limit: int) -> list[QueuedRow]:
        """Hold up to ``limit`` rows of this space whose lease ran out, oldest first."""
        async with self._store.acquire() as conn:
            rows = await conn.fetch(
                f"""UPDATE {self._q}.index_queue AS q SET holder = $2, held_until = now() + make_interval(secs => $3)
                    FROM (SELECT seq FROM {self._q}.index_queue WHERE space = $1 AND held_until < now()
                          ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED) AS due
                    WHERE q.seq = due.seq
                    RETURNING q.id, q.kind, q.text, q.created_at, q.metadata, q.vector""",
                self.space, self.holder, self._lease, limit)
        return [QueuedRow(id=r["id"], kind=r["kind"], text=r["text"], created_at=r["created_at"],
                          metadata=r["metadata"], vector=r["vector"]) for r in rows]

    @_reachable
    async def lapsed_spaces(self) -> list[str]:
        """The spaces with rows whose lease ran out (what ``take_over`` would find), in one look."""
        async with self._store.acquire() as conn:
            rows = await conn.fetch(
                f"SELECT DISTINCT space FROM {self._q}.index_queue WHERE held_until < now()")
        return sorted(r["space"] for r in rows)

    @_reachable
    async def high_water(self) -> int | None:
        """The newest row waiting in this space; None when none waits."""
        async with self._store.acquire() as conn:
            mark = await conn.fetchval(f"SELECT max(seq) FROM {self._q}.index_queue WHERE space = $1", self.space)
        return None if mark is None else int(mark)

    @_reachable
    async def count(self) -> int:
        """Rows of this space waiting, whoever holds them."""
        async with self._store.acquire() as conn:
            return int(await conn.fetchval(f"SELECT count(*) FROM {self._q}.index_queue WHERE space = $1", self.space))

    @_reachable
    async def settled(self, mark: int) -> bool:
        """True once no row of this space up to ``mark`` waits."""
        async with self._store.acquire() as conn:
            return not await conn.fetchval(
                f"SELECT EXISTS (SELECT 1 FROM {self._q}.index_queue WHERE space = $1 AND seq <= $2)",
                self.space, mark)

    @_reachable
    async def settled_elsewhere(self, mark: int) -> bool:
        """True once no row of this space up to ``mark`` waits on another node (this node's it cancels itself)."""
        async with self._store.acquire() as conn:
            return not await conn.fetchval(
                f"""SELECT EXISTS (SELECT 1 FROM {self._q}.index_queue
                                   WHERE space = $1 AND seq <= $2 AND holder <> $3)""",
                self.space, mark, self.holder)

    @_reachable
    async def waiting(self, ids: Sequence[str]) -> set[str]:
        """Of ``ids``, those still in the queue (some node will index them: a sync leaves them alone)."""
        async with self._store.acquire() as conn:
            rows = await conn.fetch(
                f"SELECT id FROM {self._q}.index_queue WHERE space = $1 AND id = ANY($2::text[])",
                self.space, list(ids))
        return {r["id"] for r in rows}

    @_reachable
    async def compact(self) -> None:
        """Rewrite the queue table, so the texts of rows gone from it (an erasure's) are gone from its file;
        the WAL switch and checkpoint of ``vector_erase.flush_log`` that follow take them out of the log."""
        async with self._store.acquire() as conn:
            await conn.execute(f"VACUUM FULL {self._q}.index_queue",
                               timeout=self._store.settings.forget_compaction_timeout)

    @_reachable
    async def drop_space(self) -> None:
        """Remove every row of this space (it is being erased)."""
        async with self._store.acquire() as conn:
            await conn.execute(f"DELETE FROM {self._q}.index_queue WHERE space = $1", self.space)
