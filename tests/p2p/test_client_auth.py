"""The client API's trust boundary on live nodes: tokens and scopes, the caller's identity, web pages kept out."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from netsupport import ADMIN_TOKEN, CLUSTER_KEY, InMemoryStore, NodeFactory, client_token, eventually, sees_all

from mnemonet.model.spaces import SpaceView
from mnemonet.model.views import ObservationView, SearchHit
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.errors import Unauthorized
from mnemonet.p2p.routing import STORE_METHODS
from mnemonet.p2p.tokens import METHOD_SCOPE, create_token

WORKER_METHODS = ("record_inference", "pending_observations", "pending_statements", "mark_processed",
                  "link_statements", "pending_consolidation", "record_summary")


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_the_cluster_key_is_not_a_client_password_and_tokens_are(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    async with HttpMemoryClient(node.url, CLUSTER_KEY) as with_key:
        with pytest.raises(Unauthorized, match="peers only"):
            await with_key.stats()
    async with HttpMemoryClient(node.url, client_token("read", key="some-other-cluster")) as foreign:
        with pytest.raises(Unauthorized, match="signature"):
            await foreign.stats()
    async with HttpMemoryClient(node.url, client_token("read")) as reader:
        assert await reader.stats() == {"observations": 0, "statements": 0}
    assert store.observations == {}


async def test_each_method_needs_its_scope(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    reader, writer = client_token("read"), client_token("write", name="writer")
    async with httpx.AsyncClient(base_url=node.url) as http:
        async def post(method: str, token: str, body: dict | None = None) -> httpx.Response:
            return await http.post(f"/v1/{method}", json=body or {}, headers=_bearer(token))

        refused_write = await post("observe", reader, {"text": "read tokens do not write"})
        refused_read = await post("stats", writer)
        refused_clear = [await post("clear", t) for t in (reader, writer, client_token("read,write"))]
        written = await post("observe", writer, {"text": "the sky is blue"})
        cleared = await post("clear", client_token("admin", name="ops"))
    assert (refused_write.status_code, refused_write.json()["error"]["code"]) == (403, "forbidden")
    assert "'write' scope" in refused_write.json()["error"]["message"]
    assert refused_read.status_code == 403
    assert [r.status_code for r in refused_clear] == [403, 403, 403]
    assert written.status_code == 200 and cleared.status_code == 200
    assert store.calls.count("observe") == 1 and store.observations == {}  # the admin clear ran, nothing else did
    # Every MemoryAPI method a client may call has exactly one scope; admin covers clear, the token
    # methods, and making, deleting and sharing memory spaces.
    admin_methods = {m for m, s in METHOD_SCOPE.items() if s == "admin"}
    assert admin_methods == {"clear", "revoke_token", "revoked_tokens", "audit_log", "forget", "tombstones",
                             "create_space", "delete_space", "share_space", "unshare_space"}


class WorkerStore(InMemoryStore):
    """Serves the one worker method the inference worker polls."""

    async def pending_observations(self, source: str, limit: int = 100) -> list[ObservationView]:
        self.calls.append(f"pending_observations:{source}")
        return []


async def test_worker_internal_methods_are_not_reachable_from_clients(make_node: NodeFactory) -> None:
    store = WorkerStore()
    node = await make_node({"store"}, providers={"store": store})
    assert set(WORKER_METHODS) <= set(STORE_METHODS) and not set(WORKER_METHODS) & set(METHOD_SCOPE)
    async with httpx.AsyncClient(base_url=node.url, headers=_bearer(ADMIN_TOKEN)) as http:
        answers = {m: await http.post(f"/v1/{m}", json={"source": "inference", "limit": 5}) for m in WORKER_METHODS}
    for method, resp in answers.items():
        assert (resp.status_code, resp.json()["error"]["code"]) == (404, "unknown_method"), method
    assert store.calls == []  # refused before anything ran
    # The peer protocol still serves them to a peer with the capability.
    peer = await make_node({"inference"}, seed=node)
    await eventually(lambda: sees_all([node, peer]), 5.0, "the peer joined")
    assert await peer.client.pending_observations("inference") == []
    assert "pending_observations:inference" in store.calls


async def test_the_source_of_a_write_is_the_token_name(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    alice, adapter = client_token("write", name="alice"), client_token("write,speak-for", name="mcp-adapter")
    async with httpx.AsyncClient(base_url=node.url) as http:
        own = await http.post("/v1/observe", json={"text": "I like tea"}, headers=_bearer(alice))
        same = await http.post("/v1/claim", json={"text": "tea is hot", "source": "alice"}, headers=_bearer(alice))
        spoofed = await http.post("/v1/observe", json={"text": "I am bob", "source": "bob"}, headers=_bearer(alice))
        spoken = await http.post("/v1/observe", json={"text": "I like coffee", "source": "bob"},
                                 headers=_bearer(adapter))
    assert (own.status_code, same.status_code, spoken.status_code) == (200, 200, 200)
    assert (spoofed.status_code, spoofed.json()["error"]["code"]) == (403, "forbidden")
    assert "speak-for" in spoofed.json()["error"]["message"]
    assert sorted((o.text, o.source) for o in store.observations.values()) == [
        ("I like coffee", "bob"), ("I like tea", "alice")]
    assert [s.source for s in store.statements.values()] == ["alice"]
    async with HttpMemoryClient(node.url, alice) as client:  # the Python client sends no source of its own
        await client.observe("I like scones")
    assert {o.source for o in store.observations.values() if o.text == "I like scones"} == {"alice"}


async def test_the_asker_of_remember_is_the_token_name(make_node: NodeFactory) -> None:
    # The answer says "you" to its asker: over HTTP, the token names who asks.
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store})
    async with httpx.AsyncClient(base_url=node.url) as http:
        asked = await http.post("/v1/remember", json={"query": "where do I live?"},
                                headers=_bearer(client_token("read", name="alice")))
    assert asked.status_code == 200
    assert store.askers == ["alice"]


async def test_a_revoked_token_stops_working_on_every_node_within_the_refresh(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    seed = await make_node({"store"}, providers={"store": store}, token_revocation_refresh=0.3)
    other = await make_node({"cli"}, seed=seed, token_revocation_refresh=0.3)
    await eventually(lambda: sees_all([seed, other]), 5.0, "both nodes see each other")
    token = client_token("read", name="leaky")
    token_id = seed.tokens.verify(token).id
    async with HttpMemoryClient(other.url, token) as via_other, HttpMemoryClient(seed.url, token) as via_seed:
        await via_other.stats()  # valid everywhere, and `other` has read the (empty) list
        async with HttpMemoryClient(seed.url, client_token("admin", name="ops", spaces="*")) as admin:
            assert await admin.revoke_token(token_id, "whoever") is True
            assert await admin.revoke_token(token_id, "whoever") is False
            assert await admin.revoked_tokens() == [token_id]
        with pytest.raises(Unauthorized, match="revoked"):
            await via_seed.stats()  # at once on the node it was revoked through
        started = time.monotonic()
        while True:
            try:
                await via_other.stats()
            except Unauthorized as exc:
                assert "revoked" in str(exc)
                break
            assert time.monotonic() - started < 10.0, "the other node never refused the revoked token"
            await asyncio.sleep(0.05)
    assert store.revoked == [token_id]


async def test_a_keyless_node_refuses_what_a_web_page_can_send(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    node = await make_node({"store"}, providers={"store": store}, cluster_key="")
    port = node.url.rsplit(":", 1)[1]
    async with httpx.AsyncClient(base_url=node.url) as http:
        text_plain = await http.post("/v1/observe", content=json.dumps({"text": "from a page"}),
                                     headers={"content-type": "text/plain"})
        form = await http.post("/v1/clear", data={"x": "1"})
        bare = await http.post("/v1/clear", content=b"")
        cross = await http.post("/v1/clear", json={}, headers={"origin": "http://evil.example"})
        rebound = await http.post("/v1/observe", json={"text": "rebound"},
                                  headers={"host": f"evil.example:{port}", "origin": f"http://evil.example:{port}"})
        rebound_read = await http.get("/v1/stats", headers={"host": f"evil.example:{port}"})
        same_origin = await http.post("/v1/observe", json={"text": "from the dashboard"},
                                      headers={"origin": f"http://127.0.0.1:{port}"})
        local = await http.post("/v1/observe", json={"text": "from curl", "source": "me"})
    assert [r.status_code for r in (text_plain, form, bare)] == [415, 415, 415]
    assert (cross.status_code, cross.json()["error"]["code"]) == (403, "forbidden")
    assert rebound.status_code == 403 and rebound_read.status_code == 403
    assert "not a name of this node" in rebound.json()["error"]["message"]
    assert (same_origin.status_code, local.status_code) == (200, 200)
    assert sorted(o.text for o in store.observations.values()) == ["from curl", "from the dashboard"]
    assert store.calls.count("observe") == 2


async def test_health_and_metrics_details_need_a_read_token(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    async with httpx.AsyncClient(base_url=node.url) as http:
        anonymous = await http.get("/health")
        detailed = await http.get("/health", headers=_bearer(client_token("read")))
        writer_only = await http.get("/health", headers=_bearer(client_token("write")))
        metrics_anonymous = await http.get("/metrics")
        metrics = await http.get("/metrics", headers=_bearer(client_token("read")))
    assert anonymous.status_code == 200 and anonymous.json() == {"state": "alive", "status": "ok"}
    assert writer_only.json() == {"state": "alive", "status": "ok"}
    assert detailed.json()["node_id"] == node.node_id and detailed.json()["members"]
    assert metrics_anonymous.status_code == 401 and node.node_id not in metrics_anonymous.text
    assert metrics.status_code == 200 and "mnemonet_" in metrics.text


async def test_a_reused_idempotency_key_with_other_text_answers_409_with_the_stored_id(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    seed = await make_node({"store"}, providers={"store": store})
    front = await make_node({"cli"}, seed=seed)  # routed: the conflict crosses the peer protocol too
    await eventually(lambda: sees_all([seed, front]), 5.0, "joined")
    async with httpx.AsyncClient(headers=_bearer(client_token("write"))) as http:
        first = await http.post(f"{front.url}/v1/observe", json={"text": "Bob lives in Paris", "idempotency_key": "k"})
        retry = await http.post(f"{front.url}/v1/observe", json={"text": "Bob lives in Paris", "idempotency_key": "k"})
        other = await http.post(f"{front.url}/v1/observe", json={"text": "Bob lives in Rome", "idempotency_key": "k"})
        here = await http.post(f"{seed.url}/v1/observe", json={"text": "Bob lives in Rome", "idempotency_key": "k"})
    stored_id = first.json()["result"]["observation_id"]
    assert retry.status_code == 200 and retry.json()["result"] == {**first.json()["result"], "created": False}
    for refused in (other, here):
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "conflict")
        assert stored_id in refused.json()["error"]["message"]
    assert [o.text for o in store.observations.values()] == ["Bob lives in Paris"]


async def test_write_and_admin_calls_leave_an_audit_trail_only_admins_read(make_node: NodeFactory) -> None:
    store = InMemoryStore()
    seed = await make_node({"store"}, providers={"store": store})
    front = await make_node({"cli"}, seed=seed)
    await eventually(lambda: sees_all([seed, front]), 5.0, "joined")
    writer, admin = client_token("read,write", name="alice"), client_token("admin", name="ops")
    async with httpx.AsyncClient() as http:
        observed = await http.post(f"{front.url}/v1/observe", json={"text": "tea is hot"}, headers=_bearer(writer))
        await http.post(f"{front.url}/v1/stats", json={}, headers=_bearer(writer))  # a read: not audited
        spoofed = await http.post(f"{front.url}/v1/observe", json={"text": "x", "source": "bob"},
                                  headers=_bearer(writer))
        await http.post(f"{seed.url}/v1/clear", json={}, headers=_bearer(admin))
        denied = await http.post(f"{seed.url}/v1/audit_log", json={}, headers=_bearer(writer))
        log = await http.post(f"{seed.url}/v1/audit_log", json={"limit": 10}, headers=_bearer(admin))
    assert spoofed.status_code == 403 and denied.status_code == 403
    entries = [(e["who"], e["method"], e["node"], e["outcome"], e["detail"]) for e in log.json()["result"]]
    assert entries == [  # written by the node that served each call (the store), never by the one relaying it
        ("ops", "clear", seed.node_id, "ok", ""),
        ("alice", "observe", seed.node_id, "ok", observed.json()["result"]["observation_id"]),
    ]
    async with HttpMemoryClient(seed.url, admin) as client:
        newest = (await client.audit_log(10))[0]
    assert (newest.who, newest.method, newest.outcome) == ("ops", "audit_log", "ok")  # reading it is admin too
    assert newest.at > 0


class SpacedStore(InMemoryStore):
    """Records the space each search ran in; lists three spaces."""

    def __init__(self) -> None:
        super().__init__()
        self.searched_in: list[str | None] = []

    async def search(self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
                     *, space: str | None = None) -> list[SearchHit]:
        self.searched_in.append(space)
        return []

    async def spaces(self) -> list[SpaceView]:
        return [SpaceView(name=n) for n in ("default", "alpha", "beta")]


async def test_a_token_reaches_only_its_spaces_and_names_none_for_its_first(make_node: NodeFactory) -> None:
    store = SpacedStore()
    node = await make_node({"store"}, providers={"store": store})
    team = create_token(CLUSTER_KEY, "team", ["read"], 3600, spaces="alpha,beta")[0]
    async with httpx.AsyncClient(base_url=node.url) as http:
        async def search(token: str, **space: str) -> httpx.Response:
            return await http.post("/v1/search", json={"query": "tea", **space}, headers=_bearer(token))

        home, other = await search(team), await search(team, space="beta")
        outside, malformed = await search(team, space="default"), await search(team, space="Beta!")
        plain = await search(client_token("read"))
        listed = await http.post("/v1/spaces", json={}, headers=_bearer(team))
        listed_admin = await http.post("/v1/spaces", json={}, headers=_bearer(ADMIN_TOKEN))
        made = await http.post("/v1/create_space", json={"name": "gamma"}, headers=_bearer(team))
    assert (home.status_code, other.status_code, plain.status_code) == (200, 200, 200)
    assert store.searched_in == ["alpha", "beta", None]  # None: the default space, as every MemoryAPI reads it
    assert (outside.status_code, outside.json()["error"]["code"]) == (403, "forbidden")
    assert "'default'" in outside.json()["error"]["message"]
    assert (malformed.status_code, malformed.json()["error"]["code"]) == (400, "bad_input")
    assert [s["name"] for s in listed.json()["result"]] == ["alpha", "beta"]  # other teams' names stay theirs
    assert [s["name"] for s in listed_admin.json()["result"]] == ["default", "alpha", "beta"]
    assert made.status_code == 403 and "'admin' scope" in made.json()["error"]["message"]
