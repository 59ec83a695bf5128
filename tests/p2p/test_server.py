"""One live node: its HTTP API, and envelopes it must refuse while it keeps serving."""

from __future__ import annotations

import json

import httpx
import pytest
from netsupport import ADMIN_TOKEN, CLUSTER_KEY, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.p2p import handshake
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.envelope import TAG_CHARS, Codec, Envelope, Kind
from mnemonet.p2p.errors import NoCapablePeer, Unauthorized
from mnemonet.p2p.links import DialledLink
from mnemonet.p2p.transport import ws_url


def _codec(key: str = CLUSTER_KEY) -> Codec:
    return Codec(key, max_bytes=10**8, max_age=30.0, replay_entries=1000)


async def test_health_with_a_read_token_lists_members(make_node: NodeFactory) -> None:
    node = await make_node({"store", "cli"}, providers={"store": InMemoryStore()})
    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{node.url}/health", headers={"authorization": f"Bearer {ADMIN_TOKEN}"})).json()
        schema = (await http.get(f"{node.url}/openapi.json")).json()
    assert body["node_id"] == node.node_id
    assert body["capabilities"] == ["cli", "store"]
    assert body["state"] == "alive"
    assert body["members"] == [{"node_id": node.node_id, "capabilities": ["cli", "store"], "url": node.url,
                                "state": "alive", "incarnation": 0}]
    assert body["dependencies"] == {"store": "ready"}
    assert "/v1/observe" in schema["paths"] and "/health" in schema["paths"]


async def test_client_api_with_and_without_a_token(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    async with HttpMemoryClient(node.url, ADMIN_TOKEN) as client:
        first = await client.observe("the sky is blue", idempotency_key="k1")
        again = await client.observe("the sky is blue", idempotency_key="k1")
        recent = await client.get_recent_observations(limit=5)
        with pytest.raises(ValueError, match="must not be empty"):
            await client.observe("   ")
    assert first.created and not again.created and first.observation_id == again.observation_id
    assert [o.text for o in recent] == ["the sky is blue"]
    async with HttpMemoryClient(node.url) as anonymous, HttpMemoryClient(node.url, "wrong") as wrong, \
            HttpMemoryClient(node.url, CLUSTER_KEY) as with_key:
        for client in (anonymous, wrong, with_key):
            with pytest.raises(Unauthorized):
                await client.stats()
    assert len(store.observations) == 1

    headers = {"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
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
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
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
    async with HttpMemoryClient(node.url, ADMIN_TOKEN) as client:
        with pytest.raises(NoCapablePeer, match="'store'"):
            await client.stats()


async def test_a_refused_envelope_on_a_proven_link_closes_it_and_the_node_keeps_serving(
        make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    good, wrong = _codec(), _codec("some other key")

    async def proven_link() -> DialledLink:
        link = await DialledLink.open(node.node_id, ws_url(node.url), timeout=3.0, max_bytes=1 << 24)
        await handshake.dial(link, CLUSTER_KEY.encode(), "tester", node.node_id, 3.0)
        return link

    ping = Envelope(kind=Kind.PING, sender="tester", payload={"piggyback": []})
    raw_ping = good.encode(ping)
    link = await proven_link()
    await link.send(raw_ping, 3.0)
    ack = await link.receive()
    assert ack is not None and json.loads(ack[TAG_CHARS:])["reply_to"] == ping.id
    oversize = Envelope(kind=Kind.GOSSIP, sender="tester", payload={"pad": "x" * node.max_body_bytes})
    refusals = {
        "bad_tag": b"0" * TAG_CHARS + raw_ping[TAG_CHARS:],
        "wrong_key": wrong.encode(Envelope(kind=Kind.PING, sender="tester")),
        "too_large": good.encode(oversize),
        "junk": b"\x00\x01 not json at all",
        "replay": raw_ping,
        "wrong_sender": good.encode(Envelope(kind=Kind.PING, sender="someone-else")),
    }
    for name, raw in refusals.items():
        link = await proven_link()
        await link.send(raw, 3.0)
        assert await link.receive() is None, f"{name}: the node answered instead of closing the link"
    refused = node.health()["refused_envelopes"]
    assert refused == {"bad_tag": 2, "too_large": 1, "malformed": 1, "replay": 1, "wrong_sender": 1}
    async with httpx.AsyncClient(trust_env=False) as http:  # the node serves on
        assert (await http.get(f"{node.url}/health")).status_code == 200


async def test_bad_envelopes_over_http_are_refused(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    good = _codec()
    ping = good.encode(Envelope(kind=Kind.PING, sender="tester", target=node.node_id, payload={"piggyback": []}))
    untargeted = good.encode(Envelope(kind=Kind.PING, sender="tester", payload={"piggyback": []}))
    async with httpx.AsyncClient(base_url=node.url) as http:
        garbage = await http.post("/v1/peer", content=b"garbage")
        wrong = await http.post("/v1/peer", content=_codec("other").encode(Envelope(kind=Kind.PING, sender="t")))
        huge = await http.post("/v1/peer", content=b"x" * (node.max_body_bytes + 1))
        join_at_peer = await http.post("/v1/peer", content=good.encode(Envelope(kind=Kind.JOIN, sender="t")))
        first = await http.post("/v1/peer", content=ping)
        replay = await http.post("/v1/peer", content=ping)
        nowhere = await http.post("/v1/peer", content=untargeted)  # could be replayed to any node: refused
        health = await http.get("/health")
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "malformed")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "bad_tag")
    assert (huge.status_code, huge.json()["error"]["code"]) == (413, "too_large")
    assert join_at_peer.status_code == 400
    assert first.status_code == 200 and good.decode(first.content).kind is Kind.ACK
    assert (replay.status_code, replay.json()["error"]["code"]) == (401, "replay")
    assert good.decode(nowhere.content).payload["error"]["code"] == "invalid"
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


async def test_nul_characters_and_deep_nesting_answer_400_not_500(make_node: NodeFactory) -> None:
    # Issue 17: NUL in names and deeply nested JSON answered 500.
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
    bodies = {
        "search": b'{"query": "a\\u0000b"}',
        "get_concept_statements": b'{"name": "x\\u0000"}',
        "observe": b'{"text": "t", "metadata": {"k": "v\\u0000"}}',
        "recall": b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "stats": b"[" * 100_000,
    }
    async with httpx.AsyncClient(base_url=node.url, headers=headers, trust_env=False) as http:
        for method, body in bodies.items():
            resp = await http.post(f"/v1/{method}", content=body)
            assert (resp.status_code, resp.json()["error"]["code"]) == (400, "bad_input"), (method, resp.text)
