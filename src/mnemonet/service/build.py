"""Assembles a ``MemoryService`` for a store node from settings and its language model and embedder."""

from __future__ import annotations

import hashlib

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel
from mnemonet.service.memory import MemoryService
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.jobs import Coordination, Jobs
from mnemonet.store.vectors import VectorStore


def shared_queue(settings: Settings) -> bool:
    """Whether rows waiting to be indexed go in the shared queue (``index_queue``; auto: a PostgreSQL server)."""
    return settings.index_queue == "shared" or (settings.index_queue == "auto" and bool(settings.database_url))


async def set_up_graph(jobs: Jobs, graph: GraphStore, key: str) -> bool:
    """Create the graph's indexes once across the store nodes (``jobs`` ledger, under its lock); True if this
    call did. The key names the graph and the DDL itself, so a version with new indexes sets them up again."""
    ddl = hashlib.sha256("\n".join(graph.driver.schema_statements()).encode()).hexdigest()[:12]
    ran, _ = await jobs.once(f"schema:{key}:{ddl}", "schema", graph.ensure_indexes)
    return ran


async def build_memory_service(
    settings: Settings, llm: LanguageModel, embedder: Embedder, *, vector_schema: str | None = None
) -> MemoryService:
    """Open the graph and vector stores (embedded ones start here) and check the embedder fits the index.

    ``llm`` and ``embedder`` are local providers or p2p proxies to peers that have them. The graph's
    schema is set up once across the store nodes sharing the databases (``store/jobs.py``). The vector
    index is in ``vector_schema`` (the setting of that name unless given).
    """
    graph = await GraphStore.open(settings)
    try:
        vectors = await VectorStore.open(settings, schema=vector_schema or settings.vector_schema)
    except BaseException:
        await graph.close()
        raise
    try:
        coordination = Coordination.of(vectors, shared_queue(settings))
        await set_up_graph(coordination.jobs, graph, f"graph:{settings.graph_name}")
        await vectors.ensure_model(embedder.model, embedder.dimension)
    except BaseException:
        await vectors.close()
        await graph.close()
        raise
    return MemoryService(graph, vectors, llm, embedder, settings, coordination=coordination)
