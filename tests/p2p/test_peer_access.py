"""Peer calls checked on the serving side: a worker-internal method needs the caller to have announced its
capability, and an admin method needs the client's admin token to travel with the request, not just a peer."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, client_token, eventually, sees_all

from mnemonet.model.api import InferredClaim
from mnemonet.model.errors import Forbidden
from mnemonet.model.views import ObservationView, StatementView, WriteResult
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import Codec, Envelope, Kind


class WorkerStore(InMemoryStore):
    """Serves the worker-internal methods the tests call (and the workers poll), recording each call."""

    async def record_inference(self, observation_id: str, claims: list[InferredClaim], source: str) -> WriteResult:
        self.calls.append(f"record_inference:{source}")
        return WriteResult(id=observation_id, created=False)

    async def link_statements(self, kind: str, from_id: str, to_id: str, reason: str, source: str) -> bool:
        self.calls.append(f"link_statements:{source}")
        return False

    async def record_summary(self, concept_id: str, text: str, derived_from: list[str], source: str) -> WriteResult:
        self.calls.append(f"record_summary:{source}")
        return WriteResult(id=concept_id, created=False)

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        return []

    async def pending_extractions(self, limit: int = 100) -> list[ObservationView]:
        return []

    async def pending_statements(self, source: str, limit: int = 100) -> list[StatementView]:
        return []


async def _joined(make_node: NodeFactory, store: WorkerStore, *capabilities: str) -> tuple[PeerNode, list[PeerNode]]:
    seed = await make_node({"store"}, providers={"store": store})
    peers = [await make_node({c}, seed=seed) for c in capabilities]
    await eventually(lambda: sees_all([seed, *peers]), 10.0, "every peer joined")
    return seed, peers


async def test_a_peer_without_the_capability_cannot_call_worker_methods(make_node: NodeFactory) -> None:
    store = WorkerStore()
    _, (cli, embed, inference) = await _joined(make_node, store, "cli", "embed", "inference")
    for peer in (cli, embed):
        with pytest.raises(Forbidden, match="inference") as refused:
            await peer.client.record_inference("obs-1", [InferredClaim(text="x is y")], "mallory")
        assert peer.node_id in str(refused.value)
        with pytest.raises(Forbidden, match="validation"):
            await peer.client.link_statements("SUPERSEDES", "s1", "s2", "because", "mallory")
        with pytest.raises(Forbidden, match="consolidation"):
            await peer.client.record_summary("c1", "all wrong", ["s1"], "mallory")
    with pytest.raises(Forbidden, match="validation"):  # one worker capability does not open another's methods
        await inference.client.link_statements("SUPERSEDES", "s1", "s2", "because", "mallory")
    assert not [c for c in store.calls if c.endswith(":mallory")]  # refused before anything ran
    await inference.client.record_inference("obs-1", [InferredClaim(text="x is y")], "inference")
    assert "record_inference:inference" in store.calls


async def test_admin_methods_need_the_clients_admin_token_not_just_a_peer(make_node: NodeFactory) -> None:
    store = WorkerStore()
    await store.observe("keep me", "alice")
    seed, (front,) = await _joined(make_node, store, "cli")
    with pytest.raises(Forbidden, match="admin"):
        await front.client.clear()  # a peer on its own: the cluster key is no admin credential
    with pytest.raises(Forbidden, match="admin"):
        await front.client.audit_log()
    assert store.observations
    # Routed through the cli node, the client's token goes with the call; only an admin one opens it.
    async with httpx.AsyncClient(base_url=front.url) as http:
        writer = await http.post("/v1/clear", json={}, headers={"authorization": f"Bearer {client_token('write')}"})
        admin = await http.post("/v1/clear", json={},
                                headers={"authorization": f"Bearer {client_token('admin', name='ops')}"})
    assert writer.status_code == 403
    assert admin.status_code == 200, admin.text
    assert not store.observations
    # The token list every node refreshes is not an admin call between peers.
    assert await front.client.revoked_tokens() == []


def _codec() -> Codec:
    return Codec(CLUSTER_KEY, max_bytes=10**8, max_age=30.0, replay_entries=1000)


async def _post_request(node: PeerNode, sender: str, method: str, kwargs: dict[str, Any],
                        credential: str | None = None) -> dict[str, Any]:
    """What a key holder gets for a signed request it POSTs over HTTP in ``sender``'s name: the reply's payload."""
    payload: dict[str, Any] = {"kwargs": kwargs, **({"credential": credential} if credential is not None else {})}
    env = Envelope(kind=Kind.REQUEST, sender=sender, target=node.node_id, method=method, payload=payload)
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{node.url}/v1/peer", content=_codec().encode(env))
    assert reply.status_code == 200, reply.text
    return _codec().decode(reply.content).payload


async def test_a_worker_method_over_http_is_refused_whatever_sender_it_claims(make_node: NodeFactory) -> None:
    # Issue 31, row 15: a key holder POSTing as the inference node called its methods (the capability was taken
    # from the claimed sender). Worker methods are served only on a link, whose handshake bound its peer's id.
    store = WorkerStore()
    seed, (inference,) = await _joined(make_node, store, "inference")
    answer = await _post_request(seed, inference.node_id, "record_inference",
                                 {"observation_id": "obs-1", "claims": [{"text": "x is y"}], "source": "mallory"})
    assert answer["error"]["code"] == "forbidden" and "link" in answer["error"]["message"]
    assert "record_inference:mallory" not in store.calls
    # The worker itself calls over its link (dialled for the call if it had none).
    await inference.client.record_inference("obs-1", [InferredClaim(text="x is y")], "inference")
    assert "record_inference:inference" in store.calls


async def test_audit_records_are_written_by_the_serving_node_never_taken_from_a_peer(make_node: NodeFactory) -> None:
    # Issue 31, row 15: ``record_audit`` from any key holder was stored as given. No peer appends records now:
    # the node serving a client's write writes it, naming the token the call carried, verified there.
    store = WorkerStore()
    seed, (front,) = await _joined(make_node, store, "cli")
    forged = await _post_request(seed, front.node_id, "record_audit", {
        "who": "ceo", "method": "clear", "node": seed.node_id, "outcome": "ok", "detail": ""})
    assert forged["error"]["code"] == "unknown_method"
    relayed = await _post_request(seed, front.node_id, "observe", {"text": "relayed for alice", "source": "alice"},
                                  credential=client_token("write", name="alice"))
    assert "result" in relayed
    bad = await _post_request(seed, front.node_id, "observe", {"text": "relayed for no one", "source": "bob"},
                              credential="mnt1.not.a-token")
    assert bad["error"]["code"] == "unauthorized"
    assert [(a.who, a.method, a.node, a.detail) for a in store.audit] == [
        ("alice", "observe", seed.node_id, relayed["result"]["observation_id"])]
    assert "relayed for no one" not in [o.text for o in store.observations.values()]
