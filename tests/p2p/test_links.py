"""A neighbour link whose peer stops reading is dropped instead of blocking its senders forever."""

from __future__ import annotations

import asyncio
import time

import pytest
from websockets.asyncio.server import ServerConnection, serve

from mnemonet.p2p.links import DialledLink, LinkClosed

SEND_TIMEOUT = 0.5
MESSAGE = b"x" * (1 << 20)


async def test_send_to_a_peer_that_stops_reading_fails_within_the_timeout() -> None:
    async def never_reads(conn: ServerConnection) -> None:
        await conn.wait_closed()  # accepted, then never reads: its queue and the socket buffers fill up

    async with serve(never_reads, "127.0.0.1", 0, max_size=None, close_timeout=0.5) as server:
        port = server.sockets[0].getsockname()[1]
        link = await DialledLink.open("peer", f"ws://127.0.0.1:{port}/", timeout=3.0, max_bytes=1 << 21)
        reader = asyncio.create_task(link.run(lambda _link, _data: asyncio.sleep(0)))
        sent = 0
        started = time.monotonic()
        with pytest.raises(LinkClosed, match="stuck"):
            while sent < 1000:  # far more than the server's queue and the socket buffers hold
                await link.send(MESSAGE, SEND_TIMEOUT)
                sent += 1
        assert time.monotonic() - started < 30.0
        assert sent > 0 and not link.is_open
        with pytest.raises(LinkClosed, match="closed"):
            await link.send(b"after", SEND_TIMEOUT)  # fails at once, never waits on the dead socket
        done, _ = await asyncio.wait([reader], timeout=5.0)
        assert done == {reader}  # the reader is stopped with the dropped connection
