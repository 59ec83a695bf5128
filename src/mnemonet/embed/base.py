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
    def query_takes_all_cores(self) -> bool:
        """True when embedding a query takes every core of this machine, which the databases need too: search
        then embeds the query before its database reads, not beside them."""
        ...

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]: ...
