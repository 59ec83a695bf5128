"""The observation is the record, across real nodes: written while no llm peer exists, extracted once one joins.

A store+embed node (its language model is the p2p proxy to llm peers), an
inference node, a client node and an llm node, which is then stopped.
Observations are acknowledged as pending; when an llm node joins, the
inference worker has each extracted exactly once (one done-marker, one set of
statements) within 30 s, its claims inferred in the same call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from netsupport import NodeFactory, eventually, sees_all

from mnemonet.p2p.client import RemoteLanguageModel
from mnemonet.service import MemoryService

NETWORK = "memory"  # extraction routed to an llm peer that joins later: the network is not the point
# request_timeout: observe embeds on the CPU; a loaded 2-core machine can take seconds.
TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.05, extraction_grace=0.5,
              request_timeout=30.0)


# A short grace, so the inference worker takes pending extractions within the test.
STORE_SETTINGS = dict(extraction_grace=0.5)


async def _extraction_ledger(service: MemoryService) -> dict[str, tuple[int, int]]:
    """Per observation: extraction done-markers, and statements its speaker asserted from it."""
    rows = await service.graph.read_query(
        "MATCH (o:Observation)-[:RECORDED_BY]->(src:Source) "
        "OPTIONAL MATCH (o)<-[m:PROCESSED]-(:Source {name: 'extractor'}) "
        "WITH o, src, count(m) AS marks "
        "OPTIONAL MATCH (o)<-[:DERIVED_FROM]-(s:Statement)-[:ASSERTED_BY]->(src) "
        "RETURN o.id AS id, marks, count(s) AS statements", {})
    return {r["id"]: (r["marks"], r["statements"]) for r in rows}


async def test_observe_with_no_llm_peer_is_acknowledged_then_extracted_once_when_one_joins(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "embed"}, providers={"store": store_service}, **TIMERS)
    store_service.llm = RemoteLanguageModel(store)  # what a store node without llm is wired with
    inference = await make_node({"inference"}, seed=store, **TIMERS)
    client = await make_node({"cli"}, seed=store, **TIMERS)
    first_llm = await make_node({"llm"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, inference, client, first_llm]), 5.0, "four nodes joined")
    inline = await client.client.observe("Gwen works at Hooli", source="alice", idempotency_key="before")
    assert not inline.pending and [s.sentence() for s in inline.statements] == ["Gwen works at Hooli"]

    await first_llm.stop()  # the llm node stopped: no language model answers now
    await eventually(lambda: not store.membership.alive("llm"), 10.0, "the store node no longer lists an llm peer")
    texts = ["Dana works at Initech", "Erin lives in Oslo", "Frank likes jazz"]
    results = [await client.client.observe(t, source="alice", idempotency_key=f"k{i}") for i, t in enumerate(texts)]
    assert all(r.created and r.pending and not r.statements for r in results)
    assert all("no language model answered" in (r.extraction_error or "") for r in results)
    assert (await client.client.stats())["extractions_pending"] == 3
    assert [o.text for o in await client.client.get_recent_observations(3)] == texts[::-1]  # kept whole

    llm = await make_node({"llm"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, inference, client, llm]), 5.0, "the llm node joined")

    async def extracted() -> bool:
        return (await store_service.stats())["extractions_pending"] == 0

    took = await _wait(extracted, 30.0)
    ledger = await _extraction_ledger(store_service)
    assert ledger == {r.observation_id: (1, 1) for r in [inline, *results]}  # each extracted exactly once
    sentences = {s.sentence() for s in await store_service.get_recent_statements(20) if s.source == "alice"}
    assert sentences == {*texts, "Gwen works at Hooli"}
    # The marker commits before the reply reaches the worker: let the replies land.
    await eventually(lambda: inference.worker_stats()[0]["extracted"] == 3, 10.0, "the worker counted 3")
    # The store knows the inference node, so each late extraction inferred the claims in the same call
    # (infer_with_extraction auto): each once, derived from its observation, and no separate infer call.
    claims = {s.sentence(): s.derived_from for s in await store_service.get_recent_statements(20)
              if s.source == "inference-agent"}
    assert claims == {"Hooli employs Gwen": [inline.observation_id],
                      "Initech employs Dana": [results[0].observation_id],
                      "Erin located in Oslo": [results[1].observation_id],
                      "Frank interested in jazz": [results[2].observation_id]}
    assert await store_service.pending_observations("inference-agent") == []
    assert store_service.llm_calls["infer"] == 0 and inference.worker_stats()[0]["processed"] == 0
    # A retried observe now returns the extraction, without another one.
    again = await client.client.observe(texts[0], source="alice", idempotency_key="k0")
    assert not again.created and not again.pending
    assert [s.sentence() for s in again.statements if s.source == "alice"] == [texts[0]]
    assert await _extraction_ledger(store_service) == ledger
    print(f"\nextracted 3 pending observations {took:.2f}s after the llm node joined")


async def _wait(check: Callable[[], Awaitable[bool]], within: float) -> float:
    start = time.monotonic()
    while not await check():
        assert time.monotonic() - start < within, f"not extracted within {within}s"
        await asyncio.sleep(0.1)
    return time.monotonic() - start
