"""A node that cannot join says why, at warning level and in ``/health`` (issue 21 items 1 and 6).

It used to log "node ready" and retry forever; the cause ("wrong cluster key?") was an info line.
"""

from __future__ import annotations

import logging
import socket

import httpx
import pytest
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory, client_token, eventually, sees_all

OTHER_KEY = "another-cluster-key-0123"
KEY_ERROR = "the seed at {url} refused our cluster key (every node needs the same MNEMONET_CLUSTER_KEY)"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on return: nothing listens there


async def test_a_wrong_cluster_key_is_named_in_the_log_and_in_health(
        make_node: NodeFactory, caplog: pytest.LogCaptureFixture) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    with caplog.at_level(logging.WARNING, logger="mnemonet.p2p.cluster"):
        stranger = await make_node({"cli"}, seed=seed, cluster_key=OTHER_KEY)
    expected = {"joined": False, "seeds": [seed.url], "last_error": KEY_ERROR.format(url=seed.url)}
    assert stranger.health()["membership"] == expected
    warnings = [r.getMessage() for r in caplog.records if r.name == "mnemonet.p2p.cluster"]
    assert warnings == [f"not joined to any network yet: {KEY_ERROR.format(url=seed.url)}; retrying"]
    token = client_token("read", key=OTHER_KEY)
    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{stranger.url}/health", headers={"authorization": f"Bearer {token}"})).json()
    assert body["membership"] == expected


async def test_no_node_at_the_seed_url_is_named(make_node: NodeFactory) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    lonely = await make_node({"cli"}, bootstrap=url)
    status = lonely.health()["membership"]
    assert status["joined"] is False
    assert status["last_error"].startswith(f"no node at {url} (cannot reach {url}")


async def test_a_joined_node_and_a_first_node_report_joined(make_node: NodeFactory) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    member = await make_node({"cli"}, seed=seed, cluster_key=CLUSTER_KEY)
    await eventually(lambda: sees_all([seed, member]), 10, "both see each other")
    assert member.health()["membership"] == {"joined": True, "seeds": [seed.url], "last_error": None}
    assert seed.health()["membership"] == {"joined": True, "seeds": [], "last_error": None}
