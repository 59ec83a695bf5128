"""Language-model providers, prompt templates and the NL <-> triples translation."""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from mnemonet.llm.anthropic_model import AnthropicLanguageModel


def __getattr__(name: str) -> Any:
    # The Anthropic SDK takes ~1 s to import (most of `import mnemonet.llm` before this): only a node that
    # builds the Anthropic provider pays for it (bench/README.md, "import time").
    if name == "AnthropicLanguageModel":
        from mnemonet.llm.anthropic_model import AnthropicLanguageModel

        return AnthropicLanguageModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AnthropicLanguageModel", "CandidatePair", "Extraction", "LanguageModel", "LanguageModelError",
    "OfflineLanguageModel", "OpenAICompatibleLanguageModel", "PairJudgement", "ParsedClaim", "PromptError",
    "PromptLibrary", "RenderedPrompt", "Triple", "WrittenAnswer", "fence", "make_language_model",
    "parse_canonical_claim", "provider_choice", "render_claim",
]
