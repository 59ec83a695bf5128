"""A neighbour link whose peer stops reading is dropped instead of blocking its senders forever."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from websockets.asyncio.server import ServerConnection, serve

from mnemonet.p2p import handshake
from mnemonet.p2p.envelope import Codec, Envelope, Kind
from mnemonet.p2p.links import DialledLink, Link, LinkClosed
from mnemonet.p2p.membership import Member, MemberState
from mnemonet.p2p.transport import PeerTimeout, Transport
from mnemonet.settings import Settings

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


async def test_a_call_on_a_stuck_link_times_out_within_its_own_timeout() -> None:
    # The caller's timeout bounds the send too, and so short a budget does not drop the link.
    key = "k" * 32

    async def never_reads(conn: ServerConnection) -> None:
        # Answers the link handshake (so the transport links at all), then never reads again.
        hello = json.loads(await conn.recv())
        nonce = handshake.new_nonce()
        await conn.send(json.dumps({"node_id": "peer", "nonce": nonce, "proof": handshake.proof(
            key.encode(), "accept", hello["nonce"], nonce, hello["node_id"], "peer")}))
        await conn.recv()  # the dialler's proof
        await conn.wait_closed()

    settings = Settings(link_send_timeout=2.0)
    codec = Codec(key, max_bytes=1 << 22, max_age=30.0, replay_entries=100)
    transport = Transport("caller", codec, settings, handler=lambda _env, _linked: asyncio.sleep(0))
    await transport.start()
    try:
        async with serve(never_reads, "127.0.0.1", 0, max_size=None, close_timeout=0.5) as server:
            port = server.sockets[0].getsockname()[1]
            peer = Member("peer", f"http://127.0.0.1:{port}", frozenset({"store"}), 0, MemberState.ALIVE, 0.0)
            link = await transport.dial(peer)
            filling = asyncio.create_task(_fill(link))  # holds the send lock once the buffers are full
            await asyncio.sleep(0.5)
            assert not filling.done()
            started = time.monotonic()
            with pytest.raises(PeerTimeout):
                await transport.call(peer, Envelope(kind=Kind.PING, sender="caller"), timeout=0.2)
            assert time.monotonic() - started < 1.0  # not the 2 s a send may wait
            assert link.is_open  # a short budget never drops a link by itself
            with pytest.raises(LinkClosed, match="stuck"):
                await filling
            assert not link.is_open
    finally:
        await transport.close()


async def _fill(link: Link) -> None:
    while True:
        await link.send(MESSAGE, 2.0)
