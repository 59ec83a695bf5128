"""An erasure (``forget``, a whole space) run once across the store nodes, and finished by another if cut short.

Erasures of one space exclude each other on every store node over the same
databases (a lock in PostgreSQL, ``store/jobs.py``). While one runs, its
report (counts, tombstone, never content) is in the job ledger, marked
running; it is marked done once both engines' files are compacted. A node
killed between the deletion and the compaction leaves the mark: the next
erasure of that space, on any node, compacts (which takes the bytes of the
earlier one with it), and a retry that finds nothing left to erase answers
with the recorded report instead of an empty one.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mnemonet.model.api import ForgetReport
from mnemonet.store.jobs import Jobs

_KIND = "erasure"


class ErasureLedger:
    """The ledger row of one space's erasures (``jobs`` None: a memory on its own, nothing recorded)."""

    def __init__(self, jobs: Jobs | None, key: str) -> None:
        self._jobs = jobs
        self._key = key

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """Hold the erasure lock of this space across the store nodes (nothing without a ledger)."""
        if self._jobs is None:
            yield
            return
        async with self._jobs.exclusive(self._key):
            yield

    async def unfinished(self) -> ForgetReport | None:
        """The report of an erasure that began here and did not finish (its compaction is owed)."""
        if self._jobs is None:
            return None
        record = await self._jobs.get(self._key)
        if record is None or record.state == "done" or not record.detail:
            return None
        return ForgetReport.model_validate(record.detail)

    async def begin(self, report: ForgetReport) -> None:
        """Record an erasure as under way, with what it erases (call under ``exclusive``)."""
        if self._jobs is not None:
            await self._jobs.start(self._key, _KIND, report.model_dump(mode="json"))

    async def end(self) -> None:
        """Record the erasure done: both engines compacted."""
        if self._jobs is not None:
            await self._jobs.finish(self._key)
