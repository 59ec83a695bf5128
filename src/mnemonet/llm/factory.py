"""Choose the language model from settings: ``MNEMONET_LLM=anthropic|openai|offline``."""

from __future__ import annotations

import os

from mnemonet.llm.base import LanguageModel
from mnemonet.llm.offline.model import OfflineLanguageModel
from mnemonet.llm.openai_model import OpenAICompatibleLanguageModel
from mnemonet.llm.prompts import PromptLibrary
from mnemonet.settings import Settings


def provider_choice(settings: Settings) -> str:
    """``settings.llm`` when set, else anthropic when ``ANTHROPIC_API_KEY`` is set, else offline."""
    if settings.llm:
        return settings.llm
    return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "offline"


def make_language_model(settings: Settings, *, prompts: PromptLibrary | None = None) -> LanguageModel:
    """The configured provider. Prompt templates load here, once (small files, at startup)."""
    choice = provider_choice(settings)
    if choice == "offline":
        return OfflineLanguageModel(settings)
    if choice == "anthropic":
        from mnemonet.llm.anthropic_model import AnthropicLanguageModel  # the SDK's import is slow: only here

        return AnthropicLanguageModel(settings, api_key=os.environ.get("ANTHROPIC_API_KEY", ""), prompts=prompts)
    return OpenAICompatibleLanguageModel(settings, prompts=prompts)
