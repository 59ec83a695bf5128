"""Relations by meaning (issue 32, item 3): a predicate outside the vocabulary is read as the relation it
means, remembered as a Predicate node, and a change said with it supersedes the same slot."""

from __future__ import annotations

from mnemonet.agents import Ownership, ValidationAgent
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.truth.vocabulary import default_vocabulary, nearest_relation


def test_the_nearest_relation_needs_similarity_and_a_margin() -> None:
    phrases = {"has manager": ("has_manager", [1.0, 0.0, 0.0]), "lives in": ("lives_in", [0.0, 1.0, 0.0]),
               "resides in": ("lives_in", [0.0, 0.96, 0.28])}
    assert nearest_relation([0.99, 0.141, 0.0], phrases, 0.93, 0.02)[0] == "has_manager"
    assert nearest_relation([0.8, 0.6, 0.0], phrases, 0.93, 0.02)[0] is None  # near nothing
    assert nearest_relation([0.70, 0.71, 0.0], phrases, 0.5, 0.02)[0] is None  # no clear winner


def test_a_vocabulary_view_reads_free_predicates_as_their_relations() -> None:
    view = default_vocabulary().with_relations({"has_new_manager": "has_manager", "dances_with": "dances_with",
                                                "lives_in": "has_manager"})
    assert view.canonical("has_new_manager") == "has_manager" and view.spec("has_new_manager").cardinality == "single"
    assert view.canonical("dances_with") == "dances_with"  # means itself: nothing changes
    assert view.canonical("lives_in") == "lives_in"  # a declared relation is never remapped


async def test_a_change_said_with_another_predicate_supersedes_the_same_slot(
    service: MemoryService, service_settings: Settings
) -> None:
    carol = await service.claim("user has_manager: Carol", source="user", idempotency_key="c")
    frank = await service.claim("user has_new_manager: Frank", source="user", idempotency_key="f")
    agent = ValidationAgent(service, service_settings, Ownership.solo("v1"), make_language_model(service_settings))
    await agent.drain()
    [old] = await service.graph.get_statements([carol.statement_id])
    assert old.superseded_by == [frank.statement_id]
    rows = await service.graph.read_query(
        "MATCH (p:Predicate {name: 'has_new_manager'}) RETURN p.relation AS relation, p.similarity AS similarity")
    assert rows and rows[0]["relation"] == "has_manager" and rows[0]["similarity"] >= 0.93  # visible, remembered
    lead = (await service.remember("who is my manager?", source="user")).text.partition("\n")[0]
    assert "Frank" in lead and "Carol" not in lead, lead
