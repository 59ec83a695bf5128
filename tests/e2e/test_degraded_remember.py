"""``remember`` with the llm node gone: answered by rule from recall, marked degraded, never failed."""

from __future__ import annotations

from netsupport import NodeFactory, eventually, sees_all

from mnemonet.p2p.client import RemoteLanguageModel
from mnemonet.service import MemoryService

NETWORK = "memory"  # routing to an llm peer and its leaving: the network is not the point


async def test_remember_is_degraded_not_failed_when_the_llm_node_leaves(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    timers = dict(llm="offline", request_timeout=60.0)
    store = await make_node({"store", "embed"}, providers={"store": store_service}, **timers)
    store_service.llm = RemoteLanguageModel(store)  # a store node without llm asks an llm peer, as in production
    llm = await make_node({"llm"}, seed=store, **timers)
    client = await make_node({"cli"}, seed=store, **timers)
    await eventually(lambda: sees_all([store, llm, client]), 5.0, "three nodes joined")

    await client.client.observe("I prefer morning meetings")
    await client.client.observe("actually I hate mornings, afternoon is better")
    answered = await client.client.remember("what are my meeting preferences?")
    assert not answered.degraded and answered.provider == "remote (llm peer)"

    await llm.stop()
    await eventually(lambda: not store.membership.alive("llm"), 10.0, "the store node no longer lists an llm peer")
    answer = await client.client.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert answer.degraded and answer.provider == "rule-based composer (degraded)"
    assert "afternoon" in lead and "morning" not in lead
    assert rest.startswith("(Degraded: no language model answered") and "user prefers morning meetings" in rest
    assert answer.confidence > 0 and answer.cited
