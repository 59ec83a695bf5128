"""From search hits to a resolved ``Recall``, and from a ``Recall`` to the memory lines an answer may use.

Resolution at read time: superseded statements leave the current set (kept
apart to explain a change); of two statements in an open contradiction, the
newer one is read as current and the older as earlier, unless the older has
the higher confidence; and before any worker has judged them, statements
giving the same subject the same predicate are read newest first, so a
correction leads as soon as it is written.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mnemonet.model.api import Recall
from mnemonet.model.views import ContradictionView, SearchHit, StatementView
from mnemonet.store.graph import GraphStore

# How many observation/concept hits are opened up into their statements. hybrid+graph search
# folds an observation's extracted statements into it, so they come back through this.
OPENED_HITS = 10
# Open contradictions scanned for the ones touching the recalled statements.
CONTRADICTION_SCAN = 500


async def build_recall(graph: GraphStore, query: str, hits: list[SearchHit]) -> Recall:
    """Gather the statements behind the hits, then split them into current and superseded."""
    statement_ids = [h.id for h in hits if h.kind in ("statement", "summary")]
    observation_ids = [h.id for h in hits if h.kind == "observation"]
    concept_names = [h.text for h in hits if h.kind == "concept"][:OPENED_HITS]

    gathered: dict[str, StatementView] = {s.id: s for s in await graph.get_statements(statement_ids)}
    ordered = [gathered[i] for i in statement_ids if i in gathered]
    for obs_id in observation_ids[:OPENED_HITS]:
        ordered += await graph.statements_from_observation(obs_id)
    for name in concept_names:
        ordered += await graph.statements_about(name, limit=20, include_superseded=True)
    unique = list({s.id: s for s in ordered}.values())

    current = newest_first_per_attribute([s for s in unique if not s.superseded_by])
    superseded = [s for s in unique if s.superseded_by]
    ids = {s.id for s in unique}
    contradictions = [
        c for c in await graph.unresolved_contradictions(CONTRADICTION_SCAN) if c.a.id in ids or c.b.id in ids
    ]
    observations = await graph.get_observations(observation_ids)
    return Recall(
        query=query, statements=current, superseded=superseded,
        contradictions=contradictions, observations=observations,
    )


def newest_first_per_attribute(statements: list[StatementView]) -> list[StatementView]:
    """The statements in their order, except that those sharing subject and predicate are listed
    together, newest first, where the first of them stood."""
    groups: dict[tuple[str, str], list[StatementView]] = {}
    for s in statements:
        groups.setdefault((s.subject.casefold(), s.predicate), []).append(s)
    return [s for group in groups.values() for s in sorted(group, key=lambda s: -s.created_at)]


def earlier_side(c: ContradictionView) -> tuple[StatementView, StatementView]:
    """(earlier, current) of a contradiction: the newer wins unless it is less confident."""
    older, newer = sorted((c.a, c.b), key=lambda s: s.created_at)
    if newer.confidence < older.confidence:
        return newer, older
    return older, newer


def memory_lines(recall: Recall, budget_chars: int) -> list[tuple[str, str]]:
    """(id, one line) pairs for the answer prompt, current knowledge first, within the budget.

    Each line reads ``<fact> | <status> | <provenance...>`` with status one of
    ``current``, ``current, contested``, ``earlier`` or ``observed``.
    """
    replaced_by: dict[str, str] = {}
    earlier_views: dict[str, StatementView] = {}
    for c in recall.contradictions:
        earlier, current = earlier_side(c)
        replaced_by[earlier.id] = current.id
        earlier_views[earlier.id] = earlier

    lines: list[tuple[str, str]] = []
    for s in recall.statements:
        if s.id in replaced_by:
            continue
        status = "current, contested" if s.contradicted_by else "current"
        lines.append((s.id, f"{s.sentence()} | {status} | {_provenance(s)}"))
    for s in earlier_views.values():
        lines.append((s.id, f"{s.sentence()} | earlier | {_provenance(s)} | contradicted by newer {replaced_by[s.id]}"))
    for s in recall.superseded:
        lines.append((s.id, f"{s.sentence()} | earlier | {_provenance(s)} | superseded by "
            f"{', '.join(s.superseded_by)}"))
    for o in recall.observations:
        text = " ".join(o.text.split())
        lines.append((o.id, f"{text} | observed | from {o.source or 'unknown'} | {_date(o.created_at)}"))

    kept: list[tuple[str, str]] = []
    used = 0
    for line_id, text in lines:
        used += len(text) + len(line_id) + 4
        if used > budget_chars:
            break
        kept.append((line_id, text))
    return kept


def _provenance(s: StatementView) -> str:
    return f"confidence {s.confidence:.2f} | from {s.source or 'unknown'} | {_date(s.created_at)}"


def _date(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
