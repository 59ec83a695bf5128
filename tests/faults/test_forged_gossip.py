"""Forged gossip over real sockets does not corrupt membership.

The rules are unit-tested in tests/p2p/test_membership.py.

The forger holds the cluster key (a compromised or buggy peer); without it
every envelope is refused before it is read (tests/p2p/test_envelope.py,
and the last case here at the node level).
"""

from __future__ import annotations

from typing import Any

import httpx
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import Envelope, Kind, encode
from mnemonet.p2p.membership import MemberState


async def _gossip(node: PeerNode, updates: list[dict[str, Any]], key: str = CLUSTER_KEY) -> int:
    env = Envelope(kind=Kind.GOSSIP, sender="forger", target=node.node_id, payload={"updates": updates})
    async with httpx.AsyncClient(trust_env=False) as http:
        return (await http.post(f"{node.url}/v1/peer", content=encode(env, key.encode()))).status_code


def _record(node: PeerNode, about: PeerNode) -> Any:
    return node.membership.get(about.node_id)


async def test_forged_gossip_leaves_membership_intact(make_node: NodeFactory) -> None:
    a = await make_node({"store"}, providers={"store": InMemoryStore()})
    b = await make_node({"llm"}, seed=a)
    c = await make_node({"llm"}, seed=a)
    await eventually(lambda: sees_all([a, b, c]), 10.0, "three nodes see each other")
    b_wire = _record(a, b).to_wire()

    # 1. Someone claims b's id with its own address at b's incarnation: a keeps b's real address.
    assert await _gossip(a, [{**b_wire, "url": "http://127.0.0.1:9"}]) == 204
    assert _record(a, b).url == b.url

    # 2. Someone claims a's own id: a refutes with a higher incarnation and keeps its address.
    a_wire = a.membership.local.to_wire()
    await _gossip(a, [{**a_wire, "url": "http://127.0.0.1:9", "incarnation": a_wire["incarnation"] + 5}])
    assert a.membership.local.url == a.url and a.membership.local.incarnation > a_wire["incarnation"] + 5

    # 3. A stale suspicion of b (older incarnation than b's refutation) changes nothing.
    await _gossip(a, [{**b_wire, "state": "suspect"}])  # b hears of it and refutes
    await eventually(lambda: _record(a, b).incarnation > b_wire["incarnation"]
                     and _record(a, b).state is MemberState.ALIVE, 10.0, "b refutes the suspicion")
    await _gossip(a, [{**b_wire, "state": "dead"}])  # at the old incarnation: stale
    assert _record(a, b).state is MemberState.ALIVE

    # 4. A dead member re-announced alive at its dead incarnation stays dead.
    c_id = c.node_id
    await c.kill()
    await eventually(lambda: a.membership.get(c_id).state is MemberState.DEAD, 15.0, "a declares c dead")
    dead = a.membership.get(c_id).to_wire()
    await _gossip(a, [{**dead, "state": "alive"}])
    assert a.membership.get(c_id).state is MemberState.DEAD
    assert c_id not in {m.node_id for m in a.membership.alive()}

    # 5. Gossip under the wrong key is refused unread and counted.
    before = a.codec.refused["bad_tag"]
    assert await _gossip(a, [{**dead, "state": "alive", "incarnation": dead["incarnation"] + 1}], key="wrong") == 401
    assert a.codec.refused["bad_tag"] == before + 1
    assert a.membership.get(c_id).state is MemberState.DEAD
    # The node serves on.
    assert sees_all([a, b])


async def test_gossip_at_an_absurd_incarnation_does_not_evict_a_member(make_node: NodeFactory) -> None:
    # Issue 17, High 2: "dead at 2**63-1" evicted b for good: its refutation (2**63) was not a valid incarnation.
    a = await make_node({"store"}, providers={"store": InMemoryStore()})
    b = await make_node({"llm"}, seed=a)
    await eventually(lambda: sees_all([a, b]), 10.0, "two nodes see each other")
    b_wire = _record(a, b).to_wire()
    refused = a.membership.invalid_updates
    for inc in (2**63 - 1, 2**62, b_wire["incarnation"] + 2**20 + 1):
        assert await _gossip(a, [{**b_wire, "state": "dead", "incarnation": inc}]) == 204
        # Not dead, not pushed to the forged incarnation. (Not "alive and unchanged": on loaded cores a may
        # suspect b for real meanwhile, and b's refutation raises its incarnation by one.)
        record = _record(a, b)
        assert record.state is not MemberState.DEAD and record.incarnation < b_wire["incarnation"] + 100
    assert a.membership.invalid_updates == refused + 3
    # Claims about a itself are not adopted either: refused as a jump, its incarnation stays small and it stays
    # routable at b. (Not "unchanged": on loaded cores b may suspect a for real meanwhile, and a's refutation
    # raises it by one; a run at load 12 saw 0 -> 1.)
    a_wire = a.membership.local.to_wire()
    await _gossip(a, [{**a_wire, "state": "dead", "incarnation": 2**62 - 1}])
    assert a.membership.invalid_updates == refused + 4
    assert a.membership.local.incarnation < a_wire["incarnation"] + 100
    await eventually(lambda: sees_all([a, b]), 10.0, "both still alive in both views")
