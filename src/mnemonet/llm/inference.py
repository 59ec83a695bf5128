"""``infer`` without a memory: the claims a language model draws from a text alone."""

from __future__ import annotations

from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import InferredClaim


class ModelInference:
    """``MemoryAPI.infer`` served by a language model: its triples as claim sentences.

    What an llm node without a store answers; a store node answers ``infer`` itself.
    """

    def __init__(self, llm: LanguageModel) -> None:
        self._llm = llm

    async def infer(
        self, observation_text: str, source: str = "user", *, space: str | None = None
    ) -> list[InferredClaim]:
        """Claims inferred from ``observation_text`` said by ``source``."""
        # Inference from text alone reads no memory: the space changes nothing here.
        triples = await self._llm.infer_claims(observation_text, source)
        return [
            InferredClaim(
                text=f"{t.subject} {'not ' if t.negated else ''}{t.predicate.replace('_', ' ')} {t.object}",
                confidence=t.confidence,
            )
            for t in triples
        ]
