"""A flood of forged members neither breaks routing nor hangs a stop (issue 17, High 3).

20,000 fake "store" members in one 2.3 MB gossip message once broke routed
calls cluster-wide for hours (requests went to addresses where no node
answers) and a graceful stop then hung 8 minutes. The forger holds the
cluster key here (a compromised peer): the caps and the admission probe are
what stop it, not the tag.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import Envelope, Kind, encode


def _fakes(n: int) -> list[dict[str, Any]]:
    # TEST-NET-1 addresses (RFC 5737): nothing answers there, connections hang until their timeout.
    return [{"node_id": f"fake-{i}", "url": f"http://192.0.2.{i % 250 + 1}:{9000 + i // 250}",
             "capabilities": ["store"], "incarnation": 0, "state": "alive"} for i in range(n)]


async def _gossip(node: PeerNode, updates: list[dict[str, Any]]) -> None:
    env = Envelope(kind=Kind.GOSSIP, sender="forger", target=node.node_id, payload={"updates": updates})
    async with httpx.AsyncClient(trust_env=False, timeout=30.0) as http:
        resp = await http.post(f"{node.url}/v1/peer", content=encode(env, CLUSTER_KEY.encode()))
    assert resp.status_code in (200, 204)


async def test_a_member_flood_neither_reaches_routing_nor_hangs_stop(make_node: NodeFactory) -> None:
    a = await make_node({"store"}, providers={"store": InMemoryStore()})
    b = await make_node({"llm"}, seed=a, member_admission_timeout=2.0, max_pending_members=64)
    await eventually(lambda: sees_all([a, b]), 10.0, "two nodes see each other")

    # 1. Over the per-message cap: refused whole.
    await _gossip(b, _fakes(20_000))
    assert {m.node_id for m in b.membership.members(include_dead=True)} == {a.node_id, b.node_id}
    assert not b.membership.pending()

    # 2. Under it: at most max_pending_members are listed, pending, and none is routed to, relayed or probed.
    await _gossip(b, _fakes(4_000))
    assert 0 < len(b.membership.pending()) <= 64
    assert [m.node_id for m in b.membership.alive("store", include_local=False)] == [a.node_id]
    started = time.monotonic()
    for _ in range(20):
        assert (await b.call("stats", {}))["observations"] == 0
    routed = time.monotonic() - started
    assert not any(u["node_id"].startswith("fake-") for u in b.membership.take_piggyback())
    assert not any(m.node_id.startswith("fake-") for m in a.membership.members(include_dead=True))

    # 3. None answers a probe: all are forgotten after the admission timeout.
    await eventually(lambda: not b.membership.pending(), 15.0, "the fakes are forgotten")
    assert b.membership.invalid_updates >= 4_000 - 64  # those over the pending cap, refused one by one

    # 4. A graceful stop stays bounded (it once hung 8 minutes).
    await _gossip(b, _fakes(4_000))
    started = time.monotonic()
    await asyncio.wait_for(b.stop(), 60.0)
    stopped = time.monotonic() - started
    print(f"\nflood: 20 routed calls in {routed:.2f}s; stop took {stopped:.2f}s")
    assert stopped < 3 * b.settings.shutdown_timeout + 2.0
