"""Idempotency keys are scoped by the token that writes (issue 31, row 13).

Seen: another token's write under the same key in the same space got 409 naming the first writer's
observation id, and a claim under it got the first writer's statement back as its own. A key names one
writer's write: its retry lands on it, the same key from another token is another write, and a 409 (same
token, other content) names only that token's own item. Real nodes on real sockets (a store node over the
session's FalkorDB and PostgreSQL, offline model, and a front node the calls are routed through).
"""

from __future__ import annotations

from typing import Any

import httpx
from netsupport import NodeFactory, client_token, eventually, sees_all

from mnemonet.model.ids import keyed_id
from mnemonet.service import MemoryService, SpacedMemory

TIMERS = dict(llm="offline", request_timeout=60.0, client_rate_limit=0.0)
ALICE, BOB = client_token("read,write", name="alice"), client_token("read,write", name="bob")


async def _post(http: httpx.AsyncClient, url: str, token: str, method: str, body: dict[str, Any]) -> httpx.Response:
    return await http.post(f"{url}/v1/{method}", json=body, headers={"authorization": f"Bearer {token}"})


async def test_another_token_s_write_under_the_same_key_is_its_own(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)}, **TIMERS)
    front = await make_node({"cli"}, seed=store, **TIMERS)  # routed: the writer crosses the peer protocol
    await eventually(lambda: sees_all([store, front]), 10.0, "joined")
    body = {"idempotency_key": "k-1", "defer_extraction": True}
    async with httpx.AsyncClient(timeout=60.0) as http:
        first = await _post(http, store.url, ALICE, "observe", {**body, "text": "Dana works at Initech"})
        other = await _post(http, front.url, BOB, "observe", {**body, "text": "Erin works at Globex"})
        retry = await _post(http, store.url, BOB, "observe", {**body, "text": "Erin works at Globex"})
        again = await _post(http, front.url, ALICE, "observe", {**body, "text": "Dana works at Initech"})
        changed = await _post(http, front.url, BOB, "observe", {**body, "text": "Erin works at Hooli"})
        # The writer is the token's, whatever the body says: bob cannot write into alice's keys.
        posing = await _post(http, store.url, BOB, "observe",
                             {**body, "text": "Erin works at Hooli", "writer": "alice"})
    assert first.status_code == other.status_code == retry.status_code == again.status_code == 200, other.text
    alice_id, bob_id = first.json()["result"]["observation_id"], other.json()["result"]["observation_id"]
    assert (alice_id, bob_id) == (keyed_id("obs", "k-1", "alice"), keyed_id("obs", "k-1", "bob"))
    assert other.json()["result"]["created"] and alice_id not in other.text
    assert (retry.json()["result"]["observation_id"], retry.json()["result"]["created"]) == (bob_id, False)
    assert (again.json()["result"]["observation_id"], again.json()["result"]["created"]) == (alice_id, False)
    # Only the same token's key with other text is a conflict, and it names that token's own item.
    for refused in (changed, posing):
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "conflict"), refused.text
        assert bob_id in refused.text and alice_id not in refused.text
    stored = {o.id: (o.text, o.source) for o in await store_service.get_recent_observations()}
    assert stored == {alice_id: ("Dana works at Initech", "alice"), bob_id: ("Erin works at Globex", "bob")}


async def test_a_claim_under_another_token_s_key_is_its_own_and_a_retry_is_a_no_op(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)}, **TIMERS)
    async with httpx.AsyncClient(timeout=60.0) as http:
        mine = await _post(http, store.url, ALICE, "claim", {"text": "Bob likes tea", "idempotency_key": "c-1"})
        theirs = await _post(http, store.url, BOB, "claim", {"text": "Carol likes coffee", "idempotency_key": "c-1"})
        retry = await _post(http, store.url, BOB, "claim", {"text": "Carol likes coffee", "idempotency_key": "c-1"})
    assert mine.status_code == theirs.status_code == retry.status_code == 200, theirs.text
    mine_id, result = mine.json()["result"]["statement_id"], theirs.json()["result"]
    assert result["created"] and result["statement_id"] == keyed_id("st", "c-1", "bob") != mine_id
    assert (result["statement"]["subject"], result["statement"]["source"]) == ("Carol", "bob")
    assert mine_id not in theirs.text and "tea" not in theirs.text
    assert retry.json()["result"]["statement_id"] == result["statement_id"]
    assert not retry.json()["result"]["created"]


async def test_a_keyless_node_s_callers_keep_unscoped_keys(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    # No tokens, no writers: the ids are those of keys before they were scoped, whatever the body says.
    store = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)},
                            cluster_key="", **TIMERS)
    async with httpx.AsyncClient(timeout=60.0) as http:
        resp = await http.post(f"{store.url}/v1/observe", json={
            "text": "Dana works at Initech", "idempotency_key": "k-1", "writer": "alice", "defer_extraction": True})
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["observation_id"] == keyed_id("obs", "k-1") != keyed_id("obs", "k-1", "alice")
