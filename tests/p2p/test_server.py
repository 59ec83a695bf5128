"""One live node: its HTTP API, and envelopes it must refuse while it keeps serving."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, eventually, sees_all
from websockets.asyncio.client import connect

from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.envelope import TAG_CHARS, Codec, Envelope, Kind
from mnemonet.p2p.errors import NoCapablePeer, Unauthorized
from mnemonet.p2p.transport import ws_url


def _codec(key: str = CLUSTER_KEY) -> Codec:
    return Codec(key, max_bytes=10**8, max_age=30.0, replay_entries=1000)


async def test_health_needs_no_key_and_lists_members(make_node: NodeFactory) -> None:
    node = await make_node({"store", "cli"}, providers={"store": InMemoryStore()})
    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{node.url}/health")).json()
        schema = (await http.get(f"{node.url}/openapi.json")).json()
    assert body["node_id"] == node.node_id
    assert body["capabilities"] == ["cli", "store"]
    assert body["state"] == "alive"
    assert body["members"] == [{"node_id": node.node_id, "capabilities": ["cli", "store"], "url": node.url,
                                "state": "alive", "incarnation": 0}]
    assert body["dependencies"] == {"store": "ready"}
    assert "/v1/{method}" in schema["paths"] and "/health" in schema["paths"]


async def test_client_api_with_and_without_key(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    async with HttpMemoryClient(node.url, CLUSTER_KEY) as client:
        first = await client.observe("the sky is blue", idempotency_key="k1")
        again = await client.observe("the sky is blue", idempotency_key="k1")
        recent = await client.get_recent_observations(limit=5)
        with pytest.raises(ValueError, match="must not be empty"):
            await client.observe("   ")
    assert first.created and not again.created and first.observation_id == again.observation_id
    assert [o.text for o in recent] == ["the sky is blue"]
    async with HttpMemoryClient(node.url) as anonymous, HttpMemoryClient(node.url, "wrong") as wrong:
        for client in (anonymous, wrong):
            with pytest.raises(Unauthorized):
                await client.stats()
    assert len(store.observations) == 1

    headers = {"authorization": f"Bearer {CLUSTER_KEY}"}
    async with httpx.AsyncClient(base_url=node.url, headers=headers) as http:
        cases = {
            "/v1/close": (json.dumps({}), 404, "unknown_method"),
            "/v1/llm.answer": (json.dumps({}), 404, "unknown_method"),
            "/v1/observe": ("{not json", 400, "bad_input"),
            "/v1/get_concepts": (json.dumps([1]), 400, "bad_input"),
            "/v1/get_recent_observations": (json.dumps({"limit": "x"}), 400, "bad_input"),
            "/v1/stats": (json.dumps({"nope": 1}), 400, "bad_input"),
            "/v1/search": (json.dumps({"query": "x" * (node.max_body_bytes + 1)}), 413, "too_large"),
        }
        for path, (body, status, code) in cases.items():
            resp = await http.post(path, content=body)
            assert (resp.status_code, resp.json()["error"]["code"]) == (status, code), path
        ok = await http.post("/v1/stats", content=b"")
    assert ok.json() == {"result": {"observations": 1, "statements": 0}}


class _BuggyStore(InMemoryStore):
    """A store whose ``stats`` has a bug: a bare ValueError carrying internal detail."""

    async def stats(self) -> dict[str, int]:
        raise ValueError("invalid literal for int() with base 10: '/srv/mnemonet/secret.db'")


async def test_a_bug_answers_500_with_a_request_id_and_no_internal_text(make_node: NodeFactory) -> None:
    store = _BuggyStore()
    local = await make_node({"store"}, providers={"store": store})
    remote = await make_node({"cli"}, seed=local)  # reaches the buggy store over a peer link
    await eventually(lambda: sees_all([local, remote]), within=10.0, what="the two nodes see each other")
    headers = {"authorization": f"Bearer {CLUSTER_KEY}"}
    for node in (local, remote):
        async with httpx.AsyncClient(base_url=node.url, headers=headers) as http:
            resp = await http.post("/v1/stats", content=b"", headers={"x-request-id": f"req-{node.node_id}"})
            refused = await http.post("/v1/observe", content=json.dumps({"text": "   "}))
        error = resp.json()["error"]
        assert (resp.status_code, error["code"]) == (500, "internal"), node.node_id
        assert "secret" not in resp.text and "ValueError" not in resp.text and "int()" not in resp.text
        assert f"req-{node.node_id}" in error["message"] and resp.headers["x-request-id"] == f"req-{node.node_id}"
        # A deliberate input error is still the caller's to see.
        assert (refused.status_code, refused.json()["error"]) == (
            400, {"code": "bad_input", "message": "text: must not be empty"})
    assert store.calls.count("observe") == 2


async def test_node_without_capable_peer_answers_503(make_node: NodeFactory) -> None:
    node = await make_node({"cli"})
    async with HttpMemoryClient(node.url, CLUSTER_KEY) as client:
        with pytest.raises(NoCapablePeer, match="'store'"):
            await client.stats()


async def test_bad_envelopes_over_a_link_are_refused_and_the_node_keeps_serving(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    good, wrong = _codec(), _codec("some other key")
    async with connect(ws_url(node.url), max_size=None, proxy=None) as ws:
        async def exchange(raw: bytes) -> dict | None:
            await ws.send(raw)
            try:
                async with asyncio.timeout(0.5):
                    return json.loads((await ws.recv())[TAG_CHARS:])
            except TimeoutError:
                return None

        ping = Envelope(kind=Kind.PING, sender="tester", payload={"piggyback": []})
        bad_tag = b"0" * TAG_CHARS + good.encode(ping)[TAG_CHARS:]
        oversize = Envelope(kind=Kind.GOSSIP, sender="tester", payload={"pad": "x" * node.max_body_bytes})
        refusals = {
            "bad_tag": bad_tag,
            "wrong_key": wrong.encode(Envelope(kind=Kind.PING, sender="tester")),
            "too_large": good.encode(oversize),
        }
        for name, raw in refusals.items():
            reply = await exchange(raw)
            assert reply is not None and "error" in reply["payload"], name
            expected = "bad_tag" if name != "too_large" else "too_large"
            assert reply["payload"]["error"]["code"] == expected
        assert await exchange(b"\x00\x01 not json at all") is None  # nothing to address a reply to

        # The same link still serves a valid ping, and answers the replay of it with a refusal.
        raw_ping = good.encode(ping)
        ack = await exchange(raw_ping)
        assert ack is not None and ack["kind"] == "ack" and ack["reply_to"] == ping.id
        replayed = await exchange(raw_ping)
        assert replayed is not None and replayed["payload"]["error"]["code"] == "replay"

    refused = node.health()["refused_envelopes"]
    assert refused == {"bad_tag": 2, "too_large": 1, "malformed": 1, "replay": 1}


async def test_bad_envelopes_over_http_are_refused(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    good = _codec()
    ping = good.encode(Envelope(kind=Kind.PING, sender="tester", payload={"piggyback": []}))
    async with httpx.AsyncClient(base_url=node.url) as http:
        garbage = await http.post("/v1/peer", content=b"garbage")
        wrong = await http.post("/v1/peer", content=_codec("other").encode(Envelope(kind=Kind.PING, sender="t")))
        huge = await http.post("/v1/peer", content=b"x" * (node.max_body_bytes + 1))
        join_at_peer = await http.post("/v1/peer", content=good.encode(Envelope(kind=Kind.JOIN, sender="t")))
        first = await http.post("/v1/peer", content=ping)
        replay = await http.post("/v1/peer", content=ping)
        health = await http.get("/health")
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "malformed")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "bad_tag")
    assert (huge.status_code, huge.json()["error"]["code"]) == (413, "too_large")
    assert join_at_peer.status_code == 400
    assert first.status_code == 200 and good.decode(first.content).kind is Kind.ACK
    assert (replay.status_code, replay.json()["error"]["code"]) == (401, "replay")
    assert health.status_code == 200


def test_refuses_public_bind_without_key() -> None:
    from netsupport import fast_settings

    from mnemonet.node.peer_node import PeerNode

    with pytest.raises(ValueError, match="cluster key"):
        PeerNode(fast_settings(host="0.0.0.0", cluster_key=""), {"cli"})
    PeerNode(fast_settings(host="0.0.0.0", cluster_key="", insecure=True), {"cli"})
    PeerNode(fast_settings(host="127.0.0.1", cluster_key=""), {"cli"})
    with pytest.raises(ValueError, match="unknown"):
        PeerNode(fast_settings(), {"telepathy"})
