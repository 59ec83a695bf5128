"""Errors the language layer raises; the boundary (HTTP, RPC, CLI) translates them."""

from __future__ import annotations


class LanguageModelError(RuntimeError):
    """A language-model call failed: transport, retries exhausted, or a malformed result."""


class PromptError(ValueError):
    """A prompt template is missing, malformed, or was rendered with a missing variable."""
