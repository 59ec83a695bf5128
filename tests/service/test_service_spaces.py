"""Memory spaces on the real embedded databases: each space its own graph and vector schema."""

from __future__ import annotations

import asyncpg
import pytest

from mnemonet.llm import make_language_model
from mnemonet.model.errors import InvalidInput, NotFound
from mnemonet.model.spaces import InSpace
from mnemonet.service import MemoryService, SpacedMemory, build_memory_service
from mnemonet.settings import Settings


async def test_the_same_sentences_in_two_spaces_never_meet(spaced: SpacedMemory) -> None:
    a = await spaced.observe("I prefer morning meetings", "alice", idempotency_key="k1", space="alpha")
    b = await spaced.observe("I prefer morning meetings", "alice", idempotency_key="k1", space="beta")
    # One idempotency key in two spaces is two writes, one in each.
    assert a.created and b.created
    await spaced.observe("actually I hate mornings, afternoon is better", "alice", space="beta")

    alpha_hits = await spaced.search("morning meetings afternoon", space="alpha")
    beta_hits = await spaced.search("morning meetings afternoon", space="beta")
    alpha_ids = {o.id for o in await spaced.get_recent_observations(50, space="alpha")} | {
        s.id for s in await spaced.get_recent_statements(50, space="alpha")}
    assert alpha_hits and {h.id for h in alpha_hits} <= alpha_ids | {
        c.id for c in await spaced.get_concepts(100, space="alpha")}
    assert not any("afternoon" in h.text for h in alpha_hits)
    assert any("afternoon" in h.text for h in beta_hits)
    assert [o.text for o in await spaced.get_recent_observations(space="alpha")] == ["I prefer morning meetings"]
    assert len(await spaced.get_recent_observations(space="beta")) == 2
    assert await spaced.get_recent_observations(space=None) == []  # the default space got nothing

    alpha_answer = await spaced.remember("what are alice's meeting preferences?", space="alpha")
    beta_answer = await spaced.remember("what are alice's meeting preferences?", space="beta")
    assert "afternoon" not in alpha_answer.text and "morning" in alpha_answer.text.split("\n")[0]
    assert "afternoon" in beta_answer.text.split("\n")[0]

    # Concept get-or-create never merges across spaces: each space has its own "morning meetings".
    alpha_concepts = {c.name: c for c in await spaced.get_concepts(space="alpha")}
    beta_concepts = {c.name: c for c in await spaced.get_concepts(space="beta")}
    assert "afternoon" not in " ".join(alpha_concepts)
    shared = set(alpha_concepts) & set(beta_concepts)
    assert shared
    for name in shared:
        alpha_statements = {s.id for s in await spaced.get_concept_statements(name, space="alpha")}
        beta_statements = {s.id for s in await spaced.get_concept_statements(name, space="beta")}
        assert not alpha_statements & beta_statements
    alpha_graph = (await spaced.stats(space="alpha"))["graph"]
    beta_graph = (await spaced.stats(space="beta"))["graph"]
    assert alpha_graph["Observation"] == 1 and beta_graph["Observation"] == 2


async def test_space_names_are_checked_and_unknown_spaces_refused(spaced: SpacedMemory) -> None:
    for bad in ("", "Alpha", "a-b", "a" * 33, "1abc", "../x", "a b", 7):
        with pytest.raises(InvalidInput, match="space"):
            await spaced.observe("hello", space=bad)
    with pytest.raises(NotFound, match="create_space"):
        await spaced.search("hello", space="gamma")
    with pytest.raises(InvalidInput, match="default"):
        await spaced.delete_space("default")
    assert [s.name for s in await spaced.spaces()] == ["default", "alpha", "beta"]
    again = await spaced.create_space("alpha", by="someone else")
    assert again.created_by == "ops"  # the first creation stands


async def test_a_space_cap_is_a_setting(service: MemoryService) -> None:
    service.settings = service.settings.model_copy(update={"spaces_max": 1})
    memory = SpacedMemory(service)
    await memory.create_space("one")
    with pytest.raises(Exception, match="spaces_max"):
        await memory.create_space("two")


async def test_deleting_a_space_removes_its_graph_and_vectors(
    spaced: SpacedMemory, service_settings: Settings, unique_name: str,
) -> None:
    await spaced.observe("the beta team ships on fridays", "bob", space="beta")
    await spaced.observe("the alpha team ships on mondays", "bob", space="alpha")
    racing = await spaced.memory("beta")  # a write in flight while the space is deleted
    assert await spaced.delete_space("beta", by="ops") is True
    assert await spaced.delete_space("beta", by="ops") is False
    # Deleting is erasing: one tombstone in the default space, with what the space held.
    [tomb] = await spaced.tombstones()
    assert (tomb.kind, tomb.space, tomb.by, tomb.observations) == ("space", "beta", "ops", 1)
    with pytest.raises(NotFound):
        await spaced.search("fridays", space="beta")
    assert [s.name for s in await spaced.spaces()] == ["default", "alpha"]
    conn = await asyncpg.connect(service_settings.database_url)
    try:
        schemas = {r["nspname"] for r in await conn.fetch("SELECT nspname FROM pg_namespace")}
    finally:
        await conn.close()
    assert f"{unique_name}__alpha" in schemas and f"{unique_name}__beta" not in schemas
    graphs = await spaced.default.graph.driver._client.execute_command("GRAPH.LIST")  # type: ignore[attr-defined]
    assert f"{unique_name}__alpha" in graphs and f"{unique_name}__beta" not in graphs
    # A write still holding the deleted space's memory is refused, not written into a graph made anew.
    with pytest.raises(NotFound, match="'beta' is erased"):
        await racing.observe("a late write to the deleted space", "bob")
    assert f"{unique_name}__beta" not in await spaced.default.graph.driver._client.execute_command("GRAPH.LIST")  # type: ignore[attr-defined]
    # Recreated, it starts empty.
    await spaced.create_space("beta")
    assert await spaced.get_recent_observations(space="beta") == []
    assert [o.text for o in await spaced.get_recent_observations(space="alpha")] == [
        "the alpha team ships on mondays"]


async def test_memories_written_before_spaces_are_the_default_space(
    service_settings: Settings, embedder, unique_name: str,
) -> None:
    old = await build_memory_service(service_settings, make_language_model(service_settings), embedder,
                                     vector_schema=unique_name)
    try:
        await old.observe("the release is on thursday", "carol")
    finally:
        await old.close()
    reopened = SpacedMemory(await build_memory_service(
        service_settings, make_language_model(service_settings), embedder, vector_schema=unique_name))
    try:
        assert [o.text for o in await reopened.get_recent_observations(space="default")] == [
            "the release is on thursday"]
        assert [h.text for h in await reopened.search("release thursday", kinds=["observation"])] == [
            "carol: the release is on thursday"]
        await reopened.create_space("alpha")
        assert await reopened.search("release thursday", space="alpha") == []
    finally:
        await reopened.close()


async def test_in_space_binds_every_per_space_call(spaced: SpacedMemory) -> None:
    alpha = InSpace(spaced, "alpha")
    await alpha.observe("the alpha build is green", "dan")
    assert [o.text for o in await alpha.get_recent_observations()] == ["the alpha build is green"]
    assert await spaced.get_recent_observations() == []
    assert [s.name for s in await alpha.spaces()] == ["default", "alpha", "beta"]  # not a per-space method


async def test_every_space_infers_with_extraction_once_the_node_knows_an_inference_worker(
    spaced: SpacedMemory,
) -> None:
    workers = False
    spaced.default.inference_runs = lambda: workers  # as the node sets it: read at each extraction
    alpha = await spaced.memory("alpha")
    before = await alpha.observe("I work at Acme", source="alice")
    assert await alpha.graph.statements_by_source("inference-agent", [before.observation_id]) == []
    workers = True  # an inference node joined: the workers serve every space
    after = await alpha.observe("I live in Rome", source="alice")
    [claim] = await alpha.graph.statements_by_source("inference-agent", [after.observation_id])
    assert claim.sentence() == "alice located in Rome" and (await alpha.stats())["extraction_infers"] is True
