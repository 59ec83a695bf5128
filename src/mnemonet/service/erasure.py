"""Erasure: taking back (``retract``) and erasing (``forget``, ``clear``), and keeping the vector index in step.

``retract`` appends a retraction and deletes nothing. ``forget`` (admin only)
erases an observation or all a source wrote, with everything derived only from
it (``_derived_only_from``), the concepts nothing else uses (``_orphans``),
their vector rows and the embedding context that quoted them
(``_revector_alone``), compacts both stores and leaves a tombstone.

An erasure races nothing. It first closes the write gate (``write_gate``) to
the writes it concerns, ``forget`` to the erased items' source and to the
workers' derived writes, ``clear`` to every write, and waits for those under
way, so a write acknowledged before it is erased whole and one that comes
after waits for it (``forget_write_wait``) and is then written whole. Then it
takes the ``erasing`` lock (``ServiceContext.erasing``, public as
``MemoryService.erasing``; ``SpacedMemory`` takes both to drop a space),
which every write to the vector index holds too (``sync_vectors`` and the
indexer's background batches): it cancels the queued entries of what it
erases, and any row handed in later for an erased item is dropped by the
indexer, which writes only rows of items the graph still holds. The report
counts those cancelled entries among the erased vectors.

Across store nodes over the same databases (``index_queue`` shared), an
erasure holding that lock also waits for the rows other nodes hold in the
shared queue (their index writes do not take this node's lock), then removes
the erased items' rows from it, so no node takes one over; ``forget`` holds
the space's erasure lock in PostgreSQL too, and one cut short is finished by
the next, on any node (``erasure_ledger``).
"""

from __future__ import annotations

import logging
import re
from typing import Literal

from mnemonet.model.api import ForgetReport, RetractResult
from mnemonet.model.errors import Forbidden, InvalidInput
from mnemonet.model.ids import derived_id
from mnemonet.model.records import check_id, check_name, check_text
from mnemonet.model.secrets import check_no_secrets
from mnemonet.model.views import TombstoneView
from mnemonet.service.common import (
    MAX_LIMIT,
    check_limit,
    now_ms,
    observation_entry,
    source_spec,
    statement_entry,
)
from mnemonet.service.context import ServiceContext
from mnemonet.service.derivations import Derivations
from mnemonet.service.erasure_ledger import ErasureLedger
from mnemonet.store import vector_erase
from mnemonet.store.graph_errors import UnknownReference

log = logging.getLogger(__name__)

# A short id as ``short_id`` prints it: retract accepts it when it names one item.
_SHORT_ID = re.compile(r"^(st|obs)-[0-9a-f]{8}$")


def check_may_retract(item_id: str, author: str, source: str, any_source: bool) -> None:
    """``Forbidden`` unless ``source`` may retract the item ``author`` wrote.

    A source takes back what it wrote itself: the statements it asserted, the observations it recorded.
    Another source's item needs ``any_source``: an admin of the space (the node sets it from the caller's
    token, never from what the caller says). Being the subject of a statement gives no right to retract
    it: what others said about a source stays theirs to take back (that source can say otherwise, and
    answers weigh it), so "bob" cannot make "alice"'s statements about bob disappear.
    """
    if author != source and not any_source:
        raise Forbidden(f"id: {item_id} was written by {author!r}; {source!r} retracts only what it wrote itself "
                        "(another source's items need an admin of the space)")


class Erasure:
    """Retracts and erases (``MemoryService.retract``, ``forget``, ``tombstones``, ``clear``, ``sync_vectors``)."""

    def __init__(self, ctx: ServiceContext, derivations: Derivations) -> None:
        self._ctx = ctx
        self._derivations = derivations

    # -- retract: append, delete nothing -----------------------------------------

    async def retract(self, id: str, reason: str, source: str = "user", any_source: bool = False) -> RetractResult:
        """Take a statement or an observation back: append a retraction by ``source``, delete nothing.

        A retracted item is never current, never an answer, never a basis, never a side of an open
        contradiction, and statements derived only from it are flagged and left out the same way; a
        worker's claims resting on a retracted statement are retracted with it (``derivations``).
        One retraction per item: retrying (or retracting again, whoever may) returns the standing one.
        Who may: ``check_may_retract``.
        """
        target_id = check_id(id, "id")
        reason = check_text(reason, "reason", self._ctx.settings.retract_reason_max_chars)
        check_no_secrets(reason, "reason")
        by = source_spec(source, "user")
        async with self._ctx.deriving():  # about an item an erasure may take: one waits for the other
            return await self._retract(target_id, reason, by.name, any_source)

    async def _retract(self, target_id: str, reason: str, by: str, any_source: bool) -> RetractResult:
        graph = self._ctx.graph
        node = await graph.get_node(target_id)
        if node is None and _SHORT_ID.match(target_id):  # as answers and the CLI print ids
            found = await graph.ids_with_prefix(target_id, 2)
            if len(found) > 1:
                raise InvalidInput(f"id: {target_id} is ambiguous ({', '.join(found)}); give the full id")
            if found:
                target_id = found[0]
                node = await graph.get_node(target_id)
        if node is None:
            raise UnknownReference("id", [target_id])
        label = str(node.get("label", "")).lower()
        if label not in ("statement", "observation"):
            raise InvalidInput(f"id: only a statement or an observation can be retracted, not a {label}")
        kind: Literal["statement", "observation"] = "statement" if label == "statement" else "observation"
        items = await (graph.get_statements if kind == "statement" else graph.get_observations)([target_id])
        check_may_retract(target_id, (items[0].source if items else None) or "", by, any_source)
        created = await graph.retract(derived_id("rtr", target_id), target_id, kind, reason, by)
        [standing] = await graph.retractions_of([target_id])
        derived = await graph.statements_derived_from(target_id, kind)
        flagged = [s.id for s in derived if s.derived_from_retracted]
        if kind == "statement":
            for base in await graph.get_statements([target_id]):
                flagged += await self._derivations.retracted(base, standing.id, standing.source)
        return RetractResult(
            retraction_id=standing.id, target_id=target_id, kind=kind, created=created, reason=standing.reason,
            source=standing.source, created_at=standing.created_at, flagged=list(dict.fromkeys(flagged)),
        )

    # -- forget: erase, compact, tombstone ----------------------------------------

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local"
    ) -> ForgetReport:
        """Admin only: erase an observation, or all a source wrote, and everything derived only from it.

        Erased: the observations (and, for a source, the statements it asserted and its Source nodes),
        the statements derived only from erased items (and summaries resting on any of them: their text
        restates it), concepts nothing else uses, retractions of erased items, their vector rows, and the
        embedding context of other rows that quoted an erased text (their vectors made again without it).
        Then the graph's append-only file and the vector tables (and WAL) are compacted so the bytes are
        gone. A tombstone records what kind of request it was, how many of each, when and by whom, never
        the content. Erasing what is already gone removes nothing and writes no tombstone.
        """
        if (observation_id is None) == (source is None):
            raise InvalidInput("forget: give exactly one of observation_id or source")
        ctx = self._ctx
        who = check_name(by, "by")
        if observation_id is not None:
            check_id(observation_id, "observation_id")
            writers = [o.source for o in await ctx.graph.get_observations([observation_id]) if o.source]
        else:
            writers = [check_name(source, "source")]
        coordination = ctx.coordination
        ledger = ErasureLedger(coordination.jobs if coordination else None, f"forget:{ctx.space}")
        # Writes of the erased items' source and workers' derived writes wait; those under way finish first.
        # The nodes' lock before this node's: a node waiting for it then holds no erasure lock of its own,
        # so its queued rows, which the erasure under way waits for (``others_settled``), go on being indexed.
        async with ctx.excluding(writers), ledger.exclusive(), ctx.erasing:
            return await self._forget(observation_id, source, who, ledger)

    async def _forget(
        self, observation_id: str | None, source: str | None, who: str, ledger: ErasureLedger
    ) -> ForgetReport:
        ctx = self._ctx
        graph, settings = ctx.graph, ctx.settings
        ctx.indexer.forget_recent()
        kind: Literal["observation", "source"] = "observation" if observation_id is not None else "source"
        sources: list[str] = []
        if observation_id is not None:
            observations = [o.id for o in await graph.get_observations([observation_id])]
            statements: list[str] = []
        else:
            sources, observations, statements = await graph.source_items(check_name(source, "source"))
        erased = set(observations) | set(statements)
        erased |= await self._derived_only_from(erased)
        orphans = _orphans(await graph.concept_users(sorted(erased)), erased) if erased else set()
        total = len(erased) + len(orphans)
        if total > settings.forget_max_items:
            raise InvalidInput(f"forget: {total} items exceed forget_max_items ({settings.forget_max_items}); "
                               "erase observation by observation, or raise the setting")
        report = ForgetReport(kind=kind, space=ctx.space, at=now_ms(), by=who)
        owed = await ledger.unfinished()  # an erasure cut short, here or on another store node
        if not erased:
            if owed is None:
                return report
            await ledger.begin(owed)  # taken up again (``starts`` counts it): its compaction is owed
            return await self._compacted(owed, ledger)
        retractions = [r.id for r in await graph.all_retractions_of(sorted(erased))]
        n = settings.forget_context_fragment_chars
        texts = [o.text.strip() for o in await graph.all_observations(sorted(set(observations) & erased))]
        fragments = sorted({piece for t in texts for piece in (t[:n], t[-n:]) if piece})
        # Queued behind their writes and not indexed yet: dropped unembedded, and counted as erased rows.
        # Other store nodes' queued rows are indexed first (their writes do not take this node's lock);
        # the erased items' rows then leave the shared queue, so no node takes one over.
        await ctx.indexer.others_settled()
        cancelled = ctx.indexer.cancel(erased | orphans)
        if ctx.indexer.queue is not None:
            await ctx.indexer.queue.done(sorted(erased | orphans))
        unwritten = len(await ctx.vectors.ids_missing(sorted(cancelled))) if cancelled else 0
        erasure = await vector_erase.erase(ctx.vectors, sorted(erased | orphans), fragments)
        await self._revector_alone(erasure.stale)
        observation_ids = sorted(observations)
        statement_ids = sorted(erased - set(observations))
        tombstone_id = derived_id("tomb", kind, *sorted(erased))
        resumed = owed if owed is not None and owed.tombstone_id == tombstone_id else None  # its rows went then
        tombstone = TombstoneView(
            id=tombstone_id, kind=kind, space=ctx.space,
            observations=len(observation_ids),
            statements=len(statement_ids), concepts=len(orphans), retractions=len(retractions),
            sources=len(sources), vectors=max(erasure.deleted + unwritten, resumed.vectors if resumed else 0),
            at=report.at, by=who,
        )
        report = report.model_copy(update={
            **tombstone.model_dump(exclude={"id", "kind", "space", "at", "by"}), "tombstone_id": tombstone.id,
            "contexts_scrubbed": max(erasure.scrubbed, resumed.contexts_scrubbed if resumed else 0),
        })
        await ledger.begin(report)
        await graph.forget(tombstone, {
            "observations": observation_ids, "statements": statement_ids, "concepts": sorted(orphans),
            "retractions": retractions, "sources": sources,
        })
        log.warning("forget kind=%s observations=%d statements=%d concepts=%d by=%s", kind, tombstone.observations,
                    tombstone.statements, tombstone.concepts, who)
        return await self._compacted(report, ledger)

    async def _compacted(self, report: ForgetReport, ledger: ErasureLedger) -> ForgetReport:
        """Compact both engines' files after an erasure (this one, or one cut short) and record it done."""
        graph_compacted = await self._ctx.graph.compact()
        if self._ctx.indexer.queue is not None:  # the shared queue held the erased texts for a while
            await self._ctx.indexer.queue.compact()
        vectors_compacted = await vector_erase.compact(self._ctx.vectors)
        await ledger.end()
        return report.model_copy(update={"graph_compacted": graph_compacted, "vectors_compacted": vectors_compacted})

    async def _derived_only_from(self, erased: set[str]) -> set[str]:
        """Statements derived only from erased items (following chains), and summaries resting on any."""
        found: set[str] = set()
        frontier = set(erased)
        for _ in range(self._ctx.settings.forget_derived_depth):
            if not frontier:
                break
            fresh = {sid for sid, bases, summary in await self._ctx.graph.derived_with_bases(sorted(frontier))
                     if sid not in erased | found and (summary or bases <= erased | found | frontier)}
            found |= fresh
            frontier = fresh
        return found

    async def _revector_alone(self, rows: list[tuple[str, str]]) -> None:
        """Make the vectors of rows whose context was an erased text again from their own text alone: the
        old ones were composed with the erased text's vector (compaction then drops their bytes)."""
        ctx = self._ctx
        for start in range(0, len(rows), ctx.settings.vector_batch_size):
            batch = rows[start:start + ctx.settings.vector_batch_size]
            vectors = await ctx.embedder.embed([text for _, text in batch], "passage")
            await vector_erase.replace_vectors(
                ctx.vectors, [(row_id, own) for (row_id, _), own in zip(batch, vectors, strict=True)])

    async def tombstones(self, limit: int = 50) -> list[TombstoneView]:
        """Admin only: the tombstones of erasures, newest first."""
        return await self._ctx.graph.tombstones(check_limit(limit))

    # -- the whole space's graph and index -----------------------------------------

    async def clear(self) -> None:
        """Admin only: erase the graph (but token revocations and the audit log) and the vector index.

        Every write waits meanwhile (those under way finish first), and what is queued for the index is
        dropped, not written after the erase."""
        ctx = self._ctx
        async with ctx.excluding(None), ctx.erasing:
            await ctx.indexer.others_settled()
            ctx.indexer.cancel()
            if ctx.indexer.queue is not None:  # every node's queued rows are of what goes
                await ctx.indexer.queue.drop_space()
            ctx.indexer.forget_recent()
            await ctx.graph.clear()
            await ctx.vectors.clear()

    async def sync_vectors(self, limit: int = MAX_LIMIT) -> int:
        """Index recent graph items that have no row (after a failed index write or a restart).

        An item erased between the read and the index write gets no row: the indexer writes, under the
        erasure lock, only rows of items the graph still holds. Rows waiting in the shared queue are left
        to the node that holds them (``VectorIndexer.sync``)."""
        ctx = self._ctx
        observations = await ctx.graph.recent_observations(check_limit(limit))
        statements = await ctx.graph.recent_statements(check_limit(limit))
        derived = ctx.settings.index_derived_vectors
        entries = [observation_entry(o) for o in observations]
        entries += [statement_entry(s, derived) for s in statements]
        return await ctx.indexer.sync(entries)


def _orphans(users: dict[str, set[str]], erased: set[str]) -> set[str]:
    """Concepts every user of which is erased, or is itself such a concept (a part of an erased phrase)."""
    orphans: set[str] = set()
    while True:
        more = {c for c, used_by in users.items() if c not in orphans and used_by <= erased | orphans}
        if not more:
            return orphans
        orphans |= more
