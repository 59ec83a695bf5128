"""A signed JOIN captured on its way to one node and replayed to others (issue 31, row 11).

A join named no target, so any node of the key took it: each node the replay reached listed the
joiner and answered with its whole membership. Now a join is bound to the node it joins, as every
other envelope is to its target; the joiner learns the seed's id first, from a join that carries
nothing and changes nothing.
"""

from __future__ import annotations

import httpx
import pytest
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.p2p.cluster import JOIN_PATH
from mnemonet.p2p.envelope import Codec, Envelope, Kind
from mnemonet.p2p.transport import Transport


def _codec() -> Codec:
    return Codec(CLUSTER_KEY, max_bytes=10**8, max_age=30.0, replay_entries=1000)


async def test_a_join_replayed_to_other_nodes_is_refused_by_them(
        make_node: NodeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    # Two nodes of the same key that never hear of the joiner: anything they list of it came from the replay.
    first = await make_node({"store"}, providers={"store": InMemoryStore()})
    second = await make_node({"cli"}, seed=first)
    await eventually(lambda: sees_all([first, second]), 10.0, "the other two joined each other")

    captured: list[bytes] = []  # what the joiner sends to /v1/join, as it crosses the wire
    post_url = Transport.post_url

    async def capture(self: Transport, url: str, path: str, env: Envelope, timeout: float) -> Envelope | None:
        if path == JOIN_PATH and env.payload.get("member"):
            captured.append(self._codec.encode(env))
        return await post_url(self, url, path, env, timeout)

    monkeypatch.setattr(Transport, "post_url", capture)
    joiner = await make_node({"cli"}, bootstrap=seed.url)
    monkeypatch.setattr(Transport, "post_url", post_url)
    await eventually(lambda: sees_all([seed, joiner]), 10.0, "the joiner joined its seed")
    assert captured

    async with httpx.AsyncClient() as http:
        for node in (first, second):
            reply = await http.post(f"{node.url}{JOIN_PATH}", content=captured[0])
            answer = _codec().decode(reply.content)
            assert answer.kind is Kind.RESPONSE and answer.payload["error"]["code"] == "wrong_target", answer
    for node in (first, second):  # not listed, not even pending admission; their membership not disclosed
        assert node.membership.get(joiner.node_id) is None
        assert joiner.node_id not in {m.node_id for m in node.membership.pending()}
    assert {m.node_id for m in joiner.membership.members()} == {seed.node_id, joiner.node_id}
