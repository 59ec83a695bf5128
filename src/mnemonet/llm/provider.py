"""The common front of every provider: input checks, call counting, failure counting.

Subclasses implement the ``_``-prefixed methods; the public methods here
validate the caller's input (``ValueError`` naming the field, no call made)
and count each call in ``usage()["calls"]``, the figure the call-budget
tests read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable
from datetime import date, datetime
from typing import TypeVar

from mnemonet.llm.base import CandidatePair, Extraction, PairJudgement, ParsedClaim, Triple, WrittenAnswer
from mnemonet.llm.usage import Usage
from mnemonet.llm.validation import check_memory, check_pairs, check_statements
from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import check_name, check_text
from mnemonet.settings import Settings
from mnemonet.truth.vocabulary import PredicateCardinality, rule_cardinality

T = TypeVar("T")
_LAST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last instant a date can name


def said_on(said_at: int | None) -> date | None:
    """The local calendar day of ``said_at`` (epoch ms), the day relative dates are read from; None: unknown."""
    if said_at is None:
        return None
    if isinstance(said_at, bool) or not isinstance(said_at, int) or not 0 <= said_at <= _LAST_MS:
        raise InvalidInput("said_at: must be epoch milliseconds (an integer from 0 to year 9999)")
    return datetime.fromtimestamp(said_at / 1000).date()


class BaseLanguageModel(ABC):
    """Implements the ``LanguageModel`` Protocol's checks and counters around provider hooks."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._usage = Usage()

    @property
    @abstractmethod
    def name(self) -> str:
        """Shown to users."""

    def usage(self) -> dict[str, int]:
        """Counters: calls, tokens (input, output, cache creation/read), requests, retries, failures."""
        return self._usage.as_dict()

    async def aclose(self) -> None:  # noqa: B027 - an optional hook: most providers hold no client
        """Release network clients (nothing to release by default)."""

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        """Concepts and statements of one observation, its relative dates read from the day it was said;
        with ``infer`` its inferred claims too, in the same call."""
        text = check_text(text, "text", self.settings.max_text_chars)
        source = check_name(source, "source", self.settings.max_name_chars)
        if not isinstance(infer, bool):
            raise InvalidInput("infer: must be true or false")
        return await self._counted(self._extract_observation(text, source, said_on(said_at), infer))

    async def parse_claim(self, text: str, source: str) -> ParsedClaim:
        """The one triple a claim asserts."""
        text = check_text(text, "text", self.settings.max_text_chars)
        source = check_name(source, "source", self.settings.max_name_chars)
        return await self._counted(self._parse_claim(text, source))

    async def answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer:
        """Answer ``query`` from ``memory`` = [(id, one-line text)], citing the ids it rests on."""
        query = check_text(query, "query", self.settings.max_text_chars)
        memory = check_memory(memory, self.settings)
        return await self._counted(self._answer(query, memory))

    async def infer_claims(self, observation_text: str, source: str = "user") -> list[Triple]:
        """Claims the observation supports beyond its literal statements (may be empty); first person is
        ``source``, the observation's speaker."""
        text = check_text(observation_text, "observation_text", self.settings.max_text_chars)
        source = check_name(source, "source", self.settings.max_name_chars)
        return await self._counted(self._infer_claims(text, source))

    async def judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]:
        """One judgement per pair, in order. No pairs: no call, empty result."""
        checked = check_pairs(pairs, self.settings)
        if not checked:
            return []
        return await self._counted(self._judge_pairs(checked))

    async def summarise(self, concept: str, statements: list[str], previous: str | None) -> str:
        """A summary of ``concept`` from its statements, building on the previous summary."""
        concept = check_name(concept, "concept", self.settings.max_name_chars)
        checked = check_statements(statements, self.settings)
        if previous is not None:
            previous = check_text(previous, "previous", self.settings.max_text_chars)
        return await self._counted(self._summarise(concept, checked, previous))

    async def predicate_cardinality(self, predicate: str, examples: list[str]) -> PredicateCardinality:
        """``single`` or ``multi`` for a predicate outside the schema; ``examples`` are statements using it."""
        predicate = check_name(predicate, "predicate", self.settings.max_name_chars)
        checked = check_statements(examples, self.settings)
        return await self._counted(self._predicate_cardinality(predicate, checked))

    async def _predicate_cardinality(self, predicate: str, examples: list[str]) -> PredicateCardinality:
        # The offline model's answer: the documented naming rule (``truth/vocabulary.py``).
        return rule_cardinality(predicate)

    async def _counted(self, call: Awaitable[T]) -> T:
        self._usage.calls += 1
        try:
            return await call
        except Exception:
            self._usage.failures += 1
            raise

    @abstractmethod
    async def _extract_observation(self, text: str, source: str, day: date | None, infer: bool) -> Extraction: ...

    @abstractmethod
    async def _parse_claim(self, text: str, source: str) -> ParsedClaim: ...

    @abstractmethod
    async def _answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer: ...

    @abstractmethod
    async def _infer_claims(self, text: str, source: str) -> list[Triple]: ...

    @abstractmethod
    async def _judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]: ...

    @abstractmethod
    async def _summarise(self, concept: str, statements: list[str], previous: str | None) -> str: ...
