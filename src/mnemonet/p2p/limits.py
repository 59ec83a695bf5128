"""Back-pressure: per-peer and per-client in-flight caps and token-bucket rate limits.

A node that is saturated answers "busy, retry after N seconds" at once
(``Busy``: RPC error code ``busy``, HTTP 503 with ``Retry-After``) instead of
queueing without bound; the router takes ``busy`` as "try another peer".
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
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
