"""Assembles a ``MemoryService`` for a store node from settings and its language model and embedder."""

from __future__ import annotations

from mnemonet.embed.base import Embedder
from mnemonet.llm.base import LanguageModel
from mnemonet.service.memory import MemoryService
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.vectors import VectorStore


async def build_memory_service(
    settings: Settings, llm: LanguageModel, embedder: Embedder, *, vector_schema: str = "mnemonet"
) -> MemoryService:
    """Open the graph and vector stores (embedded ones start here) and check the embedder fits the index.

    ``llm`` and ``embedder`` are local providers or p2p proxies to peers that have them.
    """
    graph = await GraphStore.open(settings)
    try:
        await graph.ensure_indexes()
        vectors = await VectorStore.open(settings, schema=vector_schema)
    except BaseException:
        await graph.close()
        raise
    try:
        await vectors.ensure_model(embedder.model, embedder.dimension)
    except BaseException:
        await vectors.close()
        await graph.close()
        raise
    return MemoryService(graph, vectors, llm, embedder, settings)
