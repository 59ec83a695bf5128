"""A forced stop (a node's kill) ends the requests it finds in flight, as a crash would.

uvicorn's forced exit leaves request tasks pending. Dropped with their server, they were later
destroyed by the garbage collector in the middle of another test ("Task was destroyed but it is
pending!"), where no ``finally`` of theirs could release what it held (a pooled connection, a lock).
"""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mnemonet.p2p.network import SocketNetwork


async def test_a_forced_stop_cancels_the_requests_in_flight_and_their_cleanup_runs() -> None:
    arrived, released = asyncio.Event(), asyncio.Event()

    async def hang(request: Request) -> PlainTextResponse:
        arrived.set()
        try:
            await asyncio.Event().wait()
        finally:
            released.set()  # what a handler holding a pooled connection does on its way out
        raise AssertionError("unreachable")

    server = SocketNetwork().server(Starlette(routes=[Route("/hang", hang)]), "127.0.0.1", 0, ws_max_bytes=1024,
                                    graceful_timeout=5.0, idle_timeout=5.0, header_timeout=5.0)
    port = await server.start()
    async with httpx.AsyncClient(timeout=30.0) as http:
        call = asyncio.create_task(http.get(f"http://127.0.0.1:{port}/hang"))
        await asyncio.wait_for(arrived.wait(), 10.0)
        await server.stop(force=True)
        assert released.is_set(), "the request was left pending by the forced stop"
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
