"""``MnemonetStore`` behaves as LangGraph's stores do, against a real node.

LangGraph ships no reusable store conformance suite (``langgraph-checkpoint-conformance`` covers
checkpointers only), so its own ``InMemoryStore`` is the oracle: the same operations go to both stores
and must give the same items, namespaces and errors (timestamps aside). What ``InMemoryStore`` cannot
say without an embedder (a search by meaning) is checked on its own.

The node runs on the test's event loop, so the sync API is called from a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from netsupport import CLUSTER_KEY, client_token

from mnemonet.integrations.langgraph import MnemonetStore
from mnemonet.model.ids import observation_id
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.tokens import create_token
from mnemonet.service import SpacedMemory


@pytest.fixture
async def store(store_node: PeerNode) -> AsyncIterator[MnemonetStore]:
    made = await asyncio.to_thread(MnemonetStore, store_node.url, client_token("read,write", name="agent"))
    yield made
    await asyncio.to_thread(made.close)


def _plain(result: Any) -> Any:
    """A result without what legitimately differs between stores: times and scores."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_plain(r) for r in result]
    return result


async def _both(store: MnemonetStore, oracle: InMemoryStore, ops: list[Any], unordered: bool = False) -> list[Any]:
    mine = await store.abatch(ops)
    theirs = await oracle.abatch(ops)
    if unordered:
        def by_address(items: Any) -> list[Any]:
            return sorted(_plain(items), key=lambda i: (i[0], i[1]))

        assert [by_address(r) for r in mine] == [by_address(r) for r in theirs], ops
    else:
        assert _plain(mine) == _plain(theirs), ops
    return mine


PROFILE = ("users", "alice", "profile")
NOTES = ("users", "alice", "notes")
BOB = ("users", "bob", "profile")


async def test_put_get_overwrite_delete_as_langgraph_does(store: MnemonetStore) -> None:
    oracle = InMemoryStore()
    value = {"text": "Alice prefers green tea in the morning", "tags": ["drinks"], "weight": 3,
             "note": "two  spaces,\ta tab\nand a line"}
    await _both(store, oracle, [PutOp(PROFILE, "drink", value)])
    [item] = await _both(store, oracle, [GetOp(PROFILE, "drink")])
    assert item.value == value  # exactly as given: whitespace, types and nesting kept
    await _both(store, oracle, [GetOp(PROFILE, "missing"), GetOp(BOB, "drink")])  # [None, None]

    # put again: the new value stands, created_at is the item's first write, updated_at the last
    await _both(store, oracle, [PutOp(PROFILE, "drink", {"text": "Alice now prefers coffee", "weight": 5})])
    [updated] = await _both(store, oracle, [GetOp(PROFILE, "drink")])
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at

    # delete (a put of None, as BaseStore.delete sends): gone from get, search and namespaces
    await _both(store, oracle, [PutOp(PROFILE, "drink", None)])
    await _both(store, oracle, [GetOp(PROFILE, "drink"), SearchOp(("users",))])
    # InMemoryStore keeps an emptied namespace (and one a get touched: its dict is a defaultdict); this
    # store lists the namespaces that hold items.
    assert await store.alist_namespaces() == []
    await _both(store, oracle, [PutOp(PROFILE, "drink", None)])  # deleting what is gone does nothing
    # a put after a delete starts a new item
    await _both(store, oracle, [PutOp(PROFILE, "drink", {"text": "Alice drinks water"})])
    [again] = await _both(store, oracle, [GetOp(PROFILE, "drink")])
    assert again.created_at > updated.created_at


async def test_search_by_prefix_filter_limit_and_offset_and_list_namespaces(store: MnemonetStore) -> None:
    oracle = InMemoryStore()
    await _both(store, oracle, [
        PutOp(PROFILE, "city", {"text": "Alice lives in Lyon", "kind": "place", "since": 2019}),
        PutOp(PROFILE, "pet", {"text": "Alice has a cat named Miso", "kind": "animal", "since": 2021}),
        PutOp(NOTES, "todo", {"text": "Alice must renew her passport", "kind": "task", "since": 2024}),
        PutOp(BOB, "city", {"text": "Bob lives in Oslo", "kind": "place", "since": 2015}),
        PutOp(("teams", "core"), "standup", {"text": "The core team meets at nine", "kind": "meeting"}),
    ])
    # Without a query the same items (the order is the store's own: InMemoryStore's is its dicts' insertion
    # order, this store's newest first).
    await _both(store, oracle, [
        SearchOp(("users",), limit=10), SearchOp(("users", "alice")), SearchOp(("teams",)),
        SearchOp(("users",), filter={"kind": "place"}), SearchOp(("users",), filter={"since": {"$gt": 2018}}),
        SearchOp(("users",), filter={"since": {"$gte": 2019, "$lt": 2024}, "kind": {"$ne": "task"}}),
        SearchOp(("nobody",)),
    ], unordered=True)
    everything = await store.asearch(("users",))
    assert [i.key for i in everything] == ["city", "todo", "pet", "city"]  # newest first
    pages = [await store.asearch(("users",), limit=2, offset=offset) for offset in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0] and _plain(pages[0] + pages[1]) == _plain(everything)
    await _both(store, oracle, [
        ListNamespacesOp(), ListNamespacesOp(max_depth=2), ListNamespacesOp(limit=2, offset=1),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
        ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("profile",)),)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users", "*", "profile")),)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),
                                           MatchCondition("suffix", ("notes",)))),
    ])


async def test_search_by_meaning_finds_the_current_value_with_a_score(store: MnemonetStore) -> None:
    await store.aput(PROFILE, "city", {"text": "Alice lives in Lyon"})
    await store.aput(PROFILE, "pet", {"text": "Alice has a cat named Miso"})
    await store.aput(BOB, "pet", {"text": "Bob has a dog named Rex"})
    await store.aput(PROFILE, "city", {"text": "Alice moved to Lisbon"})
    hits = await store.asearch(("users", "alice"), query="Alice moved to Lisbon")
    assert [h.key for h in hits][:1] == ["city"] and hits[0].value == {"text": "Alice moved to Lisbon"}
    # The overwritten version matches its own words best, and is not an item any more: its key is
    # answered by the current value, once.
    old = await store.asearch(("users", "alice"), query="Alice lives in Lyon")
    assert sorted(h.key for h in old) == ["city", "pet"]
    assert next(h for h in old if h.key == "city").value == {"text": "Alice moved to Lisbon"}
    assert all(h.namespace[:2] == ("users", "alice") for h in hits)  # bob's pet is outside the prefix
    assert isinstance(hits[0].score, float)
    assert [h.value["text"] for h in hits].count("Alice lives in Lyon") == 0  # the overwritten version
    await store.adelete(PROFILE, "pet")
    found = await store.asearch(("users",), query="a cat named Miso")
    assert (PROFILE, "pet") not in [(h.namespace, h.key) for h in found] and (BOB, "pet") in [
        (h.namespace, h.key) for h in found]


async def test_the_sync_api_from_a_thread(store: MnemonetStore) -> None:
    def run() -> list[Any]:
        store.put(NOTES, "n1", {"text": "Buy oat milk"})
        got = store.get(NOTES, "n1")
        found = store.search(("users",))
        namespaces = store.list_namespaces(prefix=("users",))
        store.delete(NOTES, "n1")
        return [got, found, namespaces, store.get(NOTES, "n1")]

    got, found, namespaces, gone = await asyncio.to_thread(run)
    assert got is not None and got.value == {"text": "Buy oat milk"}
    assert [(i.namespace, i.key) for i in found] == [(NOTES, "n1")]
    assert namespaces == [NOTES] and gone is None


async def test_refusals_match_langgraph(store: MnemonetStore) -> None:
    oracle: BaseStore = InMemoryStore()
    for bad in [(), ("langgraph", "x"), ("a.b",), ("",)]:
        for target in (store, oracle):
            with pytest.raises(InvalidNamespaceError):
                await target.aput(bad, "k", {"text": "x"})
    with pytest.raises(NotImplementedError):
        await store.aput(PROFILE, "k", {"text": "x"}, ttl=5.0)


async def test_the_memory_is_the_record_delete_retracts_and_speakers_come_from_the_namespace(
    store_node: PeerNode, memory: SpacedMemory
) -> None:
    # Items are observations like any other: the workers and remember read them; delete is a retraction
    # (append-only); with source(namespace) each user is the speaker of their own namespace.
    speaking = await asyncio.to_thread(MnemonetStore, store_node.url,
                                       client_token("read,write,speak-for", name="agent"), source=lambda ns: ns[1])
    try:
        await speaking.aput(PROFILE, "city", {"text": "I live in Lyon"})
        key = MnemonetStore._idempotency_key(PROFILE, "city", 1)
        [observation] = await memory.load([observation_id(key, writer="agent")])  # the token's key
        assert observation["source"] == "alice" and observation["text"] == "I live in Lyon"
        answer = await memory.remember("where does alice live?")
        assert "Lyon" in answer.text
        await speaking.adelete(PROFILE, "city")
        retracted = await memory.recall("where does alice live?")
        assert all("Lyon" not in s.sentence() for s in retracted.statements if not s.withdrawn)
        [still] = await memory.load([observation_id(key, writer="agent")])
        assert still["text"] == "I live in Lyon"  # the history keeps it
    finally:
        await asyncio.to_thread(speaking.close)


async def test_another_token_s_store_keeps_its_own_item_under_the_same_key(
    store: MnemonetStore, store_node: PeerNode, memory: SpacedMemory
) -> None:
    # Keys are scoped by the token that writes them (issue 31 row 13): the same (namespace, key) through
    # another token is another item, neither a conflict nor a new version of the first token's.
    other = await asyncio.to_thread(MnemonetStore, store_node.url, client_token("read,write", name="other-agent"))
    try:
        await store.aput(PROFILE, "city", {"text": "Alice lives in Lyon"})
        await other.aput(PROFILE, "city", {"text": "Alice lives in Porto"})
        mine, theirs = await store.aget(PROFILE, "city"), await other.aget(PROFILE, "city")
        assert mine is not None and mine.value == {"text": "Alice lives in Lyon"}
        assert theirs is not None and theirs.value == {"text": "Alice lives in Porto"}
        await other.adelete(PROFILE, "city")
        assert await other.aget(PROFILE, "city") is None
        assert (await store.aget(PROFILE, "city")) == mine
        # One memory underneath: both are observations of the space, each said by its token.
        assert sorted((o.source, o.text) for o in await memory.get_recent_observations(10)) == [
            ("agent", "Alice lives in Lyon"), ("other-agent", "Alice lives in Porto")]
    finally:
        await asyncio.to_thread(other.close)


async def test_a_store_in_a_memory_space_keeps_to_it(store_node: PeerNode, memory: SpacedMemory) -> None:
    # The version ids derive from the space as the service derives them (model.ids.observation_id).
    await memory.create_space("research")
    token = create_token(CLUSTER_KEY, "agent", ["read", "write"], 3600.0, spaces="research,default")[0]
    spaced = await asyncio.to_thread(MnemonetStore, store_node.url, token, space="research")
    try:
        await spaced.aput(NOTES, "n1", {"text": "The lab moved to building 7"})
        await spaced.aput(NOTES, "n1", {"text": "The lab moved to building 9"})
        got = await spaced.aget(NOTES, "n1")
        assert got is not None and got.value == {"text": "The lab moved to building 9"}
        assert [o.text for o in await memory.get_recent_observations(10, space="research")] == [
            "The lab moved to building 9", "The lab moved to building 7"]
        assert await memory.get_recent_observations(10) == []  # nothing in the default space
    finally:
        await asyncio.to_thread(spaced.close)
