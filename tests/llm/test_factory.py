"""Provider selection from settings and the environment."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mnemonet.llm import (
    AnthropicLanguageModel,
    OfflineLanguageModel,
    OpenAICompatibleLanguageModel,
    make_language_model,
)
from mnemonet.settings import Settings


async def test_default_is_offline_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("MNEMONET_LLM", raising=False)
    assert isinstance(make_language_model(Settings()), OfflineLanguageModel)


async def test_default_is_anthropic_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("MNEMONET_LLM", raising=False)
    llm = make_language_model(Settings())
    assert isinstance(llm, AnthropicLanguageModel) and llm.name.startswith("anthropic:")
    await llm.aclose()


async def test_explicit_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("MNEMONET_LLM", "openai")
    llm = make_language_model(Settings())
    assert isinstance(llm, OpenAICompatibleLanguageModel)
    await llm.aclose()
    assert isinstance(make_language_model(Settings(llm="offline")), OfflineLanguageModel)


async def test_anthropic_without_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="api_key: the Anthropic provider needs ANTHROPIC_API_KEY"):
        make_language_model(Settings(llm="anthropic"))


def test_an_offline_node_never_imports_the_anthropic_sdk() -> None:
    # A fresh interpreter: this test process has imported the SDK already (the import above).
    probe = (
        "import sys\n"
        "from mnemonet.llm import make_language_model\n"
        "from mnemonet.node.peer_node import PeerNode\n"
        "from mnemonet.settings import Settings\n"
        "make_language_model(Settings(llm='offline'))\n"
        "assert 'anthropic' not in sys.modules, 'the Anthropic SDK was imported'\n"
        "from mnemonet.llm import AnthropicLanguageModel\n"
        "assert 'anthropic' in sys.modules and AnthropicLanguageModel.__name__ == 'AnthropicLanguageModel'\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
