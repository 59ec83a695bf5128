"""Relations by meaning: a predicate outside the vocabulary is read as the relation it means, remembered.

A free predicate ("has_new_manager", "is_employed_at", from any model) is compared with the phrases of
the vocabulary's relations and aliases by their embeddings (``truth.vocabulary.nearest_relation``):
near enough, and nearer than to any other relation, it is that relation; otherwise it means itself.
The mapping is recorded once as the ``Predicate`` node's ``relation`` (the first stands), so it is
visible, shared by every reader, and grows as new phrasings appear. The validation worker asks for
it (``predicate_profile``), off the write path; answers read what is recorded.
"""

from __future__ import annotations

import logging

from mnemonet.model.errors import Timeout, Unavailable
from mnemonet.service.context import ServiceContext
from mnemonet.truth.vocabulary import nearest_relation

log = logging.getLogger(__name__)


class Relations:
    """Finds and remembers which vocabulary relation a predicate means."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx
        self._phrases: dict[str, tuple[str, list[float]]] | None = None

    async def relation(self, predicate: str) -> str:
        """The relation ``predicate`` means (its canonical name when the vocabulary knows it); itself when
        it means none, or when no embedder answers (then nothing is recorded, and it is asked again later)."""
        ctx = self._ctx
        if ctx.vocabulary.known(predicate):
            return ctx.vocabulary.canonical(predicate)
        recorded = await ctx.graph.predicate_relations([predicate])
        if predicate in recorded:
            return recorded[predicate]
        try:
            phrases = await self._phrase_vectors()
            [vector] = await ctx.embedder.embed([predicate.replace("_", " ")], "query")
        except (Unavailable, Timeout) as exc:
            log.info("relation of %s not found now: %s", predicate, str(exc)[:200])
            return predicate
        settings = ctx.settings
        found, similarity = nearest_relation(vector, phrases, settings.relation_min_similarity,
                                             settings.relation_min_margin)
        return await ctx.graph.record_predicate_relation(predicate, found or predicate, similarity,
                                                         ctx.embedder.model)

    async def _phrase_vectors(self) -> dict[str, tuple[str, list[float]]]:
        if self._phrases is None:
            phrases = self._ctx.vocabulary.phrases()
            vectors = await self._ctx.embedder.embed(list(phrases), "query")
            self._phrases = {p: (phrases[p], v) for p, v in zip(phrases, vectors, strict=True)}
        return self._phrases
