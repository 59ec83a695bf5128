"""Errors raised by embedding providers."""

from __future__ import annotations


class EmbeddingError(RuntimeError):
    """An embedding provider failed or replied with something unusable (after any retries)."""
