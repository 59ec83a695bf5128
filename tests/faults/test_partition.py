"""A partition between two groups of nodes: both sides keep serving, and membership reconverges after healing."""

from __future__ import annotations

from faultsupport import Partition, reconverge_bound
from netsupport import InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.p2p.membership import MemberState


def _alive_ids(node) -> set[str]:
    return {m.node_id for m in node.membership.alive()}


async def test_both_sides_serve_during_a_partition_and_reconverge_after(
    make_node: NodeFactory, partition: Partition
) -> None:
    stores = (InMemoryStore(), InMemoryStore())
    fast = dict(request_timeout=1.0, push_pull_interval=1.0)
    seed = await make_node({"store"}, providers={"store": stores[0]}, **fast)
    side_a = [seed, await make_node({"cli"}, seed=seed, **fast), await make_node({"llm"}, seed=seed, **fast)]
    side_b = [await make_node({"store"}, seed=seed, providers={"store": stores[1]}, **fast),
              await make_node({"cli"}, seed=seed, **fast), await make_node({"llm"}, seed=seed, **fast)]
    everyone = side_a + side_b
    await eventually(lambda: sees_all(everyone), 10.0, "six nodes see each other")

    partition.split(side_a, side_b)
    a_ids, b_ids = {n.node_id for n in side_a}, {n.node_id for n in side_b}
    await eventually(lambda: all(_alive_ids(n) == a_ids for n in side_a)
                     and all(_alive_ids(n) == b_ids for n in side_b), 15.0, "each side declares the other dead")

    # Both sides keep serving writes and reads through their own store.
    client_a, client_b = side_a[1].client, side_b[1].client
    for i in range(10):
        await client_a.observe(f"side a fact {i}", idempotency_key=f"a-{i}")
        await client_b.observe(f"side b fact {i}", idempotency_key=f"b-{i}")
    assert len(stores[0].observations) == 10 and len(stores[1].observations) == 10
    assert len(await client_a.get_recent_observations(50)) == 10
    assert partition.dropped > 0

    partition.heal()
    bound = reconverge_bound(seed.settings)
    took = await eventually(lambda: sees_all(everyone), bound, "membership reconverges after healing")
    print(f"\npartition: reconverged {took:.2f}s after healing (bound {bound:.1f}s)")
    # The healed network serves on: a new write lands in exactly one of the two stores.
    await client_a.observe("after healing", idempotency_key="healed")
    assert sum(len(s.observations) for s in stores) == 21
    # A suspicion raised around the healing (or by a late event loop) is refuted, not turned into a death.
    await eventually(lambda: sees_all(everyone) and all(
        m.state is MemberState.ALIVE for n in everyone for m in n.membership.members()), bound, "no suspicion left")
