"""Clients that are slow or gone: slow request heads are cut off (issue 31 row 19), a hang-up mid-body
is one log line (row 20).

Slowloris: 50 connections sending their headers a line at a time were all held for 60 s and more, since
nothing bounded the time to receive a request's head. Now each connection has ``http_header_timeout``
from its start (or from the end of its previous response) to send a whole head.
"""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest
from netsupport import ADMIN_TOKEN, InMemoryStore, NodeFactory, eventually

HEADER_TIMEOUT = 0.5
CONNECTIONS = 50
HELD_AT_MOST = 20.0  # seconds a trickling connection may stay open before the test calls it held


async def _trickle(host: str, port: int, first: bytes = b"") -> float:
    """Send ``first``, then a request head a header line every 0.1 s; seconds until the server closes."""
    reader, writer = await asyncio.open_connection(host, port)
    started = time.monotonic()
    try:
        writer.write(first + b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while time.monotonic() - started < HELD_AT_MOST:
            writer.write(b"X-Slow: 1\r\n")  # the attack: a header line now and then, never the end of the head
            await writer.drain()
            try:
                async with asyncio.timeout(0.1):
                    if await reader.read(65536) == b"":
                        break  # closed by the server
            except TimeoutError:
                continue
        return time.monotonic() - started
    except ConnectionError:
        return time.monotonic() - started
    finally:
        writer.close()


async def test_slow_request_heads_are_cut_off_and_the_node_serves_on(make_node: NodeFactory) -> None:
    node = await make_node({"cli"}, http_header_timeout=HEADER_TIMEOUT)
    host, port = "127.0.0.1", int(node.url.rsplit(":", 1)[1])
    held = await asyncio.gather(*(_trickle(host, port) for _ in range(CONNECTIONS)))
    assert max(held) < HELD_AT_MOST, f"{sum(h >= HELD_AT_MOST for h in held)} of {CONNECTIONS} connections held"
    # On a kept-alive connection the next head has its own deadline, counted from the response.
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.get(f"{node.url}/health")).status_code == 200
    kept_alive = await _trickle(host, port, first=b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert kept_alive < HELD_AT_MOST


async def _hang_up_mid_body(host: str, port: int, path: str) -> None:
    """Send a request head announcing 1,000 bytes of body and 10 of them, then close the connection."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 f"Authorization: Bearer {ADMIN_TOKEN}\r\nContent-Length: 1000\r\n\r\n".encode() + b'{"text": "')
    await writer.drain()
    writer.close()
    await writer.wait_closed()


async def test_a_client_hanging_up_mid_body_costs_one_log_line(
    make_node: NodeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31 row 20: each such client made the node log a 62-line traceback. Now one line, and a flood of
    them one summary per ``refusal_log_interval`` (as refused tokens and envelopes)."""
    node = await make_node({"store"}, providers={"store": InMemoryStore()}, refusal_log_interval=0.5)
    host, port = "127.0.0.1", int(node.url.rsplit(":", 1)[1])
    uvicorn_log = logging.getLogger("uvicorn")  # uvicorn's loggers do not propagate to the root: listen there too
    uvicorn_log.addHandler(caplog.handler)
    caplog.set_level(logging.INFO)

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.levelno >= logging.INFO and r.name.startswith(("mnemonet", "uvicorn"))]

    try:
        await _hang_up_mid_body(host, port, "/v1/observe")
        await _hang_up_mid_body(host, port, "/v1/peer")
        await eventually(lambda: len(lines()) == 2, 10.0, "the hang-up and the summary of the next one")
        async with httpx.AsyncClient(trust_env=False) as http:  # the node serves on
            assert (await http.get(f"{node.url}/health")).status_code == 200
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    first, summary = lines()
    assert "/v1/observe: the client hung up after 10 of 1000 bytes" in first
    assert "1 more" in summary and "/v1/peer: the client hung up after 10 of 1000 bytes" in summary
    assert all("\n" not in line for line in lines()) and all(r.exc_info is None for r in caplog.records)
