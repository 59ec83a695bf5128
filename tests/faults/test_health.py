"""Health that means something (issue 14, item 4): a stopped or unreachable database is reported, and named.

``/health`` runs a real round trip to each database; a failing one makes it
answer 503 ``failing`` (what the compose health check sees), and a call that
needs it answers 503 ``unavailable`` naming it, locally and routed through
another node, never a bare 500.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from netsupport import ADMIN_TOKEN, NodeFactory, eventually

from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.graph_errors import GraphUnavailable

HEADERS = {"authorization": f"Bearer {ADMIN_TOKEN}"}
OPEN_WITHIN = 120.0  # opening the store: the embedding model and FalkorDB start, on two loaded cores


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


async def _health(http: httpx.AsyncClient, url: str) -> tuple[int, dict[str, Any]]:
    resp = await http.get(f"{url}/health")
    return resp.status_code, resp.json()


async def _until(http: httpx.AsyncClient, url: str, wanted: str, within: float) -> tuple[int, dict[str, Any]]:
    deadline = time.monotonic() + within
    while True:
        status, body = await _health(http, url)
        if body["status"] == wanted:
            return status, body
        assert time.monotonic() < deadline, f"/health not {wanted} within {within}s: {body}"
        await asyncio.sleep(0.2)  # the next poll of a condition with a bound


async def test_a_stopped_falkordb_fails_health_and_calls_answer_503_naming_the_graph(
    make_node: NodeFactory, postgres_url: str, unique_name: str, test_data_dir: Path
) -> None:
    store = await make_node({"store", "llm", "embed"}, data_dir=test_data_dir / unique_name, llm="offline",
                            database_url=postgres_url, graph_name=unique_name, health_timeout=2.0)
    client = await make_node({"cli"}, seed=store)
    async with httpx.AsyncClient(headers=HEADERS, trust_env=False, timeout=60.0) as http:
        # /health opens the store in the background: degraded, then ok once both databases answer.
        status, body = await _health(http, store.url)
        assert body["status"] in ("degraded", "ok"), body
        status, body = await _until(http, store.url, "ok", OPEN_WITHIN)
        assert status == 200
        assert {k: v["status"] for k, v in body["checks"].items()} == {"graph": "ok", "vectors": "ok"}
        await eventually(lambda: client.router.candidates("observe") != [], 10.0, "the client sees the store")
        ok = await http.post(f"{client.url}/v1/observe", json={"text": "the kettle is blue", "source": "health"})
        assert ok.status_code == 200, ok.text

        service: Any = store.providers.ready("store")
        server = service.graph.server
        os.kill(server.process.pid, signal.SIGTERM)  # FalkorDB stops (as an operator or the OOM killer would)
        assert await asyncio.to_thread(server.process.wait, 30) == 0

        # The check before the stop answers for up to health_cache_ttl; the next one sees the graph gone.
        settings = store.settings
        status, body = await _until(http, store.url, "failing", settings.health_cache_ttl + settings.health_timeout + 5)
        assert status == 503, body
        assert body["checks"]["graph"]["status"] == "failing" and body["checks"]["vectors"]["status"] == "ok"
        routed = await http.post(f"{client.url}/v1/observe", json={"text": "the kettle is red", "source": "health"})
        local = await http.post(f"{store.url}/v1/stats", json={})
        for resp in (routed, local):
            assert resp.status_code == 503, resp.text
            error = resp.json()["error"]
            assert error["code"] == "unavailable" and error["message"].startswith("graph unavailable: falkordb"), error


async def test_an_unreachable_neo4j_is_a_named_503_not_a_bare_500(
    make_node: NodeFactory, postgres_url: str, unique_name: str
) -> None:
    uri = f"bolt://127.0.0.1:{_closed_port()}"
    settings = Settings(graph_backend="neo4j", neo4j_uri=uri, neo4j_password="x", graph_query_timeout=2.0)
    graph = await GraphStore.open(settings)
    try:
        with pytest.raises(GraphUnavailable, match=f"graph unavailable: neo4j at {uri}"):
            await graph.ping()
    finally:
        await graph.close()

    store = await make_node({"store", "llm", "embed"}, llm="offline", graph_backend="neo4j", neo4j_uri=uri,
                            neo4j_password="x", graph_query_timeout=2.0, database_url=postgres_url,
                            graph_name=unique_name)
    async with httpx.AsyncClient(headers=HEADERS, trust_env=False, timeout=60.0) as http:
        resp = await http.post(f"{store.url}/v1/stats", json={})
        assert resp.status_code == 503, resp.text
        error = resp.json()["error"]
        assert error["code"] == "unavailable" and f"graph unavailable: neo4j at {uri}" in error["message"], error
        status, body = await _health(http, store.url)
        assert status == 503 and body["status"] == "failing", body
        assert "neo4j at" in body["checks"]["store"]["error"]


async def test_anonymous_health_requests_share_one_round_trip_per_interval(
    make_node: NodeFactory, postgres_url: str, unique_name: str, test_data_dir: Path
) -> None:
    """An unauthenticated caller cannot make the node query its databases at will: concurrent and
    repeated ``/health`` requests within ``health_cache_ttl`` share one round trip per database."""
    ttl = 30.0  # longer than the requests below can take, however loaded the machine
    store = await make_node({"store", "llm", "embed"}, data_dir=test_data_dir / unique_name, llm="offline",
                            database_url=postgres_url, graph_name=unique_name, health_cache_ttl=ttl)
    async with httpx.AsyncClient(trust_env=False, timeout=OPEN_WITHIN) as http:
        # Opened by a call, not by /health: a check made while it opens would answer 'degraded' for the ttl.
        assert (await http.post(f"{store.url}/v1/stats", json={}, headers=HEADERS)).status_code == 200
        service: Any = store.providers.ready("store")
        checks = 0
        real_health = service.health

        async def counted_health(timeout: float) -> dict[str, dict[str, Any]]:
            nonlocal checks
            checks += 1
            return await real_health(timeout)

        service.health = counted_health
        started = time.monotonic()
        answers = await asyncio.gather(*(_health(http, store.url) for _ in range(40)))
        answers += [await _health(http, store.url) for _ in range(20)]
        assert time.monotonic() - started < ttl, "the requests outlasted the interval; the count means nothing"
        assert {(status, body["status"]) for status, body in answers} == {(200, "ok")}
        assert checks <= 1, f"{checks} round trips for 60 requests within {ttl}s"
