"""Back-pressure: per-peer and per-client in-flight caps, token-bucket rate limits, and rooms to wait for.

A client of a saturated node is answered "busy, retry after N seconds" at
once (``Busy``: HTTP 503 with ``Retry-After``) instead of queueing without
bound. Between peers the sender waits instead (``Room``): each link carries at
most ``max_inflight_per_link`` unanswered requests, so what waits is bounded
by the senders' windows, and work is slowed down, never refused for being
fast; only a wait past ``link_room_timeout`` fails, as ``busy``, which the
router takes as "try another peer".
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mnemonet.model.errors import InvalidInput
from mnemonet.p2p.errors import Busy


class TokenBucket:
    """``rate`` tokens per second up to ``burst``; one request takes one token."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._stamp = now

    def take(self, now: float) -> float:
        """0.0 if a token was taken, else the seconds until one will be there."""
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate


@dataclass
class _KeyState:
    in_flight: int
    bucket: TokenBucket | None


class KeyedLimiter:
    """In-flight cap and rate limit per key (a peer id or a client address), for a bounded number of keys."""

    def __init__(
        self, what: str, *, max_in_flight: int, rate: float, burst: int, max_keys: int, retry_after: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._what = what
        self._max_in_flight = max_in_flight
        self._rate = rate
        self._burst = burst
        self._max_keys = max_keys
        self._retry_after = retry_after
        self._clock = clock
        self._keys: OrderedDict[str, _KeyState] = OrderedDict()

    def acquire(self, key: str) -> None:
        """Take an in-flight slot and a token for ``key``, or raise ``Busy`` saying when to retry."""
        state = self._state(key)
        if state.in_flight >= self._max_in_flight:
            raise Busy(f"{self._what} {key} has {state.in_flight} requests in flight (limit {self._max_in_flight})",
                       self._retry_after)
        if state.bucket is not None:
            wait = state.bucket.take(self._clock())
            if wait > 0:
                raise Busy(f"{self._what} {key} exceeds {self._rate:g} requests/s", wait)
        state.in_flight += 1

    def release(self, key: str) -> None:
        """Give back the slot ``acquire`` took."""
        state = self._keys.get(key)
        if state is not None:
            state.in_flight = max(0, state.in_flight - 1)

    @contextmanager
    def slot(self, key: str) -> Iterator[None]:
        """``acquire`` on entry, ``release`` on exit."""
        self.acquire(key)
        try:
            yield
        finally:
            self.release(key)

    def in_flight(self, key: str) -> int:
        """Requests of ``key`` in flight now."""
        state = self._keys.get(key)
        return state.in_flight if state is not None else 0

    def _state(self, key: str) -> _KeyState:
        state = self._keys.get(key)
        if state is not None:
            self._keys.move_to_end(key)
            return state
        if len(self._keys) >= self._max_keys and not self._evict_idle():
            # Every tracked key has work in flight: a new one would grow the map without bound.
            raise Busy(f"tracking {len(self._keys)} busy {self._what}s already", self._retry_after)
        bucket = TokenBucket(self._rate, self._burst, self._clock()) if self._rate > 0 else None
        state = self._keys[key] = _KeyState(0, bucket)
        return state

    def _evict_idle(self) -> bool:
        for key, state in self._keys.items():  # least recently seen first
            if state.in_flight == 0:
                del self._keys[key]
                return True
        return False


def check_batches(method: str, kwargs: dict[str, Any], max_items: int) -> None:
    """``ValueError`` when a list argument carries more than ``max_items`` items."""
    for name, value in kwargs.items():
        if isinstance(value, list | tuple) and len(value) > max_items:
            raise InvalidInput(f"{method}: argument {name!r} carries {len(value)} items (limit {max_items})")


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` takes whole seconds; round up so a client never comes back too early."""
    return str(max(1, math.ceil(seconds)))


class ReadBudget:
    """How many request bodies are read before they are authenticated, and how many bytes they hold together.

    A peer envelope is authenticated by a tag over its whole body, so the
    body must be read first. Unbounded, 60 unfinished 8 MiB uploads once took
    a store from 173 MB to 638 MB; with this budget a node holds at most
    ``max_bytes`` of unauthenticated data, and a read beyond ``max_reads`` or
    the byte budget is refused ``busy`` before (or as soon as) it would pass.
    """

    def __init__(self, *, max_reads: int, max_bytes: int, retry_after: float) -> None:
        self._max_reads = max_reads
        self._max_bytes = max_bytes
        self._retry_after = retry_after
        self.reads = 0
        self.held = 0

    @contextmanager
    def read(self) -> Iterator[Callable[[int], None]]:
        """A read slot; the yielded ``charge(n)`` books ``n`` more bytes or raises ``Busy``. All freed on exit."""
        if self.reads >= self._max_reads:
            raise Busy(f"{self.reads} unauthenticated request bodies are being read (limit {self._max_reads})",
                       self._retry_after)
        self.reads += 1
        booked = 0

        def charge(n: int) -> None:
            nonlocal booked
            if self.held + n > self._max_bytes:
                raise Busy(f"unauthenticated request bodies hold {self.held} bytes (limit {self._max_bytes})",
                           self._retry_after)
            self.held += n
            booked += n

        try:
            yield charge
        finally:
            self.reads -= 1
            self.held -= booked


class RoomClosed(Exception):
    """The room was closed (its link is gone) while a caller waited for a place."""


class Room:
    """At most ``size`` holders at once; others wait for a place in arrival order.

    ``leave`` hands a freed place straight to the longest waiter, so a newcomer
    cannot overtake someone who waited. A waiter that gives up (its timeout, a
    cancel) takes nothing; one given a place just as it gave up passes it on.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.used = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    @property
    def waiting(self) -> int:
        """Callers waiting for a place now."""
        return sum(1 for w in self._waiters if not w.done())

    def try_enter(self) -> bool:
        """Take a place if one is free and nobody waits for it; never waits."""
        if self._closed or self.used >= self.size or self.waiting:
            return False
        self.used += 1
        return True

    async def enter(self, timeout: float) -> None:
        """Take a place, waiting up to ``timeout`` seconds; ``TimeoutError`` past it, ``RoomClosed`` if closed."""
        if self._closed:
            raise RoomClosed
        if self.try_enter():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.leave()  # a place was handed over as the wait ended: give it to the next one
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def leave(self) -> None:
        """Give a place back: to the longest waiter, else free."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the place goes over as it is: ``used`` stays
                return
        self.used = max(0, self.used - 1)

    def close(self) -> None:
        """Fail every waiter with ``RoomClosed``; later ``enter`` calls fail at once."""
        self._closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(RoomClosed())


class Window:
    """The requests a sender has unanswered on one link: at most ``size``, each holding its place until its
    reply arrives (a late one included: the peer serves it all the same), or until the link closes."""

    def __init__(self, size: int) -> None:
        self._room = Room(size)
        self._held: set[str] = set()

    @property
    def size(self) -> int:
        """Most requests unanswered at once."""
        return self._room.size

    async def take(self, request_id: str, timeout: float) -> None:
        """A place for ``request_id``, waiting up to ``timeout``; ``TimeoutError`` past it, ``RoomClosed`` if the
        link closed."""
        await self._room.enter(timeout)
        self._held.add(request_id)

    def give_back(self, request_id: str) -> None:
        """``request_id`` was answered (or never sent): its place goes to the next request."""
        if request_id in self._held:
            self._held.discard(request_id)
            self._room.leave()

    def close(self) -> None:
        """The link closed: waiters fail with ``RoomClosed``."""
        self._room.close()
        self._held.clear()
