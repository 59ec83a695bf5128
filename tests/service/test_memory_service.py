"""MemoryService on the real embedded databases with the offline language model."""

from __future__ import annotations

import pytest

from mnemonet.model.ids import short_id
from mnemonet.model.secrets import SecretRefused
from mnemonet.service import MemoryService


async def test_meeting_scenario(service: MemoryService) -> None:
    first = await service.observe("I prefer morning meetings", source="user")
    assert [s.sentence() for s in first.statements] == ["user prefers morning meetings"]
    second = await service.observe("actually I hate mornings, afternoon is better", source="user")
    sentences = {s.sentence() for s in second.statements}
    # "mornings" resolves, by its alias, to the "morning" concept of the first observation.
    assert "user dislikes morning" in sentences
    afternoon = next(s for s in second.statements if s.predicate == "prefers")
    morning = first.statements[0]

    claim = await service.claim(f"{afternoon.sentence()} contradicts {morning.sentence()}", source="validator")
    assert set(claim.contradicts) == {afternoon.id, morning.id}

    answer = await service.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert "afternoon" in lead and "morning" not in lead
    changed = rest.partition("Changed:")[2]
    was, now = f"{morning.sentence()} ({short_id(morning.id)})", f"{afternoon.sentence()} ({short_id(afternoon.id)})"
    assert f"{was} -> {now}" in changed
    assert answer.provider.startswith("offline") and not answer.degraded

    recall = await service.recall("what are my meeting preferences?")
    [conflict] = [c for c in recall.contradictions if {c.a.id, c.b.id} == {afternoon.id, morning.id}]
    for side in (conflict.a, conflict.b):
        assert side.source == "user"
        assert side.derived_from, "each side keeps the observation it came from"
    assert {conflict.a.derived_from[0], conflict.b.derived_from[0]} == {first.observation_id, second.observation_id}


async def test_a_correction_leads_before_any_worker_judged_it(service: MemoryService) -> None:
    # No claim and no validation agent: read-time resolution alone puts the newer preference first.
    await service.observe("I prefer morning meetings", source="user")
    await service.observe("actually I hate mornings, afternoon is better", source="user")
    answer = await service.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert "afternoon" in lead and "morning" not in lead
    assert "user prefers morning meetings" in rest


async def test_each_call_makes_exactly_one_language_model_call(service: MemoryService) -> None:
    before = service.llm.usage()["calls"]
    await service.observe("Alice works at Acme")
    assert service.llm.usage()["calls"] == before + 1
    await service.claim("Acme employs Alice")
    assert service.llm.usage()["calls"] == before + 2
    await service.remember("where does Alice work?")
    assert service.llm.usage()["calls"] == before + 3
    assert service.llm_calls == {"observe": 1, "claim": 1, "remember": 1}
    assert (await service.stats())["llm_calls"] == {"observe": 1, "claim": 1, "remember": 1}


async def test_retried_observe_writes_once(service: MemoryService) -> None:
    a = await service.observe("Bob lives in Paris", idempotency_key="req-1")
    b = await service.observe("Bob lives in Paris", idempotency_key="req-1")
    assert a.observation_id == b.observation_id
    assert a.created and not b.created
    counts = (await service.stats())["graph"]
    assert counts["Observation"] == 1
    assert counts["Statement"] == len(a.statements)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "text: must not be empty"), ("   ", "text: must not be empty"), ("x" * 20_001, "longer than"),
     (42, "text: must be a string"), (None, "text: must be a string")],
)
async def test_bad_input_is_refused_and_nothing_written(service: MemoryService, text: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await service.observe(text)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        await service.claim(text)  # type: ignore[arg-type]
    assert (await service.stats())["graph"].get("Observation", 0) == 0
    assert service.llm.usage()["calls"] == 0


async def test_secret_is_refused_before_storage_or_model(service: MemoryService) -> None:
    with pytest.raises(SecretRefused) as err:
        await service.observe("my key is AKIAIOSFODNN7EXAMPLE")
    assert "AKIAIOSFODNN7EXAMPLE" not in str(err.value)
    assert service.llm.usage()["calls"] == 0
    assert (await service.stats())["graph"].get("Observation", 0) == 0


async def test_secrets_are_refused_in_every_field_that_is_stored_or_sent_to_the_model(service: MemoryService) -> None:
    aws = "AKIAIOSFODNN7EXAMPLE"
    first = await service.observe("I prefer morning meetings", source="user")
    second = await service.observe("actually I hate mornings, afternoon is better", source="user")
    a, b = first.statements[0].id, second.statements[0].id
    attempts = {
        "source": lambda: service.observe("hello", source=f"bot {aws}"),
        "metadata": lambda: service.observe("hello", metadata={"note": f"the password for db01 is {aws}"}),
        "claim source": lambda: service.claim("Bob lives in Paris", source=f"bot {aws}"),
        "query": lambda: service.remember(f"what is the password for db01? it was Tr0ub4dor&3 {aws}"),
        "reason": lambda: service.link_statements("CONTRADICTS", a, b, f"see token {aws}", "validation"),
        "summary": lambda: service.record_summary("c1", f"user key {aws}", [a], "consolidation"),
    }
    for field, attempt in attempts.items():
        with pytest.raises(SecretRefused) as err:
            await attempt()
        assert aws not in str(err.value), field
    graph = (await service.stats())["graph"]
    assert graph["Observation"] == 2 and graph.get("CONTRADICTS", 0) == 0
    assert service.llm_calls["remember"] == 0


async def test_search_and_load_round_trip(service: MemoryService) -> None:
    await service.observe("Carol enjoys hiking in the Alps")
    hits = await service.search("who likes hiking?", k=10)  # extracted statements follow other hits
    assert hits and hits[0].score == 1.0
    assert all(h.vector_rank is not None or h.keyword_rank is not None or h.graph_path for h in hits)
    items = await service.load([h.id for h in hits])
    assert [i["id"] for i in items] == [h.id for h in hits if h.kind in ("statement", "observation", "concept")]
    statement = next(i for i in items if i["kind"] == "statement")
    assert statement["derived_from"], "a loaded statement carries its provenance"


async def test_audit_records_and_revocations_outlive_clear(service: MemoryService) -> None:
    await service.observe("Bob lives in Paris", source="alice")
    await service.record_audit("alice", "observe", "node-a", "ok", "obs-1")
    await service.revoke_token("0" * 32, "ops")
    await service.record_audit("ops", "clear", "node-b", "ok", "")
    await service.clear()
    log = await service.audit_log(10)
    assert [(e.who, e.method, e.node, e.outcome) for e in log] == [
        ("ops", "clear", "node-b", "ok"), ("alice", "observe", "node-a", "ok")]
    assert log[0].at >= log[1].at > 0 and log[0].id != log[1].id
    assert await service.revoked_tokens() == ["0" * 32]
    assert (await service.stats())["graph"].get("Observation", 0) == 0
    with pytest.raises(ValueError, match="detail"):
        await service.record_audit("ops", "clear", "node-b", "ok", "x" * 10_000)
