"""Membership on real sockets: join, crash detection, refutation, leave, re-bootstrap."""

from __future__ import annotations

import asyncio

from netsupport import InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.cluster import detector_config, membership_config
from mnemonet.p2p.detector import detection_bound
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.membership import Member, MemberState

NETWORK = "memory"  # membership between real nodes: the protocol is the point, not the sockets
JOIN_BOUND = 5.0  # seconds for 5 nodes on loopback with a 0.1 s gossip interval


async def _five(make_node: NodeFactory) -> list[PeerNode]:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    others = [await make_node({"cli"}, seed=seed) for _ in range(4)]
    return [seed, *others]



def _state(node: PeerNode, node_id: str) -> MemberState | None:
    member = node.membership.get(node_id)
    return member.state if member is not None else None


def _incarnation(node: PeerNode, node_id: str) -> int:
    member = node.membership.get(node_id)
    return member.incarnation if member is not None else -1

async def test_five_nodes_join_through_one_seed(make_node: NodeFactory) -> None:
    nodes = await _five(make_node)
    await eventually(lambda: sees_all(nodes), JOIN_BOUND, "every node sees every node alive")
    # Neighbour links form too (each node dials up to max_neighbours peers).
    await eventually(lambda: all(len(n.transport.neighbours()) == 4 for n in nodes), JOIN_BOUND,
                     "every node linked to the other four")


async def test_killed_node_is_declared_dead_by_all_and_stays_dead(make_node: NodeFactory) -> None:
    nodes = await _five(make_node)
    await eventually(lambda: sees_all(nodes), JOIN_BOUND, "all joined")
    victim, survivors = nodes[2], [n for n in nodes if n is not nodes[2]]
    resurrected: list[str] = []
    for node in survivors:
        def watch(member: Member, old: MemberState | None, node: PeerNode = node) -> None:
            if member.node_id == victim.node_id and old in (MemberState.DEAD,) and member.state is not MemberState.DEAD:
                resurrected.append(node.node_id)
        node.membership.add_listener(watch)

    await victim.kill()
    s = survivors[0].settings
    bound = detection_bound(len(nodes), membership_config(s), detector_config(s))
    took = await eventually(
        lambda: all(_state(n, victim.node_id) is MemberState.DEAD for n in survivors),
        bound, f"every survivor declares the killed node dead within {bound:.1f}s")
    assert took <= bound
    await asyncio.sleep(2 * s.push_pull_interval)  # gossip and push-pull keep running
    assert all(_state(n, victim.node_id) is MemberState.DEAD for n in survivors)
    assert resurrected == []
    assert all(victim.node_id not in n.transport.neighbours() for n in survivors)
    # A message still reaching the killed node (a link reader or request outliving it) gets no ack.
    ping = Envelope(kind=Kind.PING, sender=survivors[0].node_id, target=victim.node_id, payload={"piggyback": []})
    assert await victim._dispatch(ping) is None


async def test_suspected_live_node_refutes_and_stays_alive(make_node: NodeFactory) -> None:
    nodes = await _five(make_node)
    await eventually(lambda: sees_all(nodes), JOIN_BOUND, "all joined")
    target, accuser = nodes[3], nodes[0]
    deaths: list[str] = []
    for node in nodes:
        node.membership.add_listener(
            lambda m, old: deaths.append(m.node_id)
            if m.node_id == target.node_id and m.state is MemberState.DEAD else None)

    accuser.membership.suspect(target.node_id)  # a false suspicion, as after a lost ack
    assert _state(accuser, target.node_id) is MemberState.SUSPECT
    await eventually(lambda: target.membership.local.incarnation >= 1, 2.0, "the target refutes")
    await eventually(
        lambda: all(_state(n, target.node_id) is MemberState.ALIVE
                    and _incarnation(n, target.node_id) >= 1 for n in nodes),
        3.0, "everyone sees the refutation")
    await asyncio.sleep(accuser.settings.suspicion_timeout + 0.5)  # past when the suspicion would have expired
    assert deaths == []
    assert sees_all(nodes)


async def test_leave_removes_node_everywhere(make_node: NodeFactory) -> None:
    nodes = await _five(make_node)
    await eventually(lambda: sees_all(nodes), JOIN_BOUND, "all joined")
    leaver, rest = nodes[4], nodes[:4]
    await leaver.stop()
    await eventually(lambda: all(_state(n, leaver.node_id) is MemberState.LEFT for n in rest),
                     2.0, "everyone marks the leaver left")
    assert all(leaver.node_id not in {m.node_id for m in n.membership.alive()} for n in rest)
    await eventually(lambda: all(leaver.node_id not in n.transport.neighbours() for n in rest), 2.0, "links closed")


async def test_joiner_retries_until_a_seed_appears_and_uses_the_reached_url(make_node: NodeFactory) -> None:
    # The seed advertises a URL nobody can reach; the joiner must use the one it reached it at.
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    dead_url = "http://127.0.0.1:9"  # discard port: refused
    joiner = await make_node({"cli"}, bootstrap=f"{dead_url},{seed.url}")
    await eventually(lambda: sees_all([seed, joiner]), 3.0, "joined through the second seed")
    assert joiner.transport.address(joiner.membership.get(seed.node_id)) == seed.url


async def test_rebootstrap_after_every_peer_is_gone(make_node: NodeFactory) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    port = int(seed.url.rsplit(":", 1)[1])
    member = await make_node({"cli"}, seed=seed)
    await eventually(lambda: sees_all([seed, member]), 3.0, "joined")
    await seed.kill()
    await eventually(lambda: member.membership.alive(include_local=False) == [], 6.0, "the only peer is dead")
    # A new seed comes up at the bootstrap address; the lone node must find it by itself.
    replacement = await make_node({"store"}, providers={"store": InMemoryStore()}, port=port)
    await eventually(lambda: sees_all([replacement, member]), 5.0, "the lone node re-bootstraps")
