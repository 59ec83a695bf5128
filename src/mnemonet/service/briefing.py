"""Briefing: what a new agent session should know (``MemoryService.brief``), read here, composed by rule in
``truth/brief.py``.

About a subject: its current statements (``statements_about``, at most ``brief_scan``) and the other sides of
their contradictions; with ``since``, its statements replaced since and the retractions of them or of what
they stand on. About the team (no subject): the subjects of the newest current statements, then the most
used concepts (``brief_subjects`` in all), each read as above, and the space's open contradictions; with
``since``, whatever was replaced or retracted since. Always: the most used concepts (``brief_concepts``),
with how many searches returned each. A brief is of one space: the spaces shared into it are not read.
"""

from __future__ import annotations

from mnemonet.model.brief import SessionBrief
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import is_observation_id
from mnemonet.model.records import WORKER_SOURCES, check_name, normalise_name
from mnemonet.model.views import RetractionView, StatementView
from mnemonet.service.common import now_ms
from mnemonet.service.context import ServiceContext
from mnemonet.store import vector_usage
from mnemonet.truth.brief import MIN_BUDGET, BriefMaterial, ConceptUse, compose_brief


class Briefing:
    """Serves ``MemoryService.brief``."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    async def brief(self, subject: str | None = None, since: int | None = None,
                    budget: int | None = None) -> SessionBrief:
        """What a new session should know about ``subject`` (or the team), within ``budget`` tokens
        (``brief_budget`` when None); with ``since`` (epoch ms), what changed since then too."""
        ctx = self._ctx
        settings, graph = ctx.settings, ctx.graph
        budget = _budget(budget, settings.brief_budget, settings.brief_max_budget)
        if subject is not None:
            subject = check_name(subject, "subject", settings.max_name_chars)
        if since is not None and (isinstance(since, bool) or not isinstance(since, int) or since < 0):
            raise InvalidInput("since: must be a non-negative epoch-ms integer")
        scan = settings.brief_scan
        used = await graph.concept_use(max(settings.brief_concepts, settings.brief_subjects))
        searches = await vector_usage.uses_of(ctx.vectors, [str(row["id"]) for row in used])
        concepts = [ConceptUse(id=str(row["id"]), name=str(row["name"]), statements=int(row["statements"]),
                               searches=searches.get(str(row["id"]), (0, 0))[0], last_at=int(row["last_at"] or 0))
                    for row in used[:settings.brief_concepts]]
        subjects = [subject] if subject is not None else await self._team_subjects([c.name for c in concepts])
        statements: list[StatementView] = []
        for name in subjects:
            statements += await graph.statements_about(name, scan)
        partners = [side for c in ([] if subject is not None else await graph.unresolved_contradictions(scan))
                    for side in (c.a, c.b)]
        partners += await self._statements({i for s in statements for i in s.contradicted_by},
                                           known=[*statements, *partners])
        superseded: list[StatementView] = []
        retractions: list[RetractionView] = []
        if since is not None:
            superseded, retractions = await self._changes(subject, since)
        replacements = await self._statements({i for s in superseded for i in s.superseded_by},
                                               known=[*statements, *partners])
        free = {s.predicate for s in [*statements, *partners] if not ctx.vocabulary.known(s.predicate)}
        vocabulary = ctx.vocabulary.with_relations(await graph.predicate_relations(sorted(free)))
        material = BriefMaterial(
            subject=subject, subjects=subjects, as_of=now_ms(), since=since, statements=statements,
            partners=partners, superseded=superseded, replacements=replacements, retractions=retractions,
            concepts=concepts, speakers=await self._speakers([*statements, *partners]),
        )
        return compose_brief(material, vocabulary, settings, budget)

    async def _team_subjects(self, used: list[str]) -> list[str]:
        """The subjects of the newest current statements, then the most used concepts, ``brief_subjects`` of them."""
        settings = self._ctx.settings
        recent = await self._ctx.graph.recent_statements(settings.brief_scan)
        current = [s.subject for s in recent
                   if not (s.superseded_by or s.withdrawn or s.summary) and s.source not in WORKER_SOURCES]
        names: dict[str, str] = {}
        for name in [*current, *used]:
            names.setdefault(normalise_name(name), name)
        return list(names.values())[:settings.brief_subjects]

    async def _changes(self, subject: str | None, since: int) -> tuple[list[StatementView], list[RetractionView]]:
        """What was replaced and what was retracted since ``since``: of the subject's statements, or any."""
        graph, scan = self._ctx.graph, self._ctx.settings.brief_scan
        if subject is None:
            return await graph.superseded_since(since, scan), await graph.retractions_since(since, scan)
        about = await graph.statements_about(subject, scan, include_superseded=True)
        taken = [i for s in about if s.withdrawn for i in (s.id, *s.derived_from)]
        found = await graph.retractions_of(self._bounded(taken)) if taken else []
        return [s for s in about if s.superseded_by], [r for r in found if r.created_at >= since]

    async def _statements(self, ids: set[str], known: list[StatementView]) -> list[StatementView]:
        """The statements of ``ids`` that ``known`` does not hold already."""
        wanted = sorted(ids - {s.id for s in known})
        return await self._ctx.graph.get_statements(self._bounded(wanted)) if wanted else []

    async def _speakers(self, statements: list[StatementView]) -> dict[str, str]:
        """Statement id -> the source of the observation a worker's contradicted inference was drawn from."""
        inferred = [s for s in statements if s.contradicted_by and s.source in WORKER_SOURCES]
        origins = sorted({i for s in inferred for i in s.derived_from if is_observation_id(i)})
        if not origins:
            return {}
        spoken = {o.id: o.source for o in await self._ctx.graph.get_observations(self._bounded(origins)) if o.source}
        return {s.id: spoken[i] for s in inferred for i in s.derived_from if i in spoken}

    def _bounded(self, ids: list[str]) -> list[str]:
        return ids[:self._ctx.settings.graph_ids_per_read_max]


def _budget(budget: object, default: int, largest: int) -> int:
    """A caller's token budget: an integer from ``MIN_BUDGET`` to ``largest``; ``default`` when None."""
    if budget is None:
        return min(default, largest)
    if isinstance(budget, bool) or not isinstance(budget, int) or not MIN_BUDGET <= budget <= largest:
        raise InvalidInput(f"budget: must be an integer from {MIN_BUDGET} to {largest} (tokens)")
    return budget
