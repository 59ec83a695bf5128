"""An embedder and a language model that hold their calls until a test lets them through."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.llm.base import Extraction, LanguageModel


class GatedEmbedder:
    """Wraps a real embedder; every call waits until ``open`` is set (``calls`` counts them as they start,
    ``texts`` holds every text they embedded)."""

    def __init__(self, inner: Embedder) -> None:
        self.model, self.dimension = inner.model, inner.dimension
        self.query_takes_all_cores = inner.query_takes_all_cores
        self._inner = inner
        self.open = asyncio.Event()
        self.calls = 0
        self.started = asyncio.Event()
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        self.calls += 1
        self.started.set()
        await self.open.wait()
        self.texts.extend(texts)
        return await self._inner.embed(texts, kind)


class GatedExtraction:
    """Wraps a real language model; an extraction of a text containing ``word`` waits until ``open`` is set
    (``started`` once one does). Every other call goes straight through."""

    def __init__(self, inner: LanguageModel, word: str) -> None:
        self._inner = inner
        self._word = word
        self.open = asyncio.Event()
        self.started = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        if self._word in text:
            self.started.set()
            await self.open.wait()
        return await self._inner.extract_observation(text, source, said_at, infer)
