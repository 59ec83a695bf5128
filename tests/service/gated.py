"""An embedder that holds its calls until a test lets them through."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from mnemonet.embed.base import Embedder, EmbedKind


class GatedEmbedder:
    """Wraps a real embedder; every call waits until ``open`` is set (``calls`` counts them as they start)."""

    def __init__(self, inner: Embedder) -> None:
        self.model, self.dimension, self.computes_locally = inner.model, inner.dimension, inner.computes_locally
        self._inner = inner
        self.open = asyncio.Event()
        self.calls = 0
        self.started = asyncio.Event()

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        self.calls += 1
        self.started.set()
        await self.open.wait()
        return await self._inner.embed(texts, kind)
