"""Language-model providers, prompt templates and the NL <-> triples translation."""

from mnemonet.llm.anthropic_model import AnthropicLanguageModel
from mnemonet.llm.base import (
    CandidatePair,
    Extraction,
    LanguageModel,
    PairJudgement,
    ParsedClaim,
    Triple,
    WrittenAnswer,
)
from mnemonet.llm.claims import parse_canonical_claim, render_claim
from mnemonet.llm.errors import LanguageModelError, PromptError
from mnemonet.llm.factory import make_language_model, provider_choice
from mnemonet.llm.offline.model import OfflineLanguageModel
from mnemonet.llm.openai_model import OpenAICompatibleLanguageModel
from mnemonet.llm.prompts import PromptLibrary, RenderedPrompt, fence

__all__ = [
    "AnthropicLanguageModel", "CandidatePair", "Extraction", "LanguageModel", "LanguageModelError",
    "OfflineLanguageModel", "OpenAICompatibleLanguageModel", "PairJudgement", "ParsedClaim", "PromptError",
    "PromptLibrary", "RenderedPrompt", "Triple", "WrittenAnswer", "fence", "make_language_model",
    "parse_canonical_claim", "provider_choice", "render_claim",
]
