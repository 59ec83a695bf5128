"""From search hits to a resolved ``Recall``.

Resolution at read time: retracted statements, and those derived only from
retracted items, leave the recall (their retractions are listed to say why);
superseded statements leave the current set (kept
apart to explain a change; superseded summaries are dropped altogether);
consolidation summaries are context and follow every other current statement;
of two statements in an open contradiction, the newer one is read as current
and the older as earlier, unless the older has the higher confidence; and
before any worker has judged them, statements giving the same subject the
same predicate are read newest first, so a correction leads as soon as it is
written.
"""

from __future__ import annotations

from mnemonet.model.api import Recall
from mnemonet.model.views import SearchHit, StatementView
from mnemonet.store.graph import GraphStore
from mnemonet.truth.currency import newest_first_per_attribute


async def build_recall(graph: GraphStore, query: str, hits: list[SearchHit], *, opened_hits: int,
                       contradiction_scan: int) -> Recall:
    """Gather the statements behind the hits, then split them into current and superseded.

    ``opened_hits`` concept and observation hits each are opened for their statements (hybrid+graph
    search folds an observation's extracted statements into it, so they come back through this); the
    newest ``contradiction_scan`` open contradictions touching what was gathered come with it.
    """
    statement_ids = [h.id for h in hits if h.kind in ("statement", "summary")]
    observation_ids = [h.id for h in hits if h.kind == "observation"]
    concept_names = [h.text for h in hits if h.kind == "concept"][:opened_hits]

    gathered: dict[str, StatementView] = {s.id: s for s in await graph.get_statements(statement_ids)}
    ordered = [gathered[i] for i in statement_ids if i in gathered]
    for obs_id in observation_ids[:opened_hits]:
        ordered += await graph.statements_from_observation(obs_id)
    for name in concept_names:
        ordered += await graph.statements_about(name, limit=20, include_superseded=True)
    gathered_all = list({s.id: s for s in ordered}.values())
    # Retracted statements, and those standing only on retracted items, are out; their retractions say why.
    withdrawn = [s for s in gathered_all if s.withdrawn]
    unique = await _without_withdrawn_supersession(graph, [s for s in gathered_all if not s.withdrawn])

    current = newest_first_per_attribute([s for s in unique if not s.superseded_by and not s.summary])
    # Summaries are context, never the answer: after the statements, and only the current ones.
    current += [s for s in unique if s.summary and not s.superseded_by]
    superseded = [s for s in unique if s.superseded_by and not s.summary]
    ids = {s.id for s in unique}
    contradictions = [
        c for c in (await graph.unresolved_contradictions_of(sorted(ids)))[:contradiction_scan]
        if not (c.a.withdrawn or c.b.withdrawn)
    ]
    observations = await graph.get_observations(observation_ids)
    targets = [s.id for s in withdrawn if s.retracted_by]
    targets += [i for s in withdrawn if s.derived_from_retracted for i in s.derived_from]
    retractions = await graph.retractions_of(list(dict.fromkeys(targets))) if targets else []
    return Recall(
        query=query, statements=current, superseded=superseded,
        contradictions=contradictions, observations=observations, retractions=retractions, withdrawn=withdrawn,
    )


async def _without_withdrawn_supersession(graph: GraphStore, statements: list[StatementView]) -> list[StatementView]:
    """The statements, each superseded only by the superseders that still stand.

    The store already leaves retracted superseders out of ``superseded_by``; one standing only on
    retracted items (a correction whose observation was retracted) is found here, so the statement
    it replaced is current again.
    """
    later = sorted({i for s in statements for i in s.superseded_by})
    if not later:
        return statements
    gone = {v.id for v in await graph.get_statements(later) if v.withdrawn}
    if not gone:
        return statements
    return [s.model_copy(update={"superseded_by": [i for i in s.superseded_by if i not in gone]})
            if set(s.superseded_by) & gone else s for s in statements]
