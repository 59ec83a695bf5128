"""FalkorDB dialect: the native async ``falkordb`` client (not the Bolt port).

Reads go through ``GRAPH.RO_QUERY``, which the server refuses to run writes
with. One ``GRAPH.QUERY`` is atomic, but its reading part runs before the
server takes the graph's write lock, so two concurrent "create unless it
exists" queries can both create. Writes through one driver are therefore
serialised here; the embedded server has one writer process (its store node).

With read replicas (``falkordb_replicas``), reads go to them and each write is
acknowledged once they applied it (``falkordb_replicas.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from falkordb.asyncio.graph import AsyncGraph
from falkordb.asyncio.query_result import QueryResult
from falkordb.edge import Edge
from falkordb.node import Node
from falkordb.path import Path
from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from mnemonet.settings import Settings
from mnemonet.store.dialects.base import WriteOutcome
from mnemonet.store.falkordb_replicas import Replicas
from mnemonet.store.graph_errors import GraphStoreError, GraphUnavailable, ReadOnlyViolation

log = logging.getLogger(__name__)

# Token revocations, the audit log, forget's tombstones and the registry of spaces stay: erasing memories
# must not bring revoked tokens back, erase the record of who erased them, nor forget the other spaces.
CLEAR = "MATCH (n) WHERE NOT (n:TokenRevocation OR n:AuditRecord OR n:Tombstone OR n:Space) DETACH DELETE n"

# FalkorDB has no IF NOT EXISTS; an "already indexed" error means done.
_INDEXES: tuple[tuple[str, str], ...] = (
    ("Concept", "key"), ("Concept", "alias_keys"), ("Concept", "id"),
    ("Statement", "id"), ("Statement", "created_at"),
    ("Observation", "id"), ("Observation", "created_at"),
    ("Source", "key"), ("Source", "id"),
    ("Statement", "predicate"), ("Observation", "extraction"), ("Predicate", "name"),
)


def plain(value: Any) -> Any:
    """Engine values to JSON-ready Python: nodes and edges become dicts."""
    if isinstance(value, Node):
        return {"labels": list(value.labels or []), **{k: plain(v) for k, v in value.properties.items()}}
    if isinstance(value, Edge):
        return {"type": value.relation, **{k: plain(v) for k, v in value.properties.items()}}
    if isinstance(value, Path):
        return {"nodes": [plain(n) for n in value.nodes()], "edges": [plain(e) for e in value.edges()]}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class FalkorDriver:
    """One FalkorDB graph reached over its Redis protocol port."""

    name = "falkordb"

    def __init__(self, host: str, port: int, graph_name: str, timeout: float = 30.0,
                 password: str | None = None, client: Redis | None = None, replicas: Replicas | None = None, *,
                 max_connections: int = Settings.model_fields["max_concurrent_requests"].default) -> None:
        self._host, self._port = host, port
        self._replicas = replicas
        self._owns_connection = client is None
        self._pool: BlockingConnectionPool | None = None
        if client is None:
            # The library's pool fails a command with "Too many connections" past 100 (issue 31: 45-75 of 256
            # admitted requests failed so). This one holds ``max_connections`` (the store node sizes it from
            # the requests it admits) and a command finding them all busy waits for one, within its timeout.
            # Its connections read for as long as the timeout too: left unset, redis-py 8 cuts any reply
            # slower than 5 s, whatever graph_query_timeout says (a write group on a large graph did).
            self._pool = BlockingConnectionPool(host=host, port=port, password=password, decode_responses=True,
                                                max_connections=max_connections, timeout=timeout,
                                                socket_timeout=timeout)
            # A plain client, not the library's ``FalkorDB``: that one probes the server for cluster mode with a
            # blocking INFO when built, which stops the whole event loop for as long as the server takes.
            client = Redis(connection_pool=self._pool)
        self._client = client
        self._where = f"falkordb at {host}:{port}"
        self._graph = AsyncGraph(client, graph_name)
        self._graph_name = graph_name
        self._timeout = timeout
        self._write_lock = asyncio.Lock()

    def for_graph(self, graph_name: str) -> FalkorDriver:
        """A driver of another graph on the same server, sharing this one's connection (a memory space)."""
        return FalkorDriver(self._host, self._port, graph_name, self._timeout, client=self._client,
                            replicas=self._replicas)

    async def drop(self) -> None:
        """Delete the whole graph, its indexes included (a deleted space); nothing if it does not exist."""
        async with self._write_lock:
            try:
                async with asyncio.timeout(self._timeout):
                    await self._graph.delete()
            except ResponseError as exc:
                if "empty key" not in str(exc) and "Invalid graph operation" not in str(exc):
                    raise GraphStoreError(f"falkordb: {exc}") from exc
            except (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError) as exc:
                raise GraphUnavailable(f"{self._where}: {exc}") from exc
        await self._replicated()

    async def _run(self, cypher: str, params: dict[str, Any], read_only: bool) -> Any:
        return await self._run_on(self._graph, self._where, cypher, params, read_only)

    async def _run_on(self, graph: Any, where: str, cypher: str, params: dict[str, Any], read_only: bool) -> Any:
        try:
            async with asyncio.timeout(self._timeout):
                if read_only:
                    return await graph.ro_query(cypher, params)
                return await graph.query(cypher, params)
        except ResponseError as exc:
            if "read-only" in str(exc):
                raise ReadOnlyViolation(f"cypher: the engine refused a write in read-only mode ({exc})") from exc
            raise GraphStoreError(f"falkordb: {exc}") from exc
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise GraphUnavailable(f"{where}: {exc}") from exc
        except RedisError as exc:
            raise GraphStoreError(f"falkordb: {exc}") from exc
        except TimeoutError as exc:
            raise GraphUnavailable(f"{where}: no answer within {self._timeout}s") from exc

    @staticmethod
    def _rows(result: Any) -> list[dict[str, Any]]:
        names = [column[1] for column in result.header]
        return [{n: plain(v) for n, v in zip(names, row, strict=True)} for row in result.result_set]

    async def write(self, cypher: str, params: dict[str, Any]) -> WriteOutcome:
        async with self._write_lock:
            result = await self._run(cypher, params, read_only=False)
        await self._replicated()
        return WriteOutcome(self._rows(result), int(result.nodes_created), int(result.relationships_created))

    async def _replicated(self) -> None:
        """With replicas: return once they applied the write just made (or were waited for long enough)."""
        if self._replicas is not None:
            await self._replicas.confirm(self._client)

    async def write_many(self, writes: Sequence[tuple[str, dict[str, Any]]]) -> list[WriteOutcome | GraphStoreError]:
        """Run several writes in one MULTI/EXEC: one round trip, one append-only-file entry, so with
        ``appendfsync always`` one fsync covers them all before any is acknowledged.

        Each ``GRAPH.QUERY`` stays atomic on its own and sees the ones before it (the server runs a
        transaction's queries one after another); one that fails is rolled back alone and its error
        is its own result, the others commit (a Redis transaction does not abort on a command's error).
        """
        if not writes:
            return []
        async with self._write_lock:
            try:
                async with asyncio.timeout(self._timeout):
                    pipe = self._client.pipeline(transaction=True)
                    for cypher, params in writes:
                        pipe.execute_command("GRAPH.QUERY", self._graph_name,
                                             self._graph._build_params_header(params) + cypher, "--compact")
                    replies = await pipe.execute(raise_on_error=False)
                    outcomes = [await self._outcome(reply) for reply in replies]
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                raise GraphUnavailable(f"{self._where}: {exc}") from exc
            except RedisError as exc:  # the transaction itself failed (e.g. refused before EXEC)
                raise GraphStoreError(f"falkordb: {exc}") from exc
            except TimeoutError as exc:
                raise GraphUnavailable(f"{self._where}: no answer within {self._timeout}s") from exc
        await self._replicated()  # outside the lock: the next group goes to the primary meanwhile
        return outcomes

    async def _outcome(self, reply: Any) -> WriteOutcome | GraphStoreError:
        if isinstance(reply, Exception):
            return GraphStoreError(f"falkordb: {reply}")
        result = QueryResult(self._graph)
        await result.parse(reply)
        return WriteOutcome(self._rows(result), int(result.nodes_created), int(result.relationships_created))

    async def read(self, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """On a replica while they apply every write in time (the next one if one does not answer), else here."""
        if self._replicas is not None and self._replicas.in_step:
            for where, replica in self._replicas.order():
                try:
                    return self._rows(await self._run_on(AsyncGraph(replica, self._graph_name), where, cypher, params,
                                                         read_only=True))
                except GraphUnavailable as exc:
                    log.warning("graph.replica_unavailable %s; the next replica, else the primary", exc)
        return self._rows(await self._run(cypher, params, read_only=True))

    def schema_statements(self) -> list[str]:
        return [f"CREATE INDEX FOR (n:{label}) ON (n.{prop})" for label, prop in _INDEXES]

    async def ensure_schema(self) -> None:
        for statement in self.schema_statements():
            try:
                await self._run(statement, {}, read_only=False)
            except GraphStoreError as exc:
                if "already indexed" not in str(exc):
                    raise

    async def clear(self) -> None:
        async with self._write_lock:
            await self._run(CLEAR, {}, read_only=False)
        await self._replicated()

    async def compact(self, timeout: float, poll: float) -> bool:
        """BGREWRITEAOF, waited for: the append-only file is rewritten from the graphs as they are now,
        so deleted nodes (and the queries that wrote them) are no longer in it. A rewrite already
        running may have started before the deletion, so it is waited out and a new one started.
        Replicas keep files of their own: each is rewritten the same way after the primary.

        FalkorDB also keeps the graph's recent queries, parameters included, in a stream
        (``telemetry{graph}``, found by grepping the rewritten file): it is deleted first (on the
        primary; the deletion reaches the replicas as any write does).
        """
        try:
            await self._client.delete(f"telemetry{{{self._graph_name}}}")
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise GraphUnavailable(f"{self._where}: {exc}") from exc
        servers = [(self._where, self._client)]
        if self._replicas is not None:
            await self._replicated()
            servers += self._replicas.order()
        for where, conn in servers:
            await _rewrite_aof(conn, where, timeout, poll)
        return True

    async def close(self) -> None:
        if self._owns_connection:  # a space's driver borrows the connection of the store's
            await self._client.aclose()
            if self._replicas is not None:
                await self._replicas.close()
            if self._pool is not None:  # a pool given to the client is not closed with it
                await self._pool.disconnect()


async def _rewrite_aof(conn: Any, where: str, timeout: float, poll: float) -> None:
    """Start an append-only file rewrite on one server (waiting out one already running) and wait for it."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    await conn.execute_command("BGREWRITEAOF")
                    break
                except ResponseError as exc:
                    if "already in progress" not in str(exc):
                        raise
                await _rewrite_done(conn, poll)
            await _rewrite_done(conn, poll)
            info = await conn.info("persistence")
    except TimeoutError as exc:
        raise GraphUnavailable(f"{where}: the append-only file rewrite took over {timeout}s") from exc
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise GraphUnavailable(f"{where}: {exc}") from exc
    except RedisError as exc:
        raise GraphStoreError(f"falkordb: {exc}") from exc
    if (status := info.get("aof_last_bgrewrite_status")) != "ok":
        raise GraphStoreError(f"falkordb: the append-only file rewrite at {where} failed ({status})")


async def _rewrite_done(conn: Any, poll: float) -> None:
    while True:
        info = await conn.info("persistence")
        if not int(info.get("aof_rewrite_in_progress", 0)) and not int(info.get("aof_rewrite_scheduled", 0)):
            return
        await asyncio.sleep(poll)
