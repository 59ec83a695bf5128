"""Providers that talk to a real model: each method renders its prompt template and makes one call.

Subclasses supply the transport: ``_call_tool`` (a structured result,
validated by the given function) and ``_call_text`` (plain text).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

from mnemonet.llm.base import CandidatePair, Extraction, PairJudgement, ParsedClaim, Triple, WrittenAnswer
from mnemonet.llm.prompts import PromptLibrary, RenderedPrompt
from mnemonet.llm.provider import BaseLanguageModel
from mnemonet.llm.validation import (
    cardinality_from,
    checked_reply_text,
    citations,
    extraction_from,
    inferred_from,
    judgements_from,
    parsed_claim_from,
)
from mnemonet.settings import Settings
from mnemonet.truth.vocabulary import PredicateCardinality

T = TypeVar("T")
Validator = Callable[[Any], T]


class PromptedLanguageModel(BaseLanguageModel):
    """Maps each ``LanguageModel`` method onto its template in ``prompts/``."""

    def __init__(self, settings: Settings, prompts: PromptLibrary | None = None) -> None:
        super().__init__(settings)
        self.prompts = prompts or PromptLibrary(settings.prompts_dir)

    @abstractmethod
    async def _call_tool(self, prompt: RenderedPrompt, validate: Validator[T]) -> T:
        """One call whose structured result (a JSON object) is passed through ``validate``."""

    @abstractmethod
    async def _call_text(self, prompt: RenderedPrompt) -> str:
        """One call returning plain text."""

    async def _extract_observation(self, text: str, source: str, day: date | None, infer: bool) -> Extraction:
        said_on = (day or date.today()).isoformat()  # relative dates ("yesterday") are read from this day
        prompt = self.prompts.render("translator/observe", text=text, source=source, said_on=said_on, infer=infer)
        return await self._call_tool(prompt, lambda d: extraction_from(d, self.settings))

    async def _parse_claim(self, text: str, source: str) -> ParsedClaim:
        prompt = self.prompts.render("translator/claim", text=text, source=source)
        return await self._call_tool(prompt, lambda d: parsed_claim_from(d, self.settings))

    async def _infer_claims(self, text: str, source: str) -> list[Triple]:
        prompt = self.prompts.render("inference/claims", text=text, source=source)
        return await self._call_tool(prompt, lambda d: inferred_from(d, self.settings))

    async def _judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]:
        prompt = self.prompts.render("validation/judge_pairs", pairs=[p.model_dump() for p in pairs])
        return await self._call_tool(prompt, lambda d: judgements_from(d, len(pairs)))

    async def _answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer:
        prompt = self.prompts.render("translator/answer", query=query, memory=memory)
        text = checked_reply_text(await self._call_text(prompt), "answer", self.settings)
        return WrittenAnswer(text=text, cited=citations(text, [mid for mid, _ in memory]))

    async def _summarise(self, concept: str, statements: list[str], previous: str | None) -> str:
        prompt = self.prompts.render("consolidation/summarise", concept=concept, statements=statements,
                                     previous=previous)
        return checked_reply_text(await self._call_text(prompt), "summary", self.settings)

    async def _predicate_cardinality(self, predicate: str, examples: list[str]) -> PredicateCardinality:
        prompt = self.prompts.render("validation/cardinality", predicate=predicate, examples=examples)
        return await self._call_tool(prompt, cardinality_from)
