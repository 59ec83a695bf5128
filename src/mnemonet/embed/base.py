"""The embedding interface every provider (and the p2p proxy to an embed peer) satisfies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

EmbedKind = Literal["query", "passage"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors; ``kind`` lets asymmetric models prefix queries."""

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def computes_locally(self) -> bool:
        """True when embedding runs on this machine's cores, which the databases need too."""
        ...

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]: ...
