"""Errors the language layer raises; the boundary (HTTP, RPC, CLI) translates them."""

from __future__ import annotations

from mnemonet.model.errors import MnemonetError, ProviderFailed, Unavailable


class LanguageModelError(ProviderFailed, RuntimeError):
    """A language-model call failed: transport, retries exhausted, or a malformed result."""


class LanguageModelUnavailable(Unavailable, LanguageModelError):
    """No model answered: the provider down or rate limited past its retries, or no llm peer.

    Unlike a malformed result, trying again later may succeed: ``observe`` keeps the
    observation and leaves its extraction pending.
    """

    code = "model_unavailable"


class PromptError(MnemonetError, ValueError):
    """A prompt template is missing, malformed, or was rendered with a missing variable: a deployment fault (500)."""
