"""A link is bound to a peer only by a fresh challenge both ways; refusals are closes, never signed replies.

Issue 17, High 1: a node answered a badly signed WebSocket frame with a
correctly signed refusal, and a second node, handed that refusal as the
first frame of a new socket, bound the attacker's socket to the first node's
identity (then sent it pings, gossip and requests meant for that node).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from netsupport import CLUSTER_KEY, NodeFactory, eventually
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from mnemonet.p2p import handshake
from mnemonet.p2p.envelope import TAG_CHARS, Envelope, Kind, ReplayCache, encode
from mnemonet.p2p.transport import ws_url


async def _first_frame_or_close(ws: ClientConnection, within: float = 5.0) -> bytes | None:
    """The next frame, or None when the node closed the socket instead."""
    try:
        async with asyncio.timeout(within):
            message = await ws.recv()
    except ConnectionClosed:
        return None
    return message.encode() if isinstance(message, str) else message


async def test_a_badly_signed_frame_is_answered_by_a_close_not_a_signed_reply(make_node: NodeFactory) -> None:
    node = await make_node({"llm"})
    ping = Envelope(kind=Kind.PING, sender="attacker", payload={"piggyback": []})
    forged = b"0" * TAG_CHARS + encode(ping, b"not the key")[TAG_CHARS:]
    async with connect(ws_url(node.url), proxy=None) as ws:
        await ws.send(forged)
        assert await _first_frame_or_close(ws) is None, "the node answered an unauthenticated frame"
        assert ws.close_code == handshake.POLICY


async def test_a_replayed_signed_envelope_does_not_bind_a_socket_to_its_sender(make_node: NodeFactory) -> None:
    a = await make_node({"llm"})
    b = await make_node({"llm"})  # not in a's cluster, so b has no link of its own to a
    # Anything a signed by itself (here: an ack it could have sent anyone) is all an eavesdropper can hold.
    captured = encode(Envelope(kind=Kind.ACK, sender=a.node_id, reply_to="x1", payload={}), CLUSTER_KEY.encode())
    async with connect(ws_url(b.url), proxy=None) as ws:
        await ws.send(captured)
        assert await _first_frame_or_close(ws) is None
        assert ws.close_code == handshake.POLICY
    assert a.node_id not in b.transport.neighbours()
    assert b.codec.refused["handshake"] == 1


async def test_nodes_link_only_after_both_prove_the_key(make_node: NodeFactory) -> None:
    a = await make_node({"llm"})
    b = await make_node({"llm"}, seed=a)
    await eventually(lambda: a.node_id in b.transport.neighbours() and b.node_id in a.transport.neighbours(),
                     10.0, "a and b link")
    # A dialler with the wrong key gets no proof it accepts, and the acceptor closes the socket.
    async with connect(ws_url(a.url), proxy=None) as ws:
        await ws.send(json.dumps({"hello": 1, "node_id": "intruder", "target": a.node_id,
                                  "nonce": handshake.new_nonce()}))
        challenge = json.loads(await ws.recv())
        assert challenge["node_id"] == a.node_id
        wrong = handshake.proof(b"guess", "dial", "0" * 32, challenge["nonce"], "intruder", a.node_id)
        await ws.send(json.dumps({"proof": wrong}))
        assert await _first_frame_or_close(ws) is None and ws.close_code == handshake.POLICY
    # The acceptor's own proof, reflected back as a dialler's, does not pass either (directions differ).
    async with connect(ws_url(a.url), proxy=None) as ws:
        nonce = handshake.new_nonce()
        await ws.send(json.dumps({"hello": 1, "node_id": b.node_id, "target": a.node_id, "nonce": nonce}))
        challenge = json.loads(await ws.recv())
        await ws.send(json.dumps({"proof": challenge["proof"]}))
        assert await _first_frame_or_close(ws) is None and ws.close_code == handshake.POLICY
    assert a.codec.refused["handshake"] == 2
    assert set(a.transport.neighbours()) == {b.node_id}


async def test_idle_unauthenticated_sockets_do_not_take_the_inbound_link_slots(make_node: NodeFactory) -> None:
    a = await make_node({"llm"}, max_inbound_links=4, max_pending_links=4, link_handshake_timeout=2.0)
    idle: list[ClientConnection] = []
    refused = 0
    for _ in range(30):
        try:
            idle.append(await connect(ws_url(a.url), proxy=None, open_timeout=5.0))
        except InvalidStatus:
            refused += 1  # over the pre-handshake cap: refused before the upgrade
    try:
        # Past the pre-handshake cap sockets are refused (a slot frees only at a socket's deadline).
        assert refused > 0 and len(idle) < 30
        # Each idle socket is closed at its handshake deadline, and a real peer then links.
        await eventually(lambda: all(ws.close_code is not None for ws in idle), 10.0, "idle sockets closed")
        b = await make_node({"llm"}, seed=a)
        await eventually(lambda: b.node_id in a.transport.neighbours(), 10.0, "a real peer links to a")
    finally:
        for ws in idle:
            await ws.close()


@pytest.mark.parametrize("frame", [b"x" * 2000, b"[1]", b"{\"hello\": 2}", b"{\"hello\": 1, \"node_id\": \"a|b\"}"])
async def test_malformed_hellos_are_closed(make_node: NodeFactory, frame: bytes) -> None:
    a = await make_node({"llm"})
    async with connect(ws_url(a.url), proxy=None) as ws:
        await ws.send(frame)
        assert await _first_frame_or_close(ws) is None and ws.close_code == handshake.POLICY


async def test_strangers_holding_every_pending_slot_do_not_keep_a_keyed_peer_from_linking(
        make_node: NodeFactory) -> None:
    # Issue 31, row 8: an unauthenticated client re-opening 8 idle WebSockets made 8 of 8 keyed link attempts
    # fail with 403, the slots of sockets in their handshake being shared between strangers and peers.
    a = await make_node({"llm"}, max_pending_links=8, link_handshake_timeout=60.0)  # idle sockets stay idle
    idle = [await connect(ws_url(a.url), proxy=None, open_timeout=5.0) for _ in range(8)]
    try:
        with pytest.raises(InvalidStatus):  # the strangers' slots are full
            await connect(ws_url(a.url), proxy=None, open_timeout=5.0)
        peers = [await make_node({"llm"}) for _ in range(8)]
        me = a.membership.local
        links = [await peer.transport.dial(me) for peer in peers]  # each shows the key in its upgrade request
        assert all(link.is_open for link in links)
        await eventually(lambda: set(a.transport.neighbours()) >= {p.node_id for p in peers}, 10.0, "all linked")
        assert all(ws.close_code is None for ws in idle)  # the strangers still hold theirs
    finally:
        for ws in idle:
            await ws.close()


def test_a_link_ticket_is_good_once_for_its_target_and_only_fresh_and_signed() -> None:
    key, now = CLUSTER_KEY.encode(), 1_000_000.0
    seen = ReplayCache(100, 30.0)

    def holder(value: str | None, at: float = now, target: str = "acceptor", with_key: bytes = key) -> str | None:
        return handshake.ticket_holder(value, with_key, target, at, 30.0, seen)

    good = handshake.ticket(key, "dialler", "acceptor", now)
    assert holder(good) == "dialler"
    assert holder(good) is None  # replayed
    assert holder(handshake.ticket(key, "dialler", "acceptor", now), target="another") is None
    assert holder(handshake.ticket(key, "dialler", "acceptor", now - 31.0)) is None  # stale
    assert holder(handshake.ticket(key, "dialler", "acceptor", now + 31.0)) is None  # from the future
    assert holder(handshake.ticket(b"another key", "dialler", "acceptor", now)) is None
    forged = handshake.ticket(key, "dialler", "acceptor", now).replace("dialler", "mallory", 1)
    assert holder(forged) is None  # the dialler it names is signed
    for junk in (None, "", "a b c", "x " * 4, "dialler nan " + "0" * 32 + " " + "0" * 64):
        assert holder(junk) is None
