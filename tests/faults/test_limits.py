"""Limits and back-pressure (busy, retry after), /metrics, and the request id that follows a call across nodes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from netsupport import ADMIN_TOKEN, InMemoryStore, NodeFactory, eventually, sees_all

from mnemonet.p2p.envelope import Envelope, Kind, encode
from mnemonet.p2p.errors import Busy
from mnemonet.p2p.limits import KeyedLimiter, TokenBucket
from mnemonet.p2p.tracing import RequestIdFilter, current_request_id

AUTH = {"authorization": f"Bearer {ADMIN_TOKEN}"}
log = logging.getLogger("tests.faults.store")


def test_token_bucket_refills_at_its_rate_and_says_how_long_to_wait() -> None:
    bucket = TokenBucket(rate=2.0, burst=2, now=0.0)
    assert bucket.take(0.0) == 0.0 and bucket.take(0.0) == 0.0
    assert bucket.take(0.0) == pytest.approx(0.5)
    assert bucket.take(0.5) == 0.0


def test_keyed_limiter_caps_in_flight_and_forgets_idle_keys_first() -> None:
    limiter = KeyedLimiter("client", max_in_flight=1, rate=0, burst=1, max_keys=2, retry_after=2.0)
    limiter.acquire("a")
    with pytest.raises(Busy) as busy:
        limiter.acquire("a")
    assert busy.value.code == "busy" and busy.value.retry_after == 2.0
    limiter.acquire("b")
    with pytest.raises(Busy):
        limiter.acquire("c")  # both tracked keys are busy: a third would grow the map
    limiter.release("b")
    limiter.acquire("c")  # "b" was idle and is forgotten
    assert limiter.in_flight("c") == 1 and limiter.in_flight("b") == 0


async def test_client_over_its_rate_gets_503_busy_with_retry_after(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()}, client_rate_limit=0.5, client_rate_burst=3)
    async with httpx.AsyncClient(base_url=node.url, headers=AUTH, trust_env=False) as http:
        statuses = [(await http.post("/v1/stats", json={})) for _ in range(5)]
        assert [r.status_code for r in statuses] == [200, 200, 200, 503, 503]
        refused = statuses[-1]
        assert refused.json()["error"]["code"] == "busy"
        assert int(refused.headers["retry-after"]) >= 1
        metrics = (await http.get("/metrics")).text
    assert 'mnemonet_requests_total{method="stats",outcome="busy"} 2.0' in metrics
    assert 'mnemonet_requests_total{method="stats",outcome="ok"} 3.0' in metrics


async def test_batch_over_the_limit_is_refused(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()}, max_batch_items=3)
    async with httpx.AsyncClient(base_url=node.url, headers=AUTH, trust_env=False) as http:
        ok = await http.post("/v1/load", json={"ids": ["a", "b", "c"]})
        refused = await http.post("/v1/load", json={"ids": ["a", "b", "c", "d"]})
    assert ok.status_code == 200
    assert refused.status_code == 400 and "limit 3" in refused.json()["error"]["message"]


async def test_peer_over_its_rate_is_refused_busy_and_the_router_tries_another(make_node: NodeFactory) -> None:
    strict, relaxed = InMemoryStore(), InMemoryStore()
    seed = await make_node({"store"}, providers={"store": strict}, peer_rate_limit=0.1, peer_rate_burst=1)
    other = await make_node({"store"}, seed=seed, providers={"store": relaxed})
    client = await make_node({"cli"}, seed=seed)
    await eventually(lambda: sees_all([seed, other, client]), 10.0, "three nodes see each other")
    # Concurrent calls: routing spreads them by load, so the strict peer gets several and refuses all but one.
    await asyncio.gather(*(client.client.observe(f"fact {i}", idempotency_key=f"k{i}") for i in range(10)))
    assert len(strict.observations) + len(relaxed.observations) == 10
    assert len(strict.observations) <= 1  # one token, then busy: the rest went to the other peer
    async with httpx.AsyncClient(trust_env=False, headers=AUTH) as http:
        served = (await http.get(f"{seed.url}/metrics")).text
        routed = (await http.get(f"{client.url}/metrics")).text
    assert 'mnemonet_requests_total{method="observe",outcome="busy"}' in served
    assert 'mnemonet_rpc_failovers_total{method="observe",reason="busy"}' in routed


async def test_metrics_show_members_refusals_and_latency(make_node: NodeFactory) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    peer = await make_node({"llm"}, seed=seed)
    await eventually(lambda: sees_all([seed, peer]), 10.0, "two nodes see each other")
    forged = encode(Envelope(kind=Kind.PING, sender="intruder"), b"not-the-cluster-key")
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.post(f"{seed.url}/v1/peer", content=forged)).status_code == 401
        await http.post(f"{seed.url}/v1/observe", json={"text": "metrics see this"}, headers=AUTH)
        resp = await http.get(f"{seed.url}/metrics", headers=AUTH)
    assert resp.headers["content-type"].startswith("text/plain")
    text = resp.text
    assert 'mnemonet_members{state="alive"} 2.0' in text
    assert 'mnemonet_refused_envelopes_total{reason="bad_tag"} 1.0' in text
    assert 'mnemonet_request_duration_seconds_count{method="observe"} 1.0' in text
    assert "mnemonet_events_delivered_total" in text and "mnemonet_vector_sync_total" in text


async def test_metrics_count_the_suspicions_and_death_of_a_killed_peer(make_node: NodeFactory) -> None:
    seed = await make_node({"store"}, providers={"store": InMemoryStore()})
    peer = await make_node({"llm"}, seed=seed)
    await eventually(lambda: sees_all([seed, peer]), 10.0, "two nodes see each other")
    await peer.kill()
    await eventually(lambda: seed.membership.deaths[peer.node_id] == 1, 30.0, "the seed declares the peer dead")
    async with httpx.AsyncClient(trust_env=False) as http:
        text = (await http.get(f"{seed.url}/metrics", headers=AUTH)).text
    assert f'mnemonet_member_deaths_total{{node="{peer.node_id}"}} 1.0' in text
    suspicions = f'mnemonet_member_suspicions_total{{node="{peer.node_id}"}} '
    assert suspicions in text  # suspected before it was declared dead
    assert float(text.split(suspicions)[1].split()[0]) >= 1
    assert f'node="{seed.node_id}"' not in text  # never itself


class TracedStore(InMemoryStore):
    """Logs from inside the call, as the real service does, and remembers the request id it ran under."""

    def __init__(self) -> None:
        super().__init__()
        self.request_ids: list[str | None] = []

    async def observe(self, text: str, source: str = "user", **kwargs: Any) -> Any:
        self.request_ids.append(current_request_id())
        log.info("store observe")
        return await super().observe(text, source, **kwargs)


async def test_request_id_follows_a_call_across_nodes_into_log_lines(
    make_node: NodeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    store = TracedStore()
    seed = await make_node({"store"}, providers={"store": store})
    front = await make_node({"cli"}, seed=seed)
    await eventually(lambda: sees_all([seed, front]), 10.0, "two nodes see each other")
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.INFO, logger="tests.faults.store"):
        async with httpx.AsyncClient(trust_env=False) as http:
            resp = await http.post(f"{front.url}/v1/observe", json={"text": "traced"},
                                   headers={**AUTH, "x-request-id": "trace-1234"})
    assert resp.status_code == 200 and resp.headers["x-request-id"] == "trace-1234"
    assert store.request_ids == ["trace-1234"]  # on the store node, reached over the network
    [record] = [r for r in caplog.records if r.name == "tests.faults.store"]
    assert record.__dict__["request_id"] == "trace-1234"  # set by RequestIdFilter
