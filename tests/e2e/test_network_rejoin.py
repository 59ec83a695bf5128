"""Self-healing membership on real sockets: restarted nodes, seed or not, same id or new, are whole again at once.

A store node is the only seed of two workers, which keep seeing each other
after it goes; each restart below brings up a new process on the same port.
Bounds come from the settings (``rejoin_bound``): a worker tries its seed
again within ``rejoin_backoff_max x (1 + rejoin_jitter)`` of its last try.
"""

from __future__ import annotations

import socket

from netsupport import InMemoryStore, NodeFactory, eventually

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.membership import MemberState
from mnemonet.settings import Settings

MARGIN = 2.0  # timers run late on two loaded cores


def rejoin_bound(s: Settings) -> float:
    """Seconds until a restarted node is alive again in every view (without any detection)."""
    retry = s.rejoin_backoff_max * (1 + s.rejoin_jitter) + s.link_maintenance_interval
    return MARGIN * (retry + 2 * s.control_timeout + s.gossip_interval)


def _port(node: PeerNode) -> int:
    return int(node.url.rsplit(":", 1)[1])


def _state(node: PeerNode, node_id: str) -> MemberState | None:
    member = node.membership.get(node_id)
    return None if member is None else member.state


def _alive_in(node: PeerNode, node_id: str) -> bool:
    # Admitted too (it answered our probe), so calls are routed to it: alive() leaves pending members out.
    return _state(node, node_id) is MemberState.ALIVE and any(m.node_id == node_id for m in node.membership.alive())


async def _store_and_two_workers(make_node: NodeFactory, **store: object) -> tuple[PeerNode, list[PeerNode]]:
    with socket.socket() as sock:  # a fixed port, so the restarted store is found at its old address
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    seed = await make_node({"store"}, providers={"store": InMemoryStore()}, port=port, **store)
    workers = [await make_node({"cli"}, seed=seed) for _ in range(2)]
    await eventually(lambda: all(len(n.membership.alive()) == 3 for n in [seed, *workers]), 10.0, "all joined")
    return seed, workers


async def test_a_restarted_seed_under_a_new_id_is_called_back_by_peers_that_still_see_each_other(
    make_node: NodeFactory,
) -> None:
    seed, workers = await _store_and_two_workers(make_node)
    await seed.stop()  # graceful: the workers hold it "left" at once
    await eventually(lambda: all(len(w.membership.alive()) == 2 for w in workers), 10.0, "workers saw it leave")
    again = await make_node({"store"}, providers={"store": InMemoryStore()}, port=_port(seed))
    assert again.node_id != seed.node_id
    bound = rejoin_bound(again.settings)
    took = await eventually(lambda: all(_alive_in(w, again.node_id) for w in workers)
                            and len(again.membership.alive()) == 3, bound, "restarted seed whole again")
    print(f"\nrestarted seed (new id) whole again {took:.2f}s after it serves (bound {bound:.1f}s)")
    await workers[0].client.stats()  # and routed calls reach it


async def test_a_seed_restarted_under_its_old_id_after_being_declared_dead_is_accepted_at_once(
    make_node: NodeFactory,
) -> None:
    seed, workers = await _store_and_two_workers(make_node, node_id="store-1")
    await seed.kill()
    await eventually(lambda: all(_state(w, "store-1") is MemberState.DEAD for w in workers), 20.0,
                     "workers declared it dead")
    old = workers[0].membership.get("store-1")
    assert old is not None
    again = await make_node({"store"}, providers={"store": InMemoryStore()}, port=_port(seed), node_id="store-1")
    bound = rejoin_bound(again.settings)
    # The workers' welcome is from a node they hold dead: a push-pull shows it its death, it refutes.
    await eventually(lambda: all(_alive_in(w, "store-1") for w in workers), bound, "old id alive again")
    assert again.membership.local.incarnation > old.incarnation
    await workers[1].client.stats()


async def test_a_worker_restarted_under_its_old_id_refutes_its_death_in_the_welcome(make_node: NodeFactory) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    worker = await make_node({"cli"}, seed=seed, node_id="worker-1")
    await eventually(lambda: _alive_in(seed, "worker-1"), 10.0, "worker joined")
    await worker.stop()
    await eventually(lambda: _state(seed, "worker-1") is MemberState.LEFT, 10.0, "seed saw it leave")
    again = await make_node({"cli"}, seed=seed, node_id="worker-1")
    # Accepted by the seed within the join itself: the welcome's "left" record is refuted and the join re-sent.
    assert _alive_in(seed, "worker-1") and again.membership.local.incarnation >= 1
