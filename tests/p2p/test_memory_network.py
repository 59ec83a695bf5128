"""The in-memory network: real nodes over queues behave, at the seam, as over sockets."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from netsupport import InMemoryStore, eventually, node_factory, sees_all
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mnemonet.p2p.memory_network import MemoryLink, MemoryNetwork

LIMITS = httpx.Limits(max_connections=4)


async def test_nodes_join_link_call_and_a_killed_node_is_unreachable() -> None:
    net = MemoryNetwork()
    store = InMemoryStore()
    async with node_factory(net) as make:
        server = await make({"store"}, providers={"store": store})
        caller = await make({"cli"}, seed=server)
        await eventually(lambda: sees_all([server, caller]) and server.node_id in caller.transport.neighbours(),
                         5.0, "joined and linked")
        link = caller.transport.link_to(server.node_id)
        assert isinstance(link, MemoryLink)
        assert (await caller.client.observe("over queues")).created and store.calls == ["observe"]

        await server.kill()
        await eventually(lambda: caller.transport.link_to(server.node_id) is None, 5.0, "the link closed")
        async with net.http_client(timeout=httpx.Timeout(1.0), limits=LIMITS) as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(f"{server.url}/health")
        with pytest.raises(ConnectionError):
            await net.dial(server.node_id, server.url.replace("http", "ws") + "/v1/peer", timeout=1.0,
                           max_bytes=1024)


def hanging_route(arrived: asyncio.Event) -> Route:
    """``/hang``: sets ``arrived`` and never answers."""

    async def hang(request: Request) -> PlainTextResponse:
        arrived.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return Route("/hang", hang)


async def test_a_slow_answer_times_out_and_a_kill_drops_the_request_in_flight() -> None:
    net = MemoryNetwork()
    arrived = asyncio.Event()

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    server = net.server(Starlette(routes=[hanging_route(arrived), Route("/hello", hello)]), "127.0.0.1", 0,
                        ws_max_bytes=1024, graceful_timeout=1.0, idle_timeout=1.0, header_timeout=1.0)
    port = await server.start()
    async with net.http_client(timeout=httpx.Timeout(0.2), limits=LIMITS) as http:
        assert (await http.get(f"http://127.0.0.1:{port}/hello")).text == "hello"
        with pytest.raises(httpx.ReadTimeout):
            await http.get(f"http://127.0.0.1:{port}/hang")
        arrived.clear()
        call = asyncio.create_task(http.get(f"http://127.0.0.1:{port}/hang", timeout=30.0))
        await asyncio.wait_for(arrived.wait(), 5.0)
        await server.stop(force=True)
        with pytest.raises(httpx.ReadError):
            await call


async def test_a_graceful_stop_waits_for_a_hung_request_only_as_long_as_the_http_server_would() -> None:
    net = MemoryNetwork()
    arrived = asyncio.Event()
    server = net.server(Starlette(routes=[hanging_route(arrived)]), "127.0.0.1", 0, ws_max_bytes=1024,
                        graceful_timeout=0.2, idle_timeout=1.0, header_timeout=1.0)
    port = await server.start()
    async with net.http_client(timeout=httpx.Timeout(30.0), limits=LIMITS) as http:
        call = asyncio.create_task(http.get(f"http://127.0.0.1:{port}/hang"))
        await asyncio.wait_for(arrived.wait(), 5.0)
        # Before, this waited for the request for ever; now past the grace the request is cancelled.
        await asyncio.wait_for(server.stop(), 10.0)
        with pytest.raises(httpx.ReadError):
            await call
