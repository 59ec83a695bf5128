"""The read-only guard of ``read_query``: the lexical fence alone, and both fences through the store."""

from __future__ import annotations

import pytest

from mnemonet.store.cypher_guard import check_read_only
from mnemonet.store.graph import GraphStore
from mnemonet.store.graph_errors import ReadOnlyViolation

ALLOWED = [
    "MATCH (n) RETURN n LIMIT 5",
    "MATCH (n) WHERE n.name = 'CREATE (x)' RETURN n",
    'MATCH (n) WHERE n.note = "set \\" delete" RETURN n',
    "MATCH (n) // DELETE n\nRETURN count(n)",
    "MATCH (n) WHERE n.name STARTS WITH 'a' RETURN n.created_at",
    "MATCH (n) RETURN n.`merge` AS m",
    "CALL db.labels() YIELD label RETURN label",
    "call DB.relationshipTypes()",
    "MATCH (n) RETURN n;",
]

REFUSED = [
    "CREATE (n:X)",
    "create (n:X)",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) SET n.x = 1",
    "match (n) remove n.x",
    "MERGE (n:X {id: 1})",
    "MATCH (n) /* just a read */ SET n.x = 1",
    "MATCH (n) // comment\n DELETE n",
    "MATCH (n) RETURN n; CREATE (m)",
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
    "MATCH (n) FOREACH (x IN [1] | CREATE (:Y))",
    "CALL db.idx.fulltext.createNodeIndex('Concept', 'name')",
    "CALL apoc.create.node(['X'], {})",
    "CALL dbms.setConfigValue('x', 'y')",
    "CALL db . labels . hack()",
    "DROP INDEX foo",
    "MATCH (n) RETURN n /* unterminated",
    "MATCH (n) WHERE n.x = 'unterminated RETURN n",
    "",
    "   ",
]


@pytest.mark.parametrize("cypher", ALLOWED)
def test_guard_allows_reads(cypher: str) -> None:
    check_read_only(cypher)


@pytest.mark.parametrize("cypher", REFUSED)
def test_guard_refuses_writes(cypher: str) -> None:
    with pytest.raises(ReadOnlyViolation, match="cypher"):
        check_read_only(cypher)


async def test_store_refuses_writes_and_writes_nothing(graph_store: GraphStore) -> None:
    for cypher in ["CREATE (:Statement {id: 'x'})", "mErGe (n:Concept {key: 'k'})",
                   "MATCH (n) /* hide */ DETACH DELETE n", "CALL db.idx.fulltext.createNodeIndex('Concept', 'name')"]:
        with pytest.raises(ReadOnlyViolation):
            await graph_store.read_query(cypher)
    assert set((await graph_store.counts()).values()) == {0}


async def test_engine_read_only_mode_is_the_second_fence(graph_store: GraphStore) -> None:
    # Bypass the lexical guard: the engine itself must refuse a write in read mode.
    with pytest.raises(ReadOnlyViolation):
        await graph_store.driver.read("CREATE (:Statement {id: 'x'})", {})
    assert (await graph_store.counts())["Statement"] == 0


async def test_read_query_bounds_its_input(graph_store: GraphStore) -> None:
    with pytest.raises(ValueError, match="cypher"):
        await graph_store.read_query("RETURN 1 " + " " * graph_store.settings.graph_raw_query_max_chars)
    with pytest.raises(ValueError, match="params"):
        await graph_store.read_query("RETURN $x", {f"p{i}": i for i in range(100)})
    with pytest.raises(ValueError, match="params"):
        await graph_store.read_query("RETURN 1", {"bad name": 1})
