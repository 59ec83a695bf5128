"""FalkorDB read replicas: reads for search and answers on replicas, writes on the primary, no stale read.

The replicas follow the primary with Redis replication as shipped
(``REPLICAOF``), which is asynchronous: a replica applies a write a moment
after the primary acknowledged it. So a write is acknowledged only once
every replica has applied it (``confirm``: the primary's replication offset
after the write, then each replica's processed offset, ``slave_repl_offset``,
polled until it reaches it, at most ``falkordb_replica_wait``), and a read
on a replica then sees every acknowledged write. A replica that does not
confirm in time (lagging, cut off, down) is not lost data (the write is
durable on the primary): the write is acknowledged anyway, ``graph.replica_lag``
is logged, and reads go to the primary until the replicas confirm a write again.

Why offsets and not Redis ``WAIT``: ``WAIT`` waits for the writes of the
connection it is sent on, and the client's writes go over a pool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


def parse_addresses(value: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` as pairs; ``ValueError`` naming what is wrong."""
    out = []
    for part in filter(None, (p.strip() for p in value.split(","))):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"falkordb_replicas: {part!r} is not host:port")
        out.append((host, int(port)))
    return out


class Replicas:
    """The read replicas of one FalkorDB primary, shared by the drivers of every graph on it."""

    def __init__(self, addresses: Sequence[tuple[str, int]], password: str | None, wait: float, poll: float,
                 timeout: float = 30.0) -> None:
        self.addresses = list(addresses)
        # A read on a replica ends within ``timeout`` (graph_query_timeout), whatever the replica does; plain
        # clients, since the library's ``FalkorDB`` blocks the event loop on an INFO when built.
        self.clients = [aioredis.Redis(host=host, port=port, password=password, decode_responses=True,
                                       socket_timeout=timeout, socket_connect_timeout=timeout)
                        for host, port in self.addresses]
        self._wait = wait
        self._poll = poll
        self._next = 0
        self.in_step = True  # every acknowledged write is applied on every replica: reads may go there
        self.lagged = 0  # writes the replicas did not confirm in time

    def order(self) -> list[tuple[str, aioredis.Redis]]:
        """The replicas to try for a read, a different one first each time (``where``, client)."""
        start, self._next = self._next, (self._next + 1) % len(self.clients)
        ring = list(zip(self.addresses, self.clients, strict=True))
        ring = ring[start:] + ring[:start]
        return [(f"falkordb replica at {host}:{port}", client) for (host, port), client in ring]

    async def confirm(self, primary: aioredis.Redis) -> bool:
        """Wait until every replica applied what the primary holds now; True if they did in time.

        The whole wait is bounded, not only the polling: a replica that accepts connections and never
        answers (a hung process) must not hold a write's acknowledgement.
        """
        try:
            async with asyncio.timeout(self._wait):
                target = int((await primary.info("replication"))["master_repl_offset"])
                for client in self.clients:
                    # An offset on another server: polled, since nothing here can signal it.
                    while int((await client.info("replication")).get("slave_repl_offset", -1)) < target:  # noqa: ASYNC110
                        await asyncio.sleep(self._poll)
        except (RedisError, OSError, TimeoutError, KeyError, ValueError) as exc:
            self.lagged += 1
            if self.in_step:
                why = str(exc) or f"no confirmation within {self._wait:g}s"
                log.warning("graph.replica_lag reads go to the primary until the replicas confirm a write: %s", why)
            self.in_step = False
            return False
        if not self.in_step:
            log.info("graph.replica_lag over: the replicas confirm writes again; reads go to them")
        self.in_step = True
        return True

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
