"""The consolidation worker (the sleep cycle): summaries of concepts that gained enough new statements.

A cycle runs once writes have been quiet for ``consolidation_quiet_period``
seconds, and at least every ``consolidation_max_interval`` seconds under
continuous writes. For each concept with at least
``consolidation_min_new_statements`` statements no summary covers yet, it
asks the language model for a summary that builds on the previous one and
writes it as a new statement ``DERIVED_FROM`` the new statements and the
previous summary (so summaries chain; nothing is modified or deleted).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemonet.agents.base import Subscribe, WorkerAgent
from mnemonet.agents.ownership import Ownership
from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import ConsolidationWork, MemoryAPI
from mnemonet.settings import Settings


class ConsolidationAgent(WorkerAgent[ConsolidationWork]):
    """Writes cumulative summaries of busy concepts it owns."""

    name = "consolidation"
    source = "consolidation-agent"

    def __init__(self, api: MemoryAPI, settings: Settings, ownership: Ownership, llm: LanguageModel,
                 subscribe: Subscribe | None = None) -> None:
        super().__init__(api, settings, ownership, subscribe)
        self.llm = llm
        self.last_cycle = float("-inf")  # monotonic start of the last cycle; none yet

    def due(self) -> bool:
        now = time.monotonic()
        quiet = now - self.last_event >= self.settings.consolidation_quiet_period
        return quiet or now - self.last_cycle >= self.settings.consolidation_max_interval

    async def pending(self, limit: int) -> Sequence[ConsolidationWork]:
        self.last_cycle = time.monotonic()
        limit = min(limit, self.settings.consolidation_concepts_per_cycle)
        return await self.api.pending_consolidation(self.source, self.settings.consolidation_min_new_statements, limit)

    def item_id(self, item: ConsolidationWork) -> str:
        return item.concept_id

    async def process_item(self, item: ConsolidationWork) -> None:
        previous = item.previous
        self.counters["llm_calls"] += 1
        text = await self.llm.summarise(
            item.concept, [s.sentence() for s in item.statements], previous.summary if previous else None)
        basis = [s.id for s in item.statements] + ([previous.id] if previous else [])
        result = await self.api.record_summary(item.concept_id, text, basis, self.source)
        if result.created:
            self.counters["claims_made"] += 1
