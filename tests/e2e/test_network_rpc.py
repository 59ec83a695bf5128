"""Routing, RPC failover, events and provider proxies between real nodes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from netsupport import HangAfterWrite, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.llm.base import ParsedClaim
from mnemonet.model.api import InferredClaim, MemoryAPI, ObserveResult
from mnemonet.model.views import ObservationView
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.client import RemoteEmbedder, RemoteLanguageModel
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.errors import NoCapablePeer
from mnemonet.settings import Settings

NETWORK = "memory"  # routing, failover and events between real nodes: the network is not the point


def _linked(a: PeerNode, *others: PeerNode) -> bool:
    return all(o.node_id in a.transport.neighbours() for o in others)


async def test_request_is_routed_to_a_capable_peer(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    server = await make_node({"store"}, providers={"store": store})
    caller = await make_node({"cli"}, seed=server)
    await eventually(lambda: sees_all([server, caller]), 3.0, "joined")
    assert isinstance(caller.client, MemoryAPI)

    result = await caller.client.observe("water boils at 100 C", source="lab")
    recent = await caller.client.get_recent_observations(limit=3)

    assert isinstance(result, ObserveResult) and result.created
    assert all(isinstance(o, ObservationView) for o in recent)
    assert [o.text for o in recent] == ["water boils at 100 C"]
    assert store.calls == ["observe", "get_recent_observations"]
    assert server.rpc_server.served == 2 and caller.rpc_server.served == 0
    with pytest.raises(ValueError, match="must not be empty"):  # the peer's ValueError arrives as one
        await caller.client.observe("  ")


async def test_failover_when_the_serving_peer_dies_mid_request_applies_once(make_node: NodeFactory) -> None:
    shared = InMemoryStore()  # both store nodes write to one database, as with a shared Neo4j
    dying_store = HangAfterWrite(shared)
    dying = await make_node({"store"}, providers={"store": dying_store})
    backup = await make_node({"store"}, providers={"store": shared}, seed=dying)
    caller = await make_node({"cli"}, seed=dying)
    await eventually(lambda: sees_all([dying, backup, caller]) and _linked(caller, dying, backup), 3.0, "linked")
    # Make the backup look slow so the first attempt goes to the node that will die.
    caller.router.started(backup.node_id)
    caller.router.finished(backup.node_id, 10.0)

    call = asyncio.create_task(caller.client.observe("the kettle is on"))  # no key given: the client makes one
    await asyncio.wait_for(dying_store.applied.wait(), 3.0)
    await dying.kill()
    result = await asyncio.wait_for(call, 5.0)

    assert len(shared.observations) == 1  # applied once, although two nodes ran it
    assert result.observation_id in shared.observations and result.created is False
    assert backup.rpc_server.served == 1


async def test_a_call_in_flight_to_a_peer_declared_dead_fails_over_at_once(make_node: NodeFactory) -> None:
    # No links (max_neighbours 0): calls go as HTTP posts, which no closing link cuts short. A peer declared
    # dead (a partition, a crash) gets no more time: its calls fail over then, not after request_timeout.
    shared = InMemoryStore()
    silent_store = HangAfterWrite(shared)
    unlinked = dict(max_neighbours=0, request_timeout=60.0)
    silent = await make_node({"store"}, providers={"store": silent_store}, **unlinked)
    backup = await make_node({"store"}, providers={"store": shared}, seed=silent, **unlinked)
    caller = await make_node({"cli"}, seed=silent, **unlinked)
    await eventually(lambda: sees_all([silent, backup, caller]), 3.0, "joined")
    assert caller.transport.link_to(silent.node_id) is None
    caller.router.started(backup.node_id)  # the backup looks slow: the first attempt goes to the silent node
    caller.router.finished(backup.node_id, 10.0)

    call = asyncio.create_task(caller.client.observe("the kettle is on"))
    await asyncio.wait_for(silent_store.applied.wait(), 3.0)
    caller.membership.mark_dead(silent.node_id)  # what the caller's detector concludes of a silent peer
    result = await asyncio.wait_for(call, 5.0)

    assert len(shared.observations) == 1 and result.created is False  # applied once: one key for both
    assert backup.rpc_server.served == 1


async def test_requests_fail_clearly_without_a_capable_peer(make_node: NodeFactory) -> None:
    lonely = await make_node({"cli"})
    with pytest.raises(NoCapablePeer, match="'store'"):
        await lonely.client.stats()


async def test_node_lacking_the_capability_names_it(make_node: NodeFactory) -> None:
    cli = await make_node({"cli"})
    other = await make_node({"store"}, providers={"store": InMemoryStore()}, seed=cli)
    await eventually(lambda: sees_all([cli, other]), 3.0, "joined")
    member = other.membership.get(cli.node_id)

    async def ask(method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        env = Envelope(kind=Kind.REQUEST, sender=other.node_id, target=cli.node_id, method=method,
                       payload={"kwargs": kwargs, "idempotency_key": "k"})
        return (await other.transport.call(member, env, 2.0)).payload["error"]

    missing = await ask("observe", {"text": "x"})
    assert missing["code"] == "missing_capability" and "'store'" in missing["message"]
    unknown = await ask("clear_everything", {})
    assert unknown["code"] == "unknown_method"


async def test_event_reaches_every_node_once_per_listener(make_node: NodeFactory) -> None:
    store = await make_node({"store"}, providers={"store": InMemoryStore()})
    nodes = [store, *[await make_node({"cli"}, seed=store) for _ in range(4)]]
    await eventually(lambda: sees_all(nodes) and all(len(n.transport.neighbours()) == 4 for n in nodes),
                     5.0, "all linked")
    received: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for node in nodes:
        for index in range(2):  # two listeners per node, one sync and one async
            bucket = received.setdefault((node.node_id, index), [])
            if index == 0:
                node.events.subscribe(bucket.append)
            else:
                async def listener(event: dict[str, Any], bucket: list[dict[str, Any]] = bucket) -> None:
                    await asyncio.sleep(0)
                    bucket.append(event)
                node.events.subscribe(listener)

    result = await nodes[3].client.observe("an event worth telling")
    claim = await nodes[1].client.claim("tea is hot")
    await eventually(lambda: all(len(b) == 2 for b in received.values()), 3.0, "every listener got both events")
    await asyncio.sleep(0.5)  # duplicates, if any, would arrive by now
    for bucket in received.values():
        assert [(e["type"], e["ids"]) for e in bucket] == [
            ("observation", [result.observation_id]), ("claim", [claim.statement_id])]


async def test_provider_proxies_reach_llm_and_embed_peers(make_node: NodeFactory) -> None:
    from mnemonet.embed import make_embedder
    from mnemonet.llm.factory import make_language_model

    models = await make_node({"llm", "embed"}, llm="offline")  # built lazily from settings
    # The first infer waits for the models node to load the offline model's parser (seconds on loaded
    # cores; alone under load it outlived the test profile's 5 s), so the caller gets the default budget.
    store = await make_node({"store"}, providers={"store": InMemoryStore()}, seed=models,
                            request_timeout=Settings.model_fields["request_timeout"].default)
    await eventually(lambda: sees_all([models, store]), 3.0, "joined")

    llm = RemoteLanguageModel(store)
    local = make_language_model(models.settings)
    parsed = await llm.parse_claim("alice likes tea", "agent")
    assert isinstance(parsed, ParsedClaim) and parsed == await local.parse_claim("alice likes tea", "agent")
    inferred = await store.client.infer("Bob works at Acme.")
    assert inferred and all(isinstance(c, InferredClaim) for c in inferred)

    embedder = make_embedder(models.settings)
    remote = RemoteEmbedder(store, embedder.model, embedder.dimension, batch_size=2)
    vectors = await remote.embed(["one", "two", "three"], kind="query")
    assert len(vectors) == 3 and all(len(v) == embedder.dimension for v in vectors)
    assert models.health()["dependencies"] == {"llm": "ready", "embed": "ready"}
