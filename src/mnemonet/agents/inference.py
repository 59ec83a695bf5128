"""The inference worker: for each new observation, the claims it supports, written with DERIVED_FROM it.

One language-model call per observation (``MemoryAPI.infer``), one store
write (``record_inference``) that stores every claim and the done-marker
together, so an observation is either fully done or still pending.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mnemonet.agents.base import WorkerAgent
from mnemonet.model.views import ObservationView

log = logging.getLogger(__name__)


class InferenceAgent(WorkerAgent[ObservationView]):
    """Infers claims from observations this worker owns; progress lives in the graph."""

    name = "inference"
    source = "inference-agent"
    wakes_on = frozenset({"observation"})
    extra_counters = ("duplicates_absorbed",)

    async def pending(self, limit: int) -> Sequence[ObservationView]:
        return await self.api.pending_observations(self.source, limit)

    def item_id(self, item: ObservationView) -> str:
        return item.id

    async def process_item(self, item: ObservationView) -> None:
        self.counters["llm_calls"] += 1
        claims = await self.api.infer(item.text)
        result = await self.api.record_inference(item.id, claims, self.source)
        if result.created:
            self.counters["claims_made"] += len(result.statement_ids)
        else:  # another worker got there first (a membership change): the store absorbed the repeat
            self.counters["duplicates_absorbed"] += 1
        log.debug("inferred %d claims from %s", len(claims), item.id,
                  extra={"observation": item.id, "claims": len(claims), "created": result.created})
