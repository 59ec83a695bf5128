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
import time
from collections.abc import Sequence

import redis.asyncio as aioredis
from falkordb.asyncio import FalkorDB
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

    def __init__(self, addresses: Sequence[tuple[str, int]], password: str | None, wait: float, poll: float) -> None:
        self.addresses = list(addresses)
        self.dbs = [FalkorDB(host=host, port=port, password=password) for host, port in self.addresses]
        self._wait = wait
        self._poll = poll
        self._next = 0
        self.in_step = True  # every acknowledged write is applied on every replica: reads may go there
        self.lagged = 0  # writes the replicas did not confirm in time

    def order(self) -> list[tuple[str, FalkorDB]]:
        """The replicas to try for a read, a different one first each time (``where``, db)."""
        start, self._next = self._next, (self._next + 1) % len(self.dbs)
        ring = list(zip(self.addresses, self.dbs, strict=True))
        ring = ring[start:] + ring[:start]
        return [(f"falkordb replica at {host}:{port}", db) for (host, port), db in ring]

    async def confirm(self, primary: aioredis.Redis) -> bool:
        """Wait until every replica applied what the primary holds now; True if they did in time."""
        deadline = time.monotonic() + self._wait
        try:
            target = int((await primary.info("replication"))["master_repl_offset"])
            for db in self.dbs:
                while int((await db.connection.info("replication")).get("slave_repl_offset", -1)) < target:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"a replica is behind offset {target}")
                    await asyncio.sleep(self._poll)
        except (RedisError, OSError, TimeoutError, KeyError, ValueError) as exc:
            self.lagged += 1
            if self.in_step:
                log.warning("graph.replica_lag reads go to the primary until the replicas confirm a write: %s", exc)
            self.in_step = False
            return False
        if not self.in_step:
            log.info("graph.replica_lag over: the replicas confirm writes again; reads go to them")
        self.in_step = True
        return True

    async def close(self) -> None:
        for db in self.dbs:
            await db.connection.aclose()
