"""The validation worker: finds contradictions between statements, by rule where clear, else by the model.

For each new statement S it gathers older candidates T about the same
subject: from the graph (same or aliased predicate, exclusivity partners)
and from embeddings (semantically close statements of opposite polarity).
Each pair is considered once, by the owner of the newer statement. Clear
cases are decided by the relation vocabulary (``truth``); ambiguous ones are held across
passes and go to the language model together in one ``judge_pairs`` call once
``llm_max_pairs`` are held or ``validation_judge_wait`` seconds have passed
since the first (and at the end of a ``drain``). Under load a pass is small
(one per write event), so one call per pass cost 0.6 calls per observation
against 0.19 idle; held, the calls follow the pairs. A held statement stays
pending in the store until its pairs are judged, so nothing is lost if the
worker stops: whoever owns it then redoes it.

Every predicate is checked. One outside the vocabulary gets its cardinality from
a decision remembered in the graph, else from the data (at least
``cardinality_min_subjects`` subjects, each with one current value: single;
a subject with several values from one source: multi), else from the
language model, asked once per predicate and remembered.

A contradiction is written once (``CONTRADICTS``, undirected and idempotent
in the store); ``truth.currency.resolve`` then decides whether one side
``SUPERSEDES`` the other, with its reason, or the conflict stays open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemonet.agents.base import Subscribe, WorkerAgent
from mnemonet.agents.ownership import Ownership
from mnemonet.llm.base import CandidatePair, LanguageModel
from mnemonet.model.api import WorkerMemory
from mnemonet.model.records import VALIDATION_SOURCE, normalise_name
from mnemonet.model.spaces import InSpace
from mnemonet.model.views import StatementView
from mnemonet.settings import Settings
from mnemonet.truth.currency import classify, standing
from mnemonet.truth.vocabulary import Vocabulary

log = logging.getLogger(__name__)

@dataclass
class _Held:
    """Ambiguous pairs of one memory space waiting for their ``judge_pairs`` call, and their statements."""

    since: float  # monotonic time the first pair was held
    pairs: list[tuple[StatementView, StatementView]] = field(default_factory=list)
    statements: dict[str, StatementView] = field(default_factory=dict)


def _older(t: StatementView, s: StatementView) -> bool:
    return (t.created_at, t.id) < (s.created_at, s.id)


class ValidationAgent(WorkerAgent[StatementView]):
    """Detects and records contradictions for the statements it owns."""

    name = "validation"
    source = VALIDATION_SOURCE
    extra_counters = ("contradictions", "supersessions")

    def __init__(self, api: WorkerMemory, settings: Settings, ownership: Ownership, llm: LanguageModel,
                 vocabulary: Vocabulary | None = None, subscribe: Subscribe | None = None) -> None:
        super().__init__(api, settings, ownership, subscribe)
        self.llm = llm
        self.vocabulary = vocabulary or Vocabulary.load(settings.validation_predicates_file)
        self._held: dict[str, _Held] = {}  # by memory space
        self._relations: dict[tuple[str, str], str] = {}  # (space, predicate) -> the relation it means

    async def pending(self, limit: int) -> Sequence[StatementView]:
        return await self.api.pending_statements(self.source, limit)

    def item_id(self, item: StatementView) -> str:
        return item.id

    async def process_batch(self, batch: Sequence[StatementView]) -> None:
        space = self._space()
        held = self._held.get(space)
        batch = [s for s in batch if held is None or s.id not in held.statements]  # held: still pending
        checked = [s for s in batch if not self.vocabulary.spec(s.predicate).skip]
        found = await asyncio.gather(*(self._candidates(s) for s in checked))
        await self._learn_relations([*checked, *(t for candidates in found for t in candidates)])
        vocabulary = self._view()
        learned = await self._cardinalities(list(zip(checked, found, strict=True)), [s.id for s in batch], vocabulary)
        clear: list[tuple[StatementView, StatementView, str]] = []
        ambiguous: list[tuple[StatementView, StatementView]] = []
        for s, candidates in zip(checked, found, strict=True):
            for t in candidates:
                verdict = classify(s, t, vocabulary, learned)
                if verdict.kind == "contradicts":
                    clear.append((s, t, verdict.reason))
                elif verdict.kind == "ambiguous":
                    ambiguous.append((s, t))
        for s, t, reason in clear:
            await self._record(s, t, reason)
        waiting = {s.id for s, _ in ambiguous}
        done = [s.id for s in batch if s.id not in waiting]
        if done:
            await self.api.mark_processed(self.source, done)
            self.counters["processed"] += len(done)
        if ambiguous:
            self._hold(space, ambiguous)
        held = self._held.get(space)
        if held is not None and (len(held.pairs) >= max(1, self.settings.llm_max_pairs)
                                 or time.monotonic() - held.since >= self.settings.validation_judge_wait):
            await self._flush(space)

    async def finish(self) -> int:
        """The held pairs of every space judged now, whatever the wait."""
        total = 0
        try:
            for space in list(self._held):
                self.api = self._api if space == "" else InSpace(self._api, space)
                total += await self._flush(space)
        finally:
            self.api = self._api
        return total

    def _space(self) -> str:
        # The space the current pass works in ("" for a memory without spaces).
        return self.api.space if isinstance(self.api, InSpace) else ""

    def _hold(self, space: str, pairs: list[tuple[StatementView, StatementView]]) -> None:
        held = self._held.get(space)
        if held is None:
            held = self._held[space] = _Held(since=time.monotonic())
            # Wake the loop when the wait is over, whether or not a write or a poll comes first.
            asyncio.get_running_loop().call_later(self.settings.validation_judge_wait, self._wake.set)
        held.pairs.extend(pairs)
        held.statements.update((s.id, s) for s, _ in pairs)

    async def _flush(self, space: str) -> int:
        """Judge the held pairs of ``space`` (``self.api`` bound to it), record them, mark their statements
        done; the number of statements done. Taken off the held list first: if judging fails they are
        still pending in the store and the next pass finds them again."""
        held = self._held.pop(space, None)
        if held is None:
            return 0
        for s, t, reason in await self._judge(held.pairs):
            await self._record(s, t, reason)
        await self.api.mark_processed(self.source, list(held.statements))
        self.counters["processed"] += len(held.statements)
        return len(held.statements)

    async def _learn_relations(self, statements: list[StatementView]) -> None:
        """The relation each predicate outside the vocabulary means, asked of the memory once per worker and
        space (found by meaning there, and remembered as a Predicate node)."""
        space = self._space()
        for predicate in sorted({s.predicate for s in statements if not self.vocabulary.known(s.predicate)}):
            if (space, predicate) not in self._relations:
                profile = await self.api.predicate_profile(predicate, [])
                self._relations[(space, predicate)] = profile.relation or predicate

    def _view(self) -> Vocabulary:
        """The vocabulary with the relations learned in the current space."""
        space = self._space()
        return self.vocabulary.with_relations({p: r for (at, p), r in self._relations.items() if at == space})

    async def _cardinalities(
        self, pairs: list[tuple[StatementView, list[StatementView]]], batch_ids: list[str], vocabulary: Vocabulary,
    ) -> dict[str, str]:
        """Cardinality of each predicate outside the vocabulary that has two values for one subject here."""
        wanted: dict[str, list[str]] = {}
        for s, candidates in pairs:
            pn = vocabulary.canonical(s.predicate)
            if vocabulary.known(pn) or s.negated:
                continue
            others = [t for t in candidates if vocabulary.canonical(t.predicate) == pn and not t.negated
                      and normalise_name(t.object) != normalise_name(s.object)]
            if others:
                wanted.setdefault(pn, []).extend([s.sentence(), *(t.sentence() for t in others)])
        out = {}
        for pn, examples in wanted.items():
            out[pn] = await self._cardinality(pn, list(dict.fromkeys(examples))[:10], batch_ids)
        return out

    async def _cardinality(self, predicate: str, examples: list[str], batch_ids: list[str]) -> str:
        profile = await self.api.predicate_profile(predicate, batch_ids)
        if profile.cardinality is not None:
            return profile.cardinality
        if profile.multi_subjects:
            return "multi"
        if profile.subjects >= self.settings.cardinality_min_subjects:
            return "single"  # learned: every subject holds one value at a time
        self.counters["llm_calls"] += 1
        answer = await self.llm.predicate_cardinality(predicate, examples)
        decided_by = f"language model ({self.llm.name})"
        stands = await self.api.record_predicate(predicate, answer, decided_by[:200])
        log.info("predicate %s: cardinality %s", predicate, stands.cardinality,
                 extra={"predicate": predicate, "cardinality": stands.cardinality})
        return stands.cardinality or answer

    async def _candidates(self, s: StatementView) -> list[StatementView]:
        """Older, current statements about the same subject: from the graph, plus close ones by embedding."""
        limit = self.settings.validation_candidate_limit
        about = await self.api.get_concept_statements(s.subject, limit=limit)
        out = {t.id: t for t in about if self._eligible(s, t)}
        if self.settings.validation_search_k > 0:
            hits = await self.api.search(s.sentence(), k=self.settings.validation_search_k, kinds=["statement"])
            ids = [h.id for h in hits if h.id not in out and h.id != s.id]
            for item in await self.api.load(ids) if ids else []:
                if item.get("kind") != "statement":
                    continue
                t = StatementView.model_validate(item)
                polarity = self.vocabulary.polarity
                opposite = polarity(s.predicate, s.negated) * polarity(t.predicate, t.negated) < 0
                if opposite and self._eligible(s, t):
                    out[t.id] = t
        return list(out.values())

    def _eligible(self, s: StatementView, t: StatementView) -> bool:
        return (
            t.id != s.id and not t.superseded_by and _older(t, s)
            and normalise_name(t.subject) == normalise_name(s.subject)
            and not self.vocabulary.spec(t.predicate).skip
        )

    async def _judge(
        self, pairs: list[tuple[StatementView, StatementView]]
    ) -> list[tuple[StatementView, StatementView, str]]:
        """The contradicting pairs among ``pairs``, one model call per ``llm_max_pairs`` of them."""
        out = []
        size = max(1, self.settings.llm_max_pairs)
        for start in range(0, len(pairs), size):
            chunk = pairs[start:start + size]
            self.counters["llm_calls"] += 1
            judgements = await self.llm.judge_pairs([CandidatePair(a=s.sentence(), b=t.sentence()) for s, t in chunk])
            for j in judgements:
                if j.contradicts and 0 <= j.index < len(chunk):
                    s, t = chunk[j.index]
                    out.append((s, t, j.reason or "judged contradictory"))
        return out

    async def _record(self, s: StatementView, t: StatementView, reason: str) -> None:
        if await self.api.link_statements("CONTRADICTS", s.id, t.id, reason, self.source):
            self.counters["claims_made"] += 1
            self.counters["contradictions"] += 1
        outcome = standing(s, t, self._view(), self.settings)
        if outcome.winner is not None and outcome.loser is not None:
            why = f"{outcome.reason} ({reason})"
            if await self.api.link_statements("SUPERSEDES", outcome.winner.id, outcome.loser.id, why[:1000],
                                              self.source):
                self.counters["claims_made"] += 1
                self.counters["supersessions"] += 1
        log.info("contradiction: %s against %s: %s", s.id, t.id, reason,
                 extra={"worker": self.name, "new": s.id, "old": t.id, "reason": reason})
