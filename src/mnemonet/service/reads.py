"""Reads: what memory holds, searched, loaded or answered.

``recall`` gathers the current statements behind a question (with what the
spaces shared into this one hold, marked with their space); ``remember``
composes the answer from it and lets the language model phrase only its lead;
``search`` and ``load`` serve agents that read items themselves (``load``
also takes the short ids the CLI prints); the ``get_*`` calls list recent
items, concepts and open contradictions for the dashboard and the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mnemonet.model.api import Answer, Recall
from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import check_name
from mnemonet.model.views import ConceptView, ContradictionView, ObservationView, SearchHit, StatementView
from mnemonet.service.common import MAX_LOAD_IDS, check_limit
from mnemonet.service.context import ServiceContext
from mnemonet.service.recall import build_recall
from mnemonet.service.retrieval import SearchMode
from mnemonet.store import vector_usage
from mnemonet.truth.answer import accept_phrasing, compose, contradicted_origins, speakers_of

log = logging.getLogger(__name__)

_FULL_ID_HEX = 32  # a full id is ``<kind>-<32 hex digits>`` (model/ids.py)

# The spaces shared into this one, (name, context) each: read-only here.
SharedSpaces = Callable[[], Awaitable[list[tuple[str, ServiceContext]]]]


class Reads:
    """Reads one space, and the spaces shared into it (``MemoryService.recall``, ``remember``, ``search``,
    ``load`` and the ``get_*`` listings)."""

    def __init__(self, ctx: ServiceContext, shared: SharedSpaces) -> None:
        self._ctx = ctx
        self._shared = shared

    async def recall(self, query: str) -> Recall:
        """The structured memory behind ``remember``: current statements, what they replaced, open conflicts."""
        ctx = self._ctx
        # Scanned: remember sends the query to the language model, which may be a remote service.
        query = ctx.check_input(query, "query")
        k = ctx.settings.search_k
        hits, spaces = await asyncio.gather(ctx.retriever.search(query, k=k), self._shared())  # as in search
        shared = [(name, other, await other.retriever.search(query, k=k)) for name, other in spaces]
        if shared:  # the best k over this space and the ones shared into it
            best = {h.id for h in _best([*hits, *(h for _, _, found in shared for h in found)], k)}
            hits = [h for h in hits if h.id in best]
            shared = [(name, other, [h for h in found if h.id in best]) for name, other, found in shared]
        ctx.usage.note(h.id for h in hits)
        recall = await build_recall(ctx.graph, query, hits, opened_hits=ctx.settings.recall_opened_hits,
                                    contradiction_scan=ctx.settings.recall_contradiction_scan)
        for name, other, found in shared:
            if found:
                other.usage.note(h.id for h in found)
                theirs = await build_recall(other.graph, query, found, opened_hits=ctx.settings.recall_opened_hits,
                                            contradiction_scan=ctx.settings.recall_contradiction_scan)
                recall = _with_shared(recall, theirs, name)
        return recall

    async def remember(self, query: str, source: str | None = None) -> Answer:
        """Answer a question from memory: the current answer first, then evidence, changes and conflicts.

        ``source`` is the asker: first person in the question is that source, and the answer says
        "you" where the asker is the subject. Without one, names stay as stored.

        The composition is deterministic (``truth.answer``); the language model only phrases the
        lead sentence. When no model answers (no llm peer, provider down) the rule-made lead stands
        and the answer says it is degraded: ``remember`` works whenever ``recall`` does.
        """
        ctx = self._ctx
        recall = await self.recall(query)
        origins = contradicted_origins(recall)[:MAX_LOAD_IDS]
        speakers = speakers_of(recall, await ctx.graph.get_observations(origins) if origins else [])
        asker = check_name(source, "source") if source is not None else None
        # Predicates outside the vocabulary read as the relations found for them by meaning (Predicate nodes).
        free = {s.predicate for s in [*recall.statements, *recall.superseded] if not ctx.vocabulary.known(s.predicate)}
        found = await ctx.graph.predicate_relations(sorted(free))
        vocabulary = ctx.vocabulary.with_relations(found)
        composition = compose(recall, ctx.settings.answer_evidence_max, vocabulary, ctx.settings, speakers, asker)
        lead, degraded = None, False
        if composition.lead_id is not None:
            try:
                written = await ctx.ask("remember", ctx.llm.answer(recall.query, composition.memory()))
            except Exception:  # any failure of the model degrades the answer; CancelledError still propagates
                log.warning("remember: the language model did not answer; composing by rule", exc_info=True)
                degraded = True
            else:
                lead = accept_phrasing(composition, written.text, ctx.settings.answer_lead_max_chars)
        return Answer(
            query=recall.query, text=composition.text(lead, degraded=degraded), cited=composition.cited,
            recall=recall, provider="rule-based composer (degraded)" if degraded else ctx.llm.name,
            confidence=composition.confidence, degraded=degraded,
        )

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        mode: SearchMode = "hybrid+graph",
    ) -> list[SearchHit]:
        """The ``k`` best hits here and in the spaces shared into this one, each with its use count."""
        query = self._ctx.check_input(query, "query", secrets=False)
        # Which spaces are shared into this one is a graph read of its own: made while this space is searched.
        hits, shared = await asyncio.gather(_search_in(self._ctx, query, k, kinds, since, mode), self._shared())
        for name, other in shared:  # read-only, and not on to what that space reads
            hits += [h.model_copy(update={"space": name})
                     for h in await _search_in(other, query, k, kinds, since, mode)]
        return _best(hits, k)

    async def load(self, ids: list[str]) -> list[dict[str, Any]]:
        """Full items with provenance, for ids from ``search``."""
        graph = self._ctx.graph
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidInput("ids: must be a list of strings")
        if len(ids) > MAX_LOAD_IDS:
            raise InvalidInput(f"ids: at most {MAX_LOAD_IDS} ids per call")
        ids = [await self._full_id(item_id) for item_id in ids]
        statements = {s.id: s for s in await graph.get_statements(ids)}
        observations = {o.id: o for o in await graph.get_observations(ids)}
        items: list[dict[str, Any]] = []
        for item_id in ids:
            if item_id in statements:
                items.append({"kind": "statement", **statements[item_id].model_dump()})
            elif item_id in observations:
                items.append({"kind": "observation", **observations[item_id].model_dump()})
            else:
                node = await graph.get_node(item_id)
                if node is not None:
                    label = str(node.get("label", "node")).lower()
                    # A node's own "kind" (a tombstone's: what was erased) never hides what the item is.
                    own = {f"{label}_kind": node["kind"]} if "kind" in node else {}
                    items.append({**node, "kind": label, **own})
        return items

    async def _full_id(self, item_id: str) -> str:
        """``item_id``, or the one full id a short id such as ``obs-1a2b3c4d`` starts (the CLI shows those).

        An ambiguous short id is refused with its candidates rather than loading one of them at random.
        """
        settings, graph = self._ctx.settings, self._ctx.graph
        prefix, dash, rest = item_id.partition("-")
        if not (dash and prefix and settings.short_id_min_chars <= len(rest) < _FULL_ID_HEX):
            return item_id
        if await graph.get_node(item_id) is not None:
            return item_id  # an id that merely looks short (a concept's, a caller-made one)
        shown = settings.short_id_candidates
        found = await graph.ids_with_prefix(item_id, shown + 1)
        if len(found) > 1:
            raise InvalidInput(f"ids: {item_id!r} is ambiguous, it starts {', '.join(found[:shown])}"
                               f"{' and more' if len(found) > shown else ''}; give more of the id")
        return found[0] if found else item_id

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]:
        """The newest observations."""
        return await self._ctx.graph.recent_observations(check_limit(limit))

    async def get_recent_statements(self, limit: int = 20) -> list[StatementView]:
        """The newest statements."""
        return await self._ctx.graph.recent_statements(check_limit(limit))

    async def get_unresolved_contradictions(self, limit: int = 20) -> list[ContradictionView]:
        """Contradictions no later statement has settled."""
        return await self._ctx.graph.unresolved_contradictions(check_limit(limit))

    async def get_concepts(self, limit: int = 100) -> list[ConceptView]:
        """Concepts in memory."""
        return await self._ctx.graph.concepts(check_limit(limit))

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]:
        """Statements about a concept, superseded ones included (callers mark them)."""
        name = check_name(name, "name")
        return await self._ctx.graph.statements_about(name, check_limit(limit), include_superseded=True)


async def _search_in(ctx: ServiceContext, query: str, k: int, kinds: list[str] | None, since: int | None,
                     mode: SearchMode) -> list[SearchHit]:
    """One space's search hits, each with its use count; the hits are counted as used."""
    hits = await ctx.retriever.search(query, k, kinds, since, mode)
    used = await vector_usage.uses_of(ctx.vectors, [h.id for h in hits])
    ctx.usage.note(h.id for h in hits)  # counted in memory; written in a batch later, off this path
    return [h.model_copy(update={"uses": used[h.id][0], "last_used_at": used[h.id][1]}) if h.id in used else h
            for h in hits]


def _best(hits: list[SearchHit], k: int) -> list[SearchHit]:
    """The ``k`` best-scored hits of several spaces' searches (each space's scores rank alike: fused ranks)."""
    return sorted(hits, key=lambda h: -h.score)[:k]


def _with_shared(recall: Recall, other: Recall, space: str) -> Recall:
    """``recall`` with what a space shared into it recalled, each statement marked with that space."""
    def mark(statements: list[StatementView]) -> list[StatementView]:
        return [s.model_copy(update={"space": space}) for s in statements]

    return recall.model_copy(update={
        "statements": [*recall.statements, *mark(other.statements)],
        "superseded": [*recall.superseded, *mark(other.superseded)],
        "contradictions": [*recall.contradictions, *(
            c.model_copy(update={"a": mark([c.a])[0], "b": mark([c.b])[0]}) for c in other.contradictions)],
        "observations": [*recall.observations, *other.observations],
        "retractions": [*recall.retractions, *other.retractions],
        "withdrawn": [*recall.withdrawn, *mark(other.withdrawn)],
    })
