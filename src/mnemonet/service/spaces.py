"""``SpacedMemory``: the memory of a store node, one ``MemoryService`` per memory space.

Each space has a graph of its own (a FalkorDB graph key) and a vector index of
its own (a PostgreSQL schema: table, HNSW index, keyword statistics), opened on
the default space's connections. Isolation is therefore in every query by
construction: a search, a concept get-or-create, a worker's contradiction
candidates or a summary's basis can only ever see the space it runs in. The
registry of spaces lives in the default space's graph (``Space`` nodes).

The default space is the store as it was before spaces existed (same graph
key, same schema), so old data reads as ``default`` with no migration.

Several store nodes may serve the same databases: a space is created and
erased under a lock in PostgreSQL (``store/jobs.py``), so two nodes never
race one; each node re-reads the registry of a space it has open at most
``space_registry_refresh`` seconds after it last did, so a space erased
through another node is closed here too.

A space erased whole races no write: its write gate is retired (a write still
holding it is refused) and those under way finish; then, under its
``erasing`` lock, its queued entries are cancelled, the tombstone recorded,
the rows other nodes hold in the shared index queue awaited, and its graph,
schema and shared queue rows dropped (``_drop``). The erasure is in the
``erasure_ledger``: one cut short, on any node, is finished by the next under
the same tombstone.

A space may live on other engine servers than the default ones
(``engine_servers``, ``space_placement``): its graph on another FalkorDB, its
schema in another PostgreSQL database. Where a space is created is read from
the placement map then and recorded with it in the registry, so every store
node opens it there (and one that does not know that server says so). The
job ledger and the index queue stay in the default database.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import ForgetReport
from mnemonet.model.errors import Conflict, InvalidInput, NotFound
from mnemonet.model.ids import derived_id
from mnemonet.model.records import check_name
from mnemonet.model.spaces import DEFAULT_SPACE, SpaceView, check_space
from mnemonet.model.views import TombstoneView
from mnemonet.service.build import set_up_graph
from mnemonet.service.erasure_ledger import ErasureLedger
from mnemonet.service.memory import MemoryService
from mnemonet.settings import EngineServer, Settings
from mnemonet.store import vector_erase
from mnemonet.store.errors import DependencyUnavailable
from mnemonet.store.graph import GraphStore
from mnemonet.store.vectors import VectorStore

log = logging.getLogger(__name__)

# Methods about the node's credentials and audit trail, not about one space's memories.
_GLOBAL = frozenset({"revoke_token", "revoked_tokens", "record_audit", "audit_log"})
# PostgreSQL cuts identifiers at 63 bytes: two spaces whose schema names agree that far would share one.
_PG_IDENTIFIER_MAX = 63


def space_key(base: str, space: str) -> str:
    """The graph key / schema name of ``space`` next to the default space's ``base``."""
    return base if space == DEFAULT_SPACE else f"{base}__{space}"


class SpacedMemory:
    """``MemoryAPI`` over many spaces: every per-space method takes ``space`` (default ``default``)
    and runs in that space's ``MemoryService``; spaces are created, listed and deleted here."""

    def __init__(self, default: MemoryService) -> None:
        self.default = default
        self.settings = default.settings
        self._open: dict[str, MemoryService] = {DEFAULT_SPACE: default}
        self._checked: dict[str, float] = {}  # when each open space was last found in the registry (monotonic)
        # Connections to the engine servers spaces are placed on (engine_servers), opened on first use.
        self._servers: dict[str, tuple[GraphStore, VectorStore]] = {}
        self._lock = asyncio.Lock()
        self._let_read_shares(default)

    # -- spaces -----------------------------------------------------------------

    async def memory(self, space: str | None = None) -> MemoryService:
        """The memory of an existing space; ``NotFound`` if no admin created it."""
        name = DEFAULT_SPACE if space is None else check_space(space)
        found = self._open.get(name)
        if found is not None and (name == DEFAULT_SPACE or time.monotonic() - self._checked.get(name, 0.0)
                                  < self.settings.space_registry_refresh):
            return found
        async with self._lock:
            registered = {r["name"]: r for r in await self.default.graph.registered_spaces()}.get(name)
            if registered is None:
                if self._open.pop(name, None) is not None:  # erased through another store node
                    log.info("space closed name=%s: no longer registered", name)
                raise NotFound(f"space: no space {name!r} (an admin token creates it: create_space)")
            self._checked[name] = time.monotonic()
            if name not in self._open:
                self._open[name] = await self._open_space(name, registered["server"])
            return self._open[name]

    async def _engines(self, name: str, server: str) -> tuple[GraphStore, VectorStore]:
        """The graph and vector stores whose connections space ``name`` on engine server ``server`` borrows."""
        if not server:
            return self.default.graph, self.default.vectors
        if server not in self._servers:
            placed = self.settings.engine_servers.get(server)
            if placed is None:
                raise DependencyUnavailable("graph", f"space {name!r} lives on engine server {server!r}, which this "
                                            "store node's engine_servers setting does not name")
            self._servers[server] = await _open_server(self.settings, placed, self.default)
            log.info("engine server opened name=%s for space=%s", server, name)
        return self._servers[server]

    async def _open_space(self, name: str, server: str) -> MemoryService:
        base = self.default
        schema = space_key(base.vectors.schema, name)
        if len(schema) > _PG_IDENTIFIER_MAX:
            raise InvalidInput(f"space: {name!r} makes the schema name {schema!r} longer than PostgreSQL allows")
        graph_base, vectors_base = await self._engines(name, server)
        graph = graph_base.for_space(space_key(self.settings.graph_name, name))
        coordination = base.coordination
        if coordination is None:
            await graph.ensure_indexes()
        else:  # once across the store nodes: a node opening a space another created finds it set up
            await set_up_graph(coordination.jobs, graph, _schema_key(name))
        vectors = await vectors_base.for_space(schema)
        await vectors.ensure_model(base.embedder.model, base.embedder.dimension)
        memory = MemoryService(graph, vectors, base.llm, base.embedder, self.settings, space=name,
                               coordination=None if coordination is None else coordination.for_space(name))
        memory.inference_runs = lambda: self.default.inference_runs()  # the workers serve every space
        return self._let_read_shares(memory)

    @contextlib.asynccontextmanager
    async def _exclusive(self, name: str) -> AsyncIterator[None]:
        """This node's lock, then (with other store nodes over the same databases) the space's lock in PostgreSQL."""
        async with self._lock:
            coordination = self.default.coordination
            if coordination is None:
                yield
                return
            async with coordination.jobs.exclusive(f"space:{name}"):
                yield

    def _let_read_shares(self, memory: MemoryService) -> MemoryService:
        async def shared() -> list[tuple[str, MemoryService]]:
            # Read from the registry each time: another store node on the same databases may change it.
            names = [row["source"] for row in await self.default.graph.shares() if row["target"] == memory.space]
            return [(name, await self.memory(name)) for name in names]

        memory.shared_spaces = shared
        return memory

    async def spaces(self) -> list[SpaceView]:
        """Every space, ``default`` first, each with the spaces shared into it."""
        rows = await self.default.graph.registered_spaces()
        reads: dict[str, list[str]] = {}
        for share in await self.default.graph.shares():
            reads.setdefault(share["target"], []).append(share["source"])
        return [SpaceView(name=DEFAULT_SPACE, reads=reads.get(DEFAULT_SPACE, [])),
                *(SpaceView(**r, reads=reads.get(r["name"], [])) for r in rows)]

    async def share_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Let space ``name`` read space ``reads`` (admin only): its searches and answers include what
        ``reads`` holds, marked with that space. Read-only (nothing written in ``name`` touches ``reads``;
        workers never link across) and not transitive (not on to what ``reads`` itself reads)."""
        name, reads = check_space(name, "name"), check_space(reads, "reads")
        if name == reads:
            raise InvalidInput("reads: a space reads itself already; name another space")
        await self.memory(name)
        await self.memory(reads)  # both must exist: NotFound names the missing one
        await self.default.graph.record_share(name, reads, by)
        log.info("space shared reader=%s reads=%s by=%s", name, reads, by)
        return await self._view(name)

    async def unshare_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Stop space ``name`` reading space ``reads`` (admin only); nothing changes if it did not."""
        name, reads = check_space(name, "name"), check_space(reads, "reads")
        await self.memory(name)
        if await self.default.graph.remove_share(name, reads):
            log.info("space unshared reader=%s reads=%s by=%s", name, reads, by)
        return await self._view(name)

    async def _view(self, name: str) -> SpaceView:
        return next(view for view in await self.spaces() if view.name == name)

    async def create_space(self, name: str, by: str = "local") -> SpaceView:
        """Create a space (admin only); creating one that exists returns it unchanged."""
        name = check_space(name, "name")
        if name == DEFAULT_SPACE:
            return SpaceView(name=DEFAULT_SPACE)
        async with self._exclusive(name):
            existing = {r["name"]: r for r in await self.default.graph.registered_spaces()}
            if name in existing:
                return SpaceView(**existing[name])
            if len(existing) >= self.settings.spaces_max:
                raise Conflict(f"name: this store already holds {len(existing)} spaces (setting spaces_max)")
            # Where it lives: the placement map's server, recorded with it (every node then opens it there).
            server = self.settings.space_placement.get(name, "")
            # A new space starts empty, whatever a failed delete or a write racing one left under its name.
            fresh = await self._open_space(name, server)
            async with fresh.erasing:
                await self._drop(fresh)
            await self._forget_set_up(name)
            # Opened (the graph's indexes, the schema) before it is registered: a registered space is usable.
            memory = await self._open_space(name, server)
            row = await self.default.graph.record_space(name, by, server)
            self._open[name] = memory
            self._checked[name] = time.monotonic()
        log.info("space created name=%s by=%s", name, by)
        return SpaceView(**row)

    async def delete_space(self, name: str, by: str = "local") -> bool:
        """Delete a space and everything in it (admin only): the erasure of ``forget(whole_space=True)``,
        compacted and tombstoned; False if there was none."""
        return (await self._erase_space(check_space(name, "name"), by)).tombstone_id is not None

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local", *,
        whole_space: bool = False, space: str | None = None,
    ) -> ForgetReport:
        """``MemoryService.forget`` in ``space``; with ``whole_space``, erase that space itself (admin only).

        A whole space goes as a deleted space does (its graph and vector schema dropped, its shares
        ended, unregistered), then both engines' files are compacted as ``forget`` of a source does, so
        its bytes are gone; a tombstone in the default space says which space, how many of each, when
        and by whom. Erasing a space that is not there (a retry) removes nothing and writes no tombstone.
        """
        if not whole_space:
            return await (await self.memory(space)).forget(observation_id, source, by)
        if observation_id is not None or source is not None:
            raise InvalidInput("forget: whole_space erases the space named by space; give no observation_id or source")
        if space is None or check_space(space) == DEFAULT_SPACE:
            raise InvalidInput("space: name the space to erase; the default space cannot be erased whole "
                               "(it holds the registry of spaces and the tombstones)")
        return await self._erase_space(space, by)

    async def _erase_space(self, name: str, by: str) -> ForgetReport:
        who = check_name(by, "by")
        if name == DEFAULT_SPACE:
            raise InvalidInput("name: the default space cannot be deleted (clear empties it)")
        coordination = self.default.coordination
        ledger = ErasureLedger(coordination.jobs if coordination else None, f"erase-space:{name}")
        async with self._exclusive(name):
            registered = {r["name"]: r for r in await self.default.graph.registered_spaces()}.get(name)
            if registered is None:
                return ForgetReport(kind="space", space=name, at=_now_ms(), by=who)
            memory = self._open.pop(name, None) or await self._open_space(name, registered["server"])
            await memory.usage.close()  # its pending use counts land before the drop, not after it
            # A write still holding this memory is refused from now on (never written into a dropped graph);
            # those under way finish first, and the counts are taken with nothing writing.
            memory.writes.retire(f"space: {name!r} is erased")
            async with memory.writes.excluding(None, self.settings.forget_drain_wait), memory.erasing:
                await memory.indexer.others_settled()  # other nodes' rows written before they are counted
                cancelled = memory.indexer.cancel()  # queued behind their writes: never written
                unwritten = await memory.vectors.ids_missing(cancelled) if cancelled else []
                # One tombstone per space created: a retry after a failure below finds it and writes none.
                tombstone_id = derived_id("tomb", "space", name, str(registered["created_at"]))
                owed = await ledger.unfinished()
                if owed is not None and owed.tombstone_id == tombstone_id:  # cut short, maybe after the drop
                    report = owed
                    await ledger.begin(report)  # taken up again (``starts`` counts it)
                else:
                    held = await memory.graph.counts()
                    report = ForgetReport(
                        kind="space", space=name, tombstone_id=tombstone_id, observations=held["Observation"],
                        statements=held["Statement"], concepts=held["Concept"], retractions=held["Retraction"],
                        sources=held["Source"], vectors=await memory.vectors.count() + len(unwritten),
                        at=_now_ms(), by=who,
                    )
                    await ledger.begin(report)
                tombstone = TombstoneView(id=tombstone_id, **report.model_dump(
                    include=set(TombstoneView.model_fields) - {"id"}))
                # Recorded first, unregistered last: if a drop or a compaction fails (a rewrite past
                # forget_compaction_timeout, a store node killed) the space stays listed, and erasing it
                # again, through any store node, finishes the job under the same tombstone.
                await self.default.graph.forget(tombstone, {})
                await self._drop(memory)
            await self.default.graph.remove_shares_of(name)
            # The dropped graph's query log (telemetry stream) goes with the rewrite; then the dropped
            # schema's files and the log segments that held its rows.
            graph_compacted = await memory.graph.compact()
            if memory.indexer.queue is not None:  # the shared queue held the space's texts for a while
                await memory.indexer.queue.compact()
            vectors_compacted = await vector_erase.flush_log(memory.vectors)
            await self._forget_set_up(name)
            await self.default.graph.unregister_space(name)
            await ledger.end()
        log.warning("space erased name=%s observations=%d statements=%d by=%s", name, report.observations,
                    report.statements, who)
        return report.model_copy(update={"graph_compacted": graph_compacted, "vectors_compacted": vectors_compacted})

    @staticmethod
    async def _drop(memory: MemoryService) -> None:
        """Drop ``memory``'s graph, vector schema and queued rows; the caller holds ``memory.erasing``.

        Its queued entries are cancelled (never written into the dropped schema), and with the shared
        queue the rows every node queued for the space go too.
        """
        await memory.indexer.others_settled()  # another node's row would be written into the dropped schema
        memory.indexer.cancel()
        await memory.graph.drop()
        await memory.vectors.drop()
        if memory.indexer.queue is not None:  # rows a write racing the drop queued
            await memory.indexer.queue.drop_space()

    async def _forget_set_up(self, name: str) -> None:
        """Drop the ledger's record of the space's schema set-up: a space made again under its name sets it up."""
        if self.default.coordination is not None:
            await self.default.coordination.jobs.forget_jobs(f"schema:{_schema_key(name)}:")

    # -- the store node's own calls ---------------------------------------------

    @property
    def graph(self) -> GraphStore:
        """The default space's graph store (it owns the connection every space's borrows)."""
        return self.default.graph

    @property
    def vectors(self) -> VectorStore:
        """The default space's vector store (it owns the pool every space's borrows)."""
        return self.default.vectors

    @property
    def llm(self) -> LanguageModel:
        """The language model every space uses."""
        return self.default.llm

    @llm.setter
    def llm(self, llm: LanguageModel) -> None:
        for memory in self._open.values():
            memory.llm = llm

    @property
    def llm_calls(self) -> Counter[str]:
        """Language-model calls by purpose, over every open space."""
        return sum((memory.llm_calls for memory in self._open.values()), Counter())

    async def health(self, timeout: float) -> dict[str, dict[str, Any]]:
        return await self.default.health(timeout)

    async def sync_vectors(self, limit: int = 500) -> int:
        """``MemoryService.sync_vectors`` in every space: with other store nodes over the same databases, one
        pass per space per ``vector_sync_interval`` among them all (the job ledger)."""
        total = 0
        for view in await self.spaces():
            memory = await self.memory(view.name)
            coordination = memory.coordination
            if coordination is None:
                total += await memory.sync_vectors(limit)
                continue
            ran, indexed = await coordination.jobs.periodic(
                f"vector-sync:{view.name}", "vector-sync", self.settings.vector_sync_interval,
                lambda memory=memory: memory.sync_vectors(limit))  # type: ignore[misc]
            total += indexed or 0
        return total

    async def take_over_index(self) -> int:
        """Index the queued rows other store nodes left when their lease ran out (they died or stalled past
        ``index_lease``), in every space that has some; how many rows this node took."""
        queue = self.default.indexer.queue
        if queue is None:
            return 0
        taken = 0
        registered = {DEFAULT_SPACE} | {r["name"] for r in await self.default.graph.registered_spaces()}
        for name in await queue.lapsed_spaces():
            if name in registered:  # rows of an erased space went with it (``_drop``)
                taken += await (await self.memory(name)).indexer.take_over()
        return taken

    async def close(self) -> None:
        for memory in list(self._open.values()):  # deferred vectors and use counts, while the connections are open
            await memory.indexer.close()
            await memory.usage.close()
        # A space's stores borrow the default's connections (or a placed server's): closing those closes them all.
        await self.default.close()
        for graph, vectors in self._servers.values():
            if vectors is not self.default.vectors:
                await vectors.close()
            if graph is not self.default.graph:
                await graph.close()

    # -- MemoryAPI: every other method runs in the space it names -----------------

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(MemoryService, name, None)
        if name.startswith("_") or not inspect.iscoroutinefunction(method):
            raise AttributeError(name)

        async def call(*args: Any, space: str | None = None, **kwargs: Any) -> Any:
            memory = self.default if name in _GLOBAL else await self.memory(space)
            return await getattr(memory, name)(*args, **kwargs)

        call.__name__ = name
        return call


async def _open_server(
    settings: Settings, placed: EngineServer, default: MemoryService
) -> tuple[GraphStore, VectorStore]:
    """Connections to an engine server spaces are placed on; a part it does not name is the default's."""
    graph = default.graph
    if placed.falkordb:
        host, _, port = placed.falkordb.rpartition(":")
        graph = GraphStore.on_falkordb(settings, host, int(port), placed.falkordb_password or None)
    vectors = default.vectors
    if placed.database_url:
        try:
            vectors = await VectorStore.open(settings.model_copy(update={"database_url": placed.database_url}),
                                             schema=default.vectors.schema, tables=False)
        except BaseException:
            if graph is not default.graph:
                await graph.close()
            raise
    return graph, vectors


def _schema_key(space: str) -> str:
    return f"space:{space}"


def _now_ms() -> int:
    return int(time.time() * 1000)
