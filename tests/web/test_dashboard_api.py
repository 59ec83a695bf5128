"""The dashboard's endpoints on real nodes: /v1/ws snapshot and updates, /v1/graph, /v1/stats, the page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets
from livenet import CLUSTER_KEY, READ_TOKEN, NodeFactory, write_meeting_scenario
from netsupport import client_token, eventually, sees_all

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.tokens import TokenVerifier
from mnemonet.service import MemoryService
from mnemonet.web.hub import RESYNC, DashboardClient

AUTH = {"authorization": f"Bearer {READ_TOKEN}"}


def _ws_url(node: PeerNode, key: str | None = READ_TOKEN) -> str:
    return node.url.replace("http://", "ws://") + "/v1/ws" + (f"?key={key}" if key is not None else "")


async def _next(ws: Any, kind: str, within: float = 5.0) -> dict[str, Any]:
    """The next message of type ``kind`` (others are skipped)."""
    async with asyncio.timeout(within):
        while True:
            message = json.loads(await ws.recv())
            if message["type"] == kind:
                return message


async def test_live_socket_sends_a_snapshot_then_members_events_and_counts(
        make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service})
    # A node without store serves the dashboard with --ui; its reads are routed to the store node.
    viewer = await make_node({"cli"}, seed=store, ui=True, ui_refresh_interval=0.2)
    await eventually(lambda: sees_all([store, viewer]), 3.0, "joined")

    async with websockets.connect(_ws_url(viewer)) as ws:
        snapshot = await _next(ws, "snapshot")
        assert snapshot["node"]["node_id"] == viewer.node_id
        assert {m["node_id"] for m in snapshot["members"]} == {store.node_id, viewer.node_id}
        assert snapshot["stats"]["graph"]["Observation"] == 0 and snapshot["notice"] is None

        late = await make_node({"cli"}, seed=store)
        async with asyncio.timeout(5):
            while True:  # a membership change sends the whole list
                listed = {m["node_id"]: m["state"] for m in (await _next(ws, "members"))["members"]}
                if late.node_id in listed:
                    break
        assert listed[late.node_id] == "alive"

        written = await late.client.observe("the standup moved to ten", source="user")
        event = (await _next(ws, "event"))["event"]
        assert event["type"] == "observation" and written.observation_id in event["ids"]
        assert event["items"][0]["text"] == "the standup moved to ten"

        counts = await _next(ws, "store")
        assert counts["stats"]["graph"]["Observation"] == 1

        members = await _next(ws, "members")  # periodic refresh carries load figures
        assert all({"in_flight", "latency_ms"} <= set(m["load"]) for m in members["members"])


async def test_live_socket_refuses_a_missing_key_and_a_foreign_origin(
        make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service}, ui_max_clients=1)
    for url, headers, code in [
        (_ws_url(store, key=None), None, 4401),
        (_ws_url(store, key="wrong"), None, 4401),
        (_ws_url(store, key=CLUSTER_KEY), None, 4401),  # the peers' secret is not a dashboard credential
        (_ws_url(store), {"origin": "http://evil.example"}, 4403),
    ]:
        async with websockets.connect(url, additional_headers=headers) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 3.0)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == code
    # The page's own origin is accepted, up to ui_max_clients connections at once.
    async with websockets.connect(_ws_url(store), additional_headers={"origin": store.url}) as ws:
        assert (await _next(ws, "snapshot"))["type"] == "snapshot"
        async with websockets.connect(_ws_url(store)) as second:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(second.recv(), 3.0)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429


async def test_graph_marks_contradicted_and_superseded_statements(
        make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service})
    morning, afternoon = await write_meeting_scenario(store.client)
    old = await store.client.claim("user prefers tea", source="user")
    new = await store.client.claim("user prefers coffee", source="user")
    # Supersession is written by a worker agent, through the service, like this.
    assert await service.link_statements("SUPERSEDES", new.statement_id, old.statement_id, "moved", "consolidation")
    async with httpx.AsyncClient(base_url=store.url, headers=AUTH) as http:
        graph = (await http.get("/v1/graph", params={"concept": "user"})).json()["result"]
        names = (await http.get("/v1/graph")).json()["result"]["concepts"]
        stats = (await http.get("/v1/stats")).json()["result"]

    status = {s["id"]: s["status"] for s in graph["statements"]}
    assert graph["concept"] == "user"
    assert status[morning.id] == status[afternoon.id] == "contradicted"
    dislike = next(s for s in graph["statements"] if s["predicate"] == "dislikes")
    assert dislike["status"] == "current" and dislike["sentence"] == "user dislikes morning"
    assert status[old.statement_id] == "superseded" and status[new.statement_id] == "current"
    assert {"user", "morning", "afternoon"} <= set(names)
    assert stats["graph"]["Observation"] == 2 and stats["graph"]["CONTRADICTS"] == 1

    # Retracted over the client API by an admin of the space (another source's statement; its name is the
    # retraction's source): struck through, and what it superseded is current again.
    writer = {"authorization": f"Bearer {client_token('read,write,admin', name='fixer')}"}
    async with httpx.AsyncClient(base_url=store.url, headers=writer) as http:
        body = {"id": new.statement_id, "reason": "coffee was a typo", "source": "admin"}
        assert (await http.post("/v1/retract", json=body)).status_code == 403  # not this token's name
        del body["source"]
        others = {"authorization": f"Bearer {client_token('read,write', name='fixer')}"}
        assert (await http.post("/v1/retract", json=body, headers=others)).status_code == 403  # user's, not its
        retracted = (await http.post("/v1/retract", json=body)).json()["result"]
        assert retracted["source"] == "fixer" and retracted["target_id"] == new.statement_id
        reader = await http.post("/v1/retract", json=body, headers=AUTH)
        assert reader.status_code == 403  # retract needs the write scope
        graph = (await http.get("/v1/graph", params={"concept": "user"})).json()["result"]
    status = {s["id"]: s["status"] for s in graph["statements"]}
    assert status[new.statement_id] == "retracted" and status[old.statement_id] == "current"


async def test_data_routes_need_the_key_and_valid_input(make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service}, max_name_chars=50)
    async with httpx.AsyncClient(base_url=store.url) as http:
        for path in ("/v1/stats", "/v1/graph?concept=user"):
            refused = await http.get(path)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
            wrong = await http.get(path, headers={"authorization": "Bearer nope"})
            assert wrong.status_code == 401
            for not_a_reader in (CLUSTER_KEY, client_token("write")):
                denied = await http.get(path, headers={"authorization": f"Bearer {not_a_reader}"})
                assert denied.status_code == 401
        for concept in ("", "   ", "x" * 51):
            bad = await http.get("/v1/graph", params={"concept": concept}, headers=AUTH)
            assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_input"
        unknown = await http.get("/v1/graph", params={"concept": "nobody"}, headers=AUTH)
        assert unknown.status_code == 200 and unknown.json()["result"]["statements"] == []
        # The client API still answers POST on the same paths.
        posted = await http.post("/v1/stats", json={}, headers=AUTH)
        assert posted.status_code == 200 and "graph" in posted.json()["result"]


async def test_the_page_is_served_without_a_build_step(make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service})
    plain = await make_node({"cli"}, seed=store)
    async with httpx.AsyncClient() as http:
        root = await http.get(store.url + "/")
        page = await http.get(store.url + "/ui")
        script = await http.get(store.url + "/ui/static/app.js")
        style = await http.get(store.url + "/ui/static/style.css")
        absent = await http.get(plain.url + "/ui")  # neither store nor --ui: no dashboard
    assert root.status_code == 307 and root.headers["location"] == "/ui"
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/ui/static/app.js"' in page.text and "<svg id=\"graph\"" in page.text
    assert script.status_code == 200 and "new WebSocket" in script.text
    assert style.status_code == 200 and "#graph" in style.text
    assert absent.status_code == 404


async def test_a_slow_dashboard_gets_a_fresh_snapshot_instead_of_a_backlog() -> None:
    client = DashboardClient(size=3)
    for i in range(5):
        client.push({"type": "event", "n": i})
    assert client.queue.qsize() == 1  # the backlog is gone; later updates wait for the snapshot
    assert await client.next_message() is RESYNC
    client.push({"type": "event", "n": 5})  # after the snapshot is taken, updates flow again
    assert await client.next_message() == {"type": "event", "n": 5}


async def test_writes_made_before_any_dashboard_connected_are_in_the_first_snapshot(
        make_node: NodeFactory, service: MemoryService) -> None:
    """Issue 21: the page said "waiting for writes..." after many writes; the hub collected only once watched."""
    store = await make_node({"store"}, providers={"store": service})
    written = [await store.client.observe(f"note number {i} about the release", source="user") for i in range(3)]
    async with websockets.connect(_ws_url(store)) as ws:
        snapshot = await _next(ws, "snapshot")
    feed = {i: e for e in snapshot["feed"] for i in e["ids"]}
    for i, w in enumerate(written):
        entry = feed[w.observation_id]
        assert entry["type"] == "observation"
        assert [item["text"] for item in entry["items"]] == [f"note number {i} about the release"]


async def test_members_that_left_or_restarted_are_not_listed(make_node: NodeFactory, service: MemoryService) -> None:
    """Issue 21: a restarted node showed beside its dead old entry, and MCP clients that left stayed listed."""
    store = await make_node({"store"}, providers={"store": service}, ui_refresh_interval=0.2)
    leaving = await make_node({"cli"}, seed=store)
    crashing = await make_node({"cli"}, seed=store, port=0)
    await eventually(lambda: sees_all([store, leaving, crashing]), 5.0, "joined")
    port = int(crashing.url.rsplit(":", 1)[1])
    await leaving.stop()  # says goodbye, as an MCP client does when its agent exits
    await crashing.kill()  # no goodbye: declared dead by the detector
    await eventually(lambda: {m.node_id: m.state.value for m in store.membership.members(include_dead=True)}.get(
        crashing.node_id) == "dead", 10.0, "the crashed node declared dead")
    restarted = await make_node({"cli"}, seed=store, port=port)  # same address, new id
    await eventually(lambda: sees_all([store, restarted]), 5.0, "the restarted node joined")
    async with websockets.connect(_ws_url(store)) as ws:
        snapshot = await _next(ws, "snapshot")
    listed = {m["node_id"]: m["state"] for m in snapshot["members"]}
    assert listed == {store.node_id: "alive", restarted.node_id: "alive"}


def _token_id(token: str) -> str:
    return TokenVerifier(CLUSTER_KEY).verify(token).id


async def _closed(ws: Any, within: float) -> websockets.ConnectionClosed:
    """How the node closed ``ws``; fails the test if it sends on for ``within`` seconds (it reads on meanwhile)."""
    try:
        async with asyncio.timeout(within):
            while True:
                await ws.recv()
    except websockets.ConnectionClosed as closed:
        return closed
    raise AssertionError(f"the socket was still open after {within}s")


async def test_a_socket_closes_when_its_token_is_revoked_or_expires(
        make_node: NodeFactory, service: MemoryService) -> None:
    # Issue 31, row 5: a dashboard opened before its token was revoked kept streaming members, counts and new
    # observation text 15 s and more after the revocation (a new /v1/graph with it was refused at once).
    store = await make_node({"store"}, providers={"store": service})
    viewer = await make_node({"cli"}, seed=store, ui=True, token_revocation_refresh=0.3)
    await eventually(lambda: sees_all([store, viewer]), 3.0, "joined")
    root = client_token("admin", name="ops", spaces="*")
    here, there = client_token("read", name="here"), client_token("read", name="there")
    async with websockets.connect(_ws_url(store, here)) as on_store, \
            websockets.connect(_ws_url(viewer, there)) as on_viewer, httpx.AsyncClient() as http:
        await _next(on_store, "snapshot")
        await _next(on_viewer, "snapshot")
        for token in (here, there):
            revoked = await http.post(f"{store.url}/v1/revoke_token", json={"token_id": _token_id(token)},
                                      headers={"authorization": f"Bearer {root}"})
            assert revoked.status_code == 200, revoked.text
        await store.client.observe("the new launch date is secret", source="user")
        # Revoked through the store: its socket closes at once; the viewer's once it reads the list again.
        for ws in (on_store, on_viewer):
            closed = await _closed(ws, 5.0)
            assert closed.rcvd is not None and (closed.rcvd.code, closed.rcvd.reason) == (4401, "token revoked")
    brief = client_token("read", name="brief", ttl=1.5)
    async with websockets.connect(_ws_url(store, brief)) as ws:
        await _next(ws, "snapshot")
        closed = await _closed(ws, 5.0)
        assert closed.rcvd is not None and (closed.rcvd.code, closed.rcvd.reason) == (4401, "token expired")


# Issue 30, item 5: the page corrects memory through the client API (POST /v1/retract, /v1/forget) with the token it
# holds, as a browser sends it: JSON, from the page's own origin.
def _page_call(node: PeerNode, token: str) -> dict[str, str]:
    """The headers the page's fetch sends: its own origin and its token."""
    return {"origin": node.url, "authorization": f"Bearer {token}"}


async def _event(ws: Any, kind: str, within: float = 5.0) -> dict[str, Any]:
    """The next write event of type ``kind`` (other messages and events are skipped)."""
    async with asyncio.timeout(within):
        while True:
            message = await _next(ws, "event")
            if message["event"]["type"] == kind:
                return dict(message["event"])


async def test_corrections_from_the_page_need_the_scope_and_the_owner(
        make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service})
    # The page's calls are routed to the store node; an erasure answers once both data directories are
    # compacted, which on a loaded machine outlasts the test profile's 5 s request_timeout.
    viewer = await make_node({"cli"}, seed=store, ui=True, request_timeout=60.0)
    await eventually(lambda: sees_all([store, viewer]), 3.0, "joined")
    alices = (await store.client.observe("Dana's manager is Bob", source="alice")).statements[0]
    bobs = await store.client.observe("Erin lives on Elm Street", source="bob")
    reader, alice = READ_TOKEN, client_token("read,write", name="alice")
    admin = client_token("read,write,admin", name="ops")

    # An erasure answers once both data directories are compacted: seconds on a loaded machine, past httpx's 5 s.
    async with httpx.AsyncClient(base_url=viewer.url, timeout=120.0) as http:
        async def call(method: str, body: dict[str, Any], token: str) -> httpx.Response:
            return await http.post(f"/v1/{method}", json=body, headers=_page_call(viewer, token))

        # The graph names the observations each statement stands on: what "forget observation" erases.
        graph = (await http.get("/v1/graph", params={"concept": "Dana"}, headers=AUTH)).json()["result"]
        [shown] = graph["statements"]
        assert shown["id"] == alices.id and shown["observations"] == alices.derived_from

        refusals = [
            (await call("retract", {"id": alices.id, "reason": "wrong"}, reader), "needs a token with the 'write'"),
            (await call("forget", {"source": "alice"}, reader), "needs a token with the 'admin'"),
            (await call("forget", {"observation_id": bobs.observation_id}, alice), "needs a token with the 'admin'"),
        ]
        bob_statement = (await store.client.get_concept_statements("Erin"))[0]
        refusals.append((await call("retract", {"id": bob_statement.id, "reason": "not so"}, alice),
                         "was written by 'bob'"))
        for response, says in refusals:
            assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden"), response.text
            assert says in response.json()["error"]["message"]

        for method, body, says in [
            ("retract", {"id": "", "reason": "x"}, "id: must be"),
            ("retract", {"id": "st-1 OR 1=1", "reason": "x"}, "id: must be"),
            ("retract", {"id": "st-" + "0" * 32, "reason": "x"}, "id: no such node"),
            ("retract", {"id": alices.id, "reason": ""}, "reason"),
            ("retract", {"reason": "x"}, "id"),
            ("forget", {"observation_id": "../../etc/passwd"}, "observation_id: must be"),
            ("forget", {}, "exactly one of observation_id or source"),
            ("forget", {"source": "alice", "observation_id": bobs.observation_id}, "exactly one"),
        ]:
            bad = await call(method, body, admin)
            assert (bad.status_code, bad.json()["error"]["code"]) == (400, "bad_input"), (body, bad.text)
            assert says in bad.json()["error"]["message"], (body, bad.text)

        own = await call("retract", {"id": alices.id, "reason": "wrong person"}, alice)
        assert own.status_code == 200 and own.json()["result"]["source"] == "alice"
        erased = await call("forget", {"source": "bob"}, admin)
        assert erased.status_code == 200, erased.text
        report = erased.json()["result"]
        assert (report["kind"], report["observations"], report["by"]) == ("source", 1, "ops")
        dana = (await http.get("/v1/graph", params={"concept": "Dana"}, headers=AUTH)).json()["result"]
        erin = (await http.get("/v1/graph", params={"concept": "Erin"}, headers=AUTH)).json()["result"]
    assert [s["status"] for s in dana["statements"]] == ["retracted"]
    assert erin["statements"] == [] and await store.client.load([bobs.observation_id]) == []


async def test_a_page_of_another_site_cannot_correct_a_node(make_node: NodeFactory, service: MemoryService) -> None:
    # Keyless (loopback development) nodes are where a cross-site page could act: no token stands in its way.
    keyless = await make_node({"store"}, providers={"store": service}, cluster_key="")
    said = await keyless.client.observe("Dana's manager is Bob", source="alice")
    port = keyless.url.rsplit(":", 1)[1]
    retract = {"id": said.statements[0].id, "reason": "from another site"}
    forget = {"observation_id": said.observation_id}
    async with httpx.AsyncClient(base_url=keyless.url) as http:
        for path, body in (("/v1/retract", retract), ("/v1/forget", forget)):
            foreign = await http.post(path, json=body, headers={"origin": "http://evil.example"})
            plain = await http.post(path, content=json.dumps(body), headers={"content-type": "text/plain"})
            form = await http.post(path, data={k: str(v) for k, v in body.items()})
            rebound = await http.post(path, json=body, headers={"host": f"evil.example:{port}",
                                                               "origin": f"http://evil.example:{port}"})
            assert [r.status_code for r in (foreign, plain, form, rebound)] == [403, 415, 415, 403], path
    assert [s.withdrawn for s in await keyless.client.get_concept_statements("Dana")] == [False]
    assert [i["id"] for i in await keyless.client.load([said.observation_id])] == [said.observation_id]

    # A keyed node refuses the foreign page even when the browser holds an admin token for it.
    store = await make_node({"store"}, providers={"store": service})
    admin = client_token("read,write,admin", name="ops")
    async with httpx.AsyncClient(base_url=store.url) as http:
        foreign = await http.post("/v1/forget", json=forget, headers={"origin": "http://evil.example",
                                                                    "authorization": f"Bearer {admin}"})
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (403, "forbidden")
    assert [i["id"] for i in await store.client.load([said.observation_id])] == [said.observation_id]


async def test_retractions_and_erasures_reach_every_open_dashboard(
        make_node: NodeFactory, service: MemoryService) -> None:
    store = await make_node({"store"}, providers={"store": service}, ui_refresh_interval=0.2)
    viewer = await make_node({"cli"}, seed=store, ui=True, ui_refresh_interval=0.2)
    await eventually(lambda: sees_all([store, viewer]), 3.0, "joined")
    wrong = (await store.client.observe("Dana's manager is Bob", source="alice")).statements[0]
    await store.client.observe("Erin lives on Elm Street", source="erin")
    await eventually(lambda: viewer.events.delivered >= 2, 5.0, "both writes reached the viewer node")
    alice, admin = client_token("read,write", name="alice"), client_token("read,write,admin", name="ops")

    async with websockets.connect(_ws_url(store)) as here, websockets.connect(_ws_url(viewer)) as there, \
            httpx.AsyncClient(base_url=viewer.url) as http:
        for ws in (here, there):
            assert "Elm Street" in json.dumps((await _next(ws, "snapshot"))["feed"])
        retracted = await http.post("/v1/retract", json={"id": wrong.id, "reason": "wrong person"},
                                    headers=_page_call(viewer, alice))
        assert retracted.status_code == 200, retracted.text
        for ws in (here, there):
            event = await _event(ws, "retraction")
            assert event["ids"] == [wrong.id, retracted.json()["result"]["retraction_id"]]
            assert [i["text"] for i in event["items"]] == ["Dana has manager Bob", "retracted by alice: wrong person"]
            await _next(ws, "store")  # counts follow, and the page draws the concept it shows again

        erased = await http.post("/v1/forget", json={"source": "erin"}, headers=_page_call(viewer, admin))
        assert erased.status_code == 200, erased.text
        for ws in (here, there):
            # The feed is sent afresh: what was erased is not in it any more, the erasure is (no content).
            feed = (await _next(ws, "snapshot"))["feed"]
            assert "Elm Street" not in json.dumps(feed)
            [erasure] = [e for e in feed if e["type"] == "erasure"]
            assert erasure["ids"] == [erased.json()["result"]["tombstone_id"]]
            assert erasure["items"][0]["text"].startswith("ops erased a source: 1 observations")
    async with websockets.connect(_ws_url(store)) as late:
        assert "Elm Street" not in json.dumps(await _next(late, "snapshot"))
