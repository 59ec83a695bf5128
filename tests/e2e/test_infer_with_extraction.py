"""``infer_with_extraction`` auto on real nodes: one model call per observation once an inference node runs.

A store+llm+embed node and a client, no inference node: an observation is
extracted and nothing is inferred (no worker runs to stand for the claims).
An inference node joins: it infers that backlog with its own call, and from
then on each extraction infers the claims in the same call, so the worker
asks the model nothing more.
"""

from __future__ import annotations

from netsupport import NodeFactory, eventually, sees_all

from mnemonet.agents import InferenceAgent
from mnemonet.service import MemoryService

# request_timeout: an observe (extraction, claims, embeddings on the CPU) may take seconds on a loaded machine.
POLL, REQUEST_TIMEOUT = 0.5, 60.0
TIMERS = dict(llm="offline", worker_poll_interval=POLL, worker_event_debounce=0.05, request_timeout=REQUEST_TIMEOUT)
SOURCE = InferenceAgent.source
# A worker pass is a routed call or two (each ends within request_timeout) after a poll at the latest.
PASS_BOUND = 2 * REQUEST_TIMEOUT + 2 * POLL


async def _claims(service: MemoryService) -> dict[str, list[str]]:
    return {s.sentence(): s.derived_from for s in await service.get_recent_statements(50) if s.source == SOURCE}


async def test_the_extraction_infers_once_the_store_knows_an_inference_node(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **TIMERS)
    client = await make_node({"cli"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, client]), 5.0, "two nodes joined")

    before = await client.client.observe("I work at Acme", source="alice")
    assert [s.sentence() for s in before.statements] == ["alice works at Acme"]
    assert await _claims(store_service) == {}  # no inference node: nothing inferred
    assert [o.id for o in await store_service.pending_observations(SOURCE)] == [before.observation_id]
    assert dict(store_service.llm_calls) == {"observe": 1}
    assert (await client.client.stats())["extraction_infers"] is False

    inference = await make_node({"inference"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, client, inference]), 5.0, "the inference node joined")
    assert (await client.client.stats())["extraction_infers"] is True

    async def inferred() -> bool:
        return not await store_service.pending_observations(SOURCE)

    await eventually(lambda: inference.worker_stats()[0]["processed"] == 1, PASS_BOUND,
                     "the worker inferred the backlog")
    assert await inferred()
    assert await _claims(store_service) == {"Acme employs alice": [before.observation_id]}
    assert inference.worker_stats()[0]["llm_calls"] == 1  # its own call, for the one it found waiting

    after = await client.client.observe("I live in Rome", source="alice")
    assert await inferred()  # done with the extraction: the worker never sees it waiting
    assert await _claims(store_service) == {"Acme employs alice": [before.observation_id],
                                            "alice located in Rome": [after.observation_id]}
    assert [s.sentence() for s in after.statements] == ["alice lives in Rome"]  # the observation's own
    assert dict(store_service.llm_calls) == {"observe": 2, "infer": 1}  # 3 calls: 1 + 2 before the worker
    assert (await store_service.stats())["backlog"]["inference"] == 0
    # Its passes go on (events, polls) and find nothing to ask about.
    passes = inference.worker_stats()[0]["passes"]
    await eventually(lambda: inference.worker_stats()[0]["passes"] > passes, PASS_BOUND, "another worker pass")
    assert inference.worker_stats()[0]["llm_calls"] == 1 and inference.worker_stats()[0]["processed"] == 1
