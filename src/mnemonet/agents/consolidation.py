"""The consolidation worker (the sleep cycle): summaries of concepts that gained enough new statements.

A cycle runs once writes have been quiet for ``consolidation_quiet_period``
seconds, and at least every ``consolidation_max_interval`` seconds under
continuous writes. For each concept with at least
``consolidation_min_new_statements`` current statements no summary covers
yet, or whose summary rests on a statement superseded or contradicted since,
it asks the language model for a summary of the concept's current statements
only, open conflicts between sources stated as unresolved, and writes it
``DERIVED_FROM`` them. The store makes the new summary supersede the previous
one: one summary of a concept is current, and none is built on an older
summary's text, which may state what has since changed (nothing is modified
or deleted).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemonet.agents.base import Subscribe, WorkerAgent
from mnemonet.agents.ownership import Ownership
from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import ConsolidationWork, WorkerMemory
from mnemonet.model.records import CONSOLIDATION_SOURCE
from mnemonet.settings import Settings


class ConsolidationAgent(WorkerAgent[ConsolidationWork]):
    """Writes summaries of the current knowledge of busy concepts it owns."""

    name = "consolidation"
    source = CONSOLIDATION_SOURCE

    def __init__(self, api: WorkerMemory, settings: Settings, ownership: Ownership, llm: LanguageModel,
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
        lines = [s.sentence() for s in item.statements] + [c.sentence() for c in item.conflicts]
        basis = [s.id for s in item.statements] + [side.id for c in item.conflicts for side in (c.a, c.b)]
        if not basis:  # nothing about the concept is current: nothing to state
            return
        self.counters["llm_calls"] += 1
        # No previous summary to build on: it may state what has changed since (it resurrected facts).
        text = await self.llm.summarise(item.concept, lines, None)
        result = await self.api.record_summary(item.concept_id, text, list(dict.fromkeys(basis)), self.source)
        if result.created:
            self.counters["claims_made"] += 1
