"""The inference worker: for each new observation, the claims it supports, written with DERIVED_FROM it.

One language-model call per observation (``MemoryAPI.infer``), one store
write (``record_inference``) that stores every claim and the done-marker
together, so an observation is either fully done or still pending.

Where this worker runs (``infer_with_extraction`` auto: the store node sees
it in its membership) the extraction call infers the claims too and the store
writes them as this worker's, so an observation extracted that way is already
done here and costs no second call; what the store extracted before it knew
of a worker, or with the setting off, is inferred here.

It also finishes extractions: an observation kept while no language model
answered is extracted here (``complete_extraction``, exactly once in the
store) as soon as a model is back; each pass does those first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from mnemonet.agents.base import WorkerAgent
from mnemonet.model.errors import Unavailable
from mnemonet.model.records import INFERENCE_SOURCE
from mnemonet.model.views import ObservationView

log = logging.getLogger(__name__)


class InferenceAgent(WorkerAgent[ObservationView]):
    """Infers claims from observations this worker owns; progress lives in the graph."""

    name = "inference"
    source = INFERENCE_SOURCE
    wakes_on = frozenset({"observation"})
    extra_counters = ("duplicates_absorbed", "extracted", "extraction_waiting")

    async def pending(self, limit: int) -> Sequence[ObservationView]:
        return await self.api.pending_observations(self.source, limit)

    def item_id(self, item: ObservationView) -> str:
        return item.id

    async def run_once(self) -> tuple[int, int]:
        try:
            await self._extract_pending()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store slow or away: inference still gets its pass
            error = f"{type(exc).__name__}: {exc}"
            log.warning("worker %s: extraction pass failed: %s", self.name, error,
                        extra={"worker": self.name, "error": error})
        return await super().run_once()

    async def _extract_pending(self) -> None:
        """Extract the owned observations still waiting for one; they stay pending while no model answers."""
        waiting = await self.api.pending_extractions(self.settings.worker_fetch_limit)
        for item in waiting:
            if not self.ownership.owns(item.id):
                continue
            self.counters["llm_calls"] += 1
            try:
                result = await self.api.complete_extraction(item.id)
            except asyncio.CancelledError:
                raise
            except Unavailable as exc:  # no store or model peer now: it stays pending for the next pass
                self._waiting(1, exc)
                return
            except Exception as exc:  # it stays pending for the next pass
                self.counters["failed"] += 1
                error = f"{type(exc).__name__}: {exc}"
                log.warning("worker %s: extraction of %s failed: %s", self.name, item.id, error,
                            extra={"worker": self.name, "observation": item.id, "error": error})
                return
            if result.pending:  # no model yet: the rest would wait too, so try them next pass
                self.counters["extraction_waiting"] += 1
                return
            self.counters["extracted"] += 1

    async def process_item(self, item: ObservationView) -> None:
        self.counters["llm_calls"] += 1
        claims = await self.api.infer(item.text, item.source or "user")  # first person is the speaker
        result = await self.api.record_inference(item.id, claims, self.source)
        if result.created:
            self.counters["claims_made"] += len(result.statement_ids)
        else:  # another worker got there first (a membership change): the store absorbed the repeat
            self.counters["duplicates_absorbed"] += 1
        # "created" would name a LogRecord attribute: logging refuses it in extra= (the item then failed).
        log.debug("inferred %d claims from %s (written: %s)", len(claims), item.id, result.created,
                  extra={"observation": item.id, "claims": len(claims), "written": result.created})
