"""Errors raised by embedding providers."""

from __future__ import annotations

from mnemonet.model.errors import ProviderFailed


class EmbeddingError(ProviderFailed, RuntimeError):
    """An embedding provider failed or replied with something unusable (after any retries)."""
