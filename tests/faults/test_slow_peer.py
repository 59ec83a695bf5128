"""A slow peer is routed around; a peer that stops answering is declared dead within the detection bound."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from netsupport import InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.p2p.cluster import detector_config, membership_config
from mnemonet.p2p.detector import detection_bound
from mnemonet.p2p.membership import MemberState
from mnemonet.p2p.transport import PeerTimeout, Transport

# The bound assumes prompt timers; on two loaded cores an event loop runs late, so allow a margin.
BOUND_MARGIN = 1.5


class SlowStore(InMemoryStore):
    """Answers reads only after ``delay`` seconds (past the caller's request timeout)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def get_recent_observations(self, limit: int = 20) -> Any:
        self.calls.append("get_recent_observations")
        await asyncio.sleep(self.delay)
        return list(self.observations.values())[:limit]


async def test_slow_peer_is_routed_around(make_node: NodeFactory) -> None:
    slow, fast = SlowStore(delay=3.0), InMemoryStore()
    timers = dict(request_timeout=0.5)
    seed = await make_node({"store"}, providers={"store": slow}, **timers)
    other = await make_node({"store"}, seed=seed, providers={"store": fast}, **timers)
    client = await make_node({"cli"}, seed=seed, **timers)
    await eventually(lambda: sees_all([seed, other, client]), 10.0, "three nodes see each other")

    started = time.monotonic()
    for _ in range(10):
        assert await client.client.get_recent_observations(5) == []
    took = time.monotonic() - started
    slow_calls = slow.calls.count("get_recent_observations")
    print(f"\nslow peer: 10 reads in {took:.2f}s; the slow peer got {slow_calls} of them")
    # An untried peer ranks first, so the slow one is tried once, times out (the call fails over to the
    # fast one) and is then routed around.
    assert slow_calls == 1
    assert fast.calls.count("get_recent_observations") == 10
    assert took < 0.5 + 10 * 0.3


async def test_peer_that_stops_answering_is_declared_dead_within_the_bound(
    make_node: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    muted: set[str] = set()
    on_message, handle_http = Transport._on_message, Transport.handle_http
    call, send, post_url = Transport.call, Transport.send, Transport.post_url

    async def deaf_on_message(self: Transport, link: Any, raw: bytes) -> None:
        if self.node_id not in muted:
            await on_message(self, link, raw)

    async def deaf_handle_http(self: Transport, raw: bytes, accept: Any, origin: str = "unknown") -> tuple[int, bytes]:
        if self.node_id in muted:
            await asyncio.Event().wait()  # the process is alive but never answers
        return await handle_http(self, raw, accept, origin)

    async def stuck_call(self: Transport, member: Any, env: Any, timeout: float) -> Any:
        if self.node_id in muted:
            await asyncio.sleep(timeout)
            raise PeerTimeout("hung")
        return await call(self, member, env, timeout)

    async def stuck_send(self: Transport, member: Any, env: Any) -> None:
        if self.node_id not in muted:
            await send(self, member, env)

    async def stuck_post_url(self: Transport, url: str, path: str, env: Any, timeout: float) -> Any:
        if self.node_id in muted:
            await asyncio.sleep(timeout)
            raise PeerTimeout("hung")
        return await post_url(self, url, path, env, timeout)

    # Patched before the nodes start, so their links read through it. A muted node keeps its
    # sockets open but neither reads nor sends: a hung process, not a crashed one.
    for name, fn in (("_on_message", deaf_on_message), ("handle_http", deaf_handle_http), ("call", stuck_call),
                     ("send", stuck_send), ("post_url", stuck_post_url)):
        monkeypatch.setattr(Transport, name, fn)
    nodes = [await make_node({"llm"})]
    for _ in range(3):
        nodes.append(await make_node({"llm"}, seed=nodes[0]))
    await eventually(lambda: sees_all(nodes), 10.0, "four nodes see each other")
    mute, survivors = nodes[-1], nodes[:-1]
    muted.add(mute.node_id)
    bound = detection_bound(len(nodes), membership_config(mute.settings), detector_config(mute.settings))
    took = await eventually(
        lambda: all((m := n.membership.get(mute.node_id)) is not None and m.state is MemberState.DEAD
                    for n in survivors),
        BOUND_MARGIN * bound, "every survivor declares the mute peer dead")
    print(f"\nmute peer: declared dead by all survivors in {took:.2f}s (bound {bound:.2f}s)")
