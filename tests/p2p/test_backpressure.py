"""Back-pressure between peers: a full link or a saturated peer slows its sender down instead of refusing it.

Issue 31 row 9: a validation worker's 4 batches of 20 candidate searches, the store's extractions and
its index writes all crossed one link to the model node at once; past 64 in flight each was refused
"busy" and, with one model node, failed for good. Here one node calls a gated embedder on another
over a real link, more calls at once than a link (or the peer) serves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
from netsupport import NodeFactory, eventually, sees_all

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.errors import Busy
from mnemonet.p2p.limits import Room, RoomClosed


class GatedEmbedder:
    """An embedder whose calls wait on ``gate``; counts how many run at once."""

    model = "gated"
    dimension = 3
    query_takes_all_cores = True

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.running = 0
        self.most = 0

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> list[list[float]]:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await self.gate.wait()
        finally:
            self.running -= 1
        return [[1.0, 0.0, 0.0] for _ in texts]


async def _linked(make_node: NodeFactory, embedder: GatedEmbedder, *, server: dict[str, object],
                  caller: dict[str, object]) -> tuple[PeerNode, PeerNode]:
    model = await make_node({"embed"}, providers={"embed": embedder}, **server)
    front = await make_node({"cli"}, seed=model, **caller)
    await eventually(lambda: sees_all([model, front]), 10.0, "the two nodes joined")
    await eventually(lambda: front.transport.link_to(model.node_id) is not None, 10.0, "a link to the model node")
    return model, front


async def _embed(node: PeerNode, i: int) -> list[list[float]]:
    result: list[list[float]] = await node.call("embed.embed", {"texts": [f"text {i}"], "kind": "passage"})
    return result


async def test_a_full_link_makes_the_sender_wait_and_every_call_succeeds(make_node: NodeFactory) -> None:
    embedder = GatedEmbedder()
    model, front = await _linked(make_node, embedder, server={}, caller={"request_timeout": 60.0})
    window = front.settings.max_inflight_per_link
    calls = [asyncio.create_task(_embed(front, i)) for i in range(window + 86)]
    # The link carries its window; the rest wait on the caller's side, none refused.
    await eventually(lambda: embedder.running == window, 10.0, f"{window} calls at the model node")
    assert not any(call.done() for call in calls)
    embedder.gate.set()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert embedder.most == window


async def test_a_saturated_peer_queues_peer_requests_instead_of_refusing_them(make_node: NodeFactory) -> None:
    embedder = GatedEmbedder()
    model, front = await _linked(make_node, embedder, server={"max_concurrent_requests": 16},
                                 caller={"request_timeout": 60.0})
    calls = [asyncio.create_task(_embed(front, i)) for i in range(48)]
    await eventually(lambda: embedder.running == 16, 10.0, "16 calls at the model node")
    await eventually(lambda: sum(link.in_flight for link in model.transport.links()) == 48, 10.0,
                     "the 48 requests arrived and wait")
    assert not any(call.done() for call in calls)
    embedder.gate.set()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert embedder.most == 16


async def test_past_link_room_timeout_a_call_fails_busy_naming_the_bound(make_node: NodeFactory) -> None:
    embedder = GatedEmbedder()
    model, front = await _linked(make_node, embedder, server={},
                                 caller={"request_timeout": 60.0, "link_room_timeout": 0.5})
    window = front.settings.max_inflight_per_link
    calls = [asyncio.create_task(_embed(front, i)) for i in range(window + 10)]
    await eventually(lambda: sum(call.done() for call in calls) == 10, 20.0, "the 10 calls beyond the window failed")
    embedder.gate.set()
    results = await asyncio.gather(*calls, return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(failed) == 10 and all(isinstance(r, Busy) for r in failed)
    assert "link_room_timeout" in str(failed[0]) and model.node_id in str(failed[0])
    assert embedder.most == window


async def test_a_request_is_stamped_when_it_leaves_not_when_it_was_made(make_node: NodeFactory) -> None:
    """A request that waited for room longer than ``max_message_age`` (30-40 s in the 1,500-line import on two
    loaded cores) was refused as stale by its peer, which closed the link: every request on it then failed
    over to HTTP and the peer's unauthenticated read budget refused them busy."""
    embedder = GatedEmbedder()
    embedder.gate.set()
    model, front = await _linked(make_node, embedder, server={}, caller={})
    member = front.membership.get(model.node_id)
    assert member is not None
    made = time.time() - 2 * model.settings.max_message_age  # as if it had waited that long for room
    env = Envelope(kind=Kind.REQUEST, sender=front.node_id, target=model.node_id, method="embed.embed", ts=made,
                   payload={"kwargs": {"texts": ["late"], "kind": "passage"}, "request_id": "stale-1"})
    reply = await front.transport.call(member, env, 10.0)
    assert reply.payload == {"result": [[1.0, 0.0, 0.0]]}
    assert model.codec.refused["stale"] == 0 and front.transport.link_to(model.node_id) is not None


async def test_a_room_hands_places_over_in_arrival_order() -> None:
    room = Room(1)
    assert room.try_enter()
    entered: list[str] = []

    async def wait(name: str) -> None:
        await room.enter(60.0)
        entered.append(name)

    first, gives_up, handed_then_cancelled, last = (asyncio.create_task(wait(n)) for n in "abcd")
    await eventually(lambda: room.waiting == 4, 5.0, "four waiters")
    assert not room.try_enter()  # a newcomer does not overtake the waiters
    gives_up.cancel()  # gives up before any place is free: takes none
    room.leave()
    await eventually(lambda: entered == ["a"], 5.0, "the first waiter entered")
    room.leave()  # handed to c, which is cancelled before it runs: the place goes on to d
    handed_then_cancelled.cancel()
    await eventually(lambda: entered == ["a", "d"], 5.0, "the place passed on to the last waiter")
    assert room.used == 1 and first.done() and last.done() and gives_up.cancelled()
    waiting = asyncio.create_task(room.enter(60.0))
    await eventually(lambda: room.waiting == 1, 5.0, "one waiter")
    room.close()  # the link is gone: waiters and newcomers fail at once
    with pytest.raises(RoomClosed):
        await waiting
    with pytest.raises(RoomClosed):
        await room.enter(60.0)
