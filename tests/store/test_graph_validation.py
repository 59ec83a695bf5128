"""Malformed input is refused with a ValueError naming the field, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mnemonet.model import (
    ClaimRecord,
    ConceptComponent,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    StatementSpec,
)
from mnemonet.store.graph import GraphStore

ALICE = SourceSpec(name="alice")


def _statement(**over: Any) -> dict[str, Any]:
    return {"id": "s1", "subject": "user", "predicate": "likes", "object": "tea", **over}


BAD_RECORDS: list[tuple[str, Callable[[], object]]] = [
    ("statement.subject", lambda: StatementSpec(**_statement(subject="   "))),
    ("statement.confidence", lambda: StatementSpec(**_statement(confidence="high"))),
    ("statement.confidence", lambda: StatementSpec(**_statement(confidence=float("nan")))),
    ("statement.negated", lambda: StatementSpec(**_statement(negated="yes"))),
    ("statement.id", lambda: StatementSpec(**_statement(id="has space"))),
    ("concept.name", lambda: ConceptSpec(name="")),
    ("source.name", lambda: SourceSpec(name="x" * 500)),
    ("observation.text", lambda: ObservationRecord(id="o1", text="x" * 20_001, source=ALICE)),
    ("relation", lambda: ConceptComponent(name="meetings", relation="is_kind_of")),
]


@pytest.mark.parametrize(("field", "make"), BAD_RECORDS)
def test_records_name_the_bad_field(field: str, make: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match=field):
        make()


def _observation(**over: Any) -> ObservationRecord:
    return ObservationRecord(**{"id": "o1", "text": "t", "source": ALICE, **over})


BAD_WRITES: list[tuple[str, Callable[[], ObservationRecord]]] = [
    ("observation.statements", lambda: _observation(statements=(StatementSpec(**_statement()),) * 2)),
    ("observation.statements", lambda: _observation(id="s1", statements=(StatementSpec(**_statement()),))),
    ("statement.object", lambda: _observation(statements=(StatementSpec(**_statement(object="?!")),))),
    ("concept.aliases", lambda: _observation(concepts=(ConceptSpec(name="tea", aliases=("...",)),))),
]


@pytest.mark.parametrize(("field", "make"), BAD_WRITES)
async def test_bad_writes_are_refused_before_any_io(graph_store: GraphStore, field: str,
                                                    make: Callable[[], ObservationRecord]) -> None:
    with pytest.raises(ValueError, match=field):
        await graph_store.write_observation(make())
    assert set((await graph_store.counts()).values()) == {0}


async def test_bad_claims_and_reads_are_refused(graph_store: GraphStore) -> None:
    own = ClaimRecord(statement=StatementSpec(**_statement()), source=ALICE, derived_from=["s1"])
    with pytest.raises(ValueError, match="claim.derived_from"):
        await graph_store.write_claim(own)
    with pytest.raises(ValueError, match="claim"):
        await graph_store.write_claim("not a claim")  # type: ignore[arg-type]
    for call, field in [
        (graph_store.statements_about("", 5), "concept"),
        (graph_store.statements_about("tea", 10**6), "limit"),
        (graph_store.statements_about("tea", "5"), "limit"),  # type: ignore[arg-type]
        (graph_store.get_statements(["ok", "not ok"]), "ids"),
        (graph_store.get_statements(["x"] * 5000), "ids"),
        (graph_store.recent_observations(since=-1), "since"),
        (graph_store.statements_by_source("w", "o1"), "derived_from"),  # type: ignore[arg-type]
        (graph_store.get_node(""), "id"),
    ]:
        with pytest.raises(ValueError, match=field):
            await call
    assert set((await graph_store.counts()).values()) == {0}
