"""``WriteGate``: the writes of one memory space, and the erasures that exclude them.

An erasure must find every write it erases whole and must not cut into one it
leaves: an observe is several steps (the observation, its extraction, their
index rows), and one under way when ``forget(source=X)`` read what X wrote
finished after the erase (issue 31, row 3: 21 erased observations back in
search, their text in PostgreSQL's WAL). So every write passes the gate as
the source it writes as, and as a *derived* write when it rests on others'
items (a worker's claims, summary or link, a claim's basis, a retraction);
an erasure closes the gate to the writes it concerns (``forget``: the erased
items' source and every derived write; ``clear`` and a whole space: every
write), waits for those under way to finish, and opens it again when it is
done. Other sources' own writes go on. A write takes all its keys at once,
so it never holds one while it waits for another.

Waits are bounded. A write that meets a closed gate waits for the erasure to
finish, at most ``forget_write_wait``, then is refused ``Busy`` (503, try
again); an erasure waits for the writes under way at most
``forget_drain_wait``, then is refused ``Busy`` itself, having erased
nothing. A space erased whole retires its gate: a write still holding that
space's memory is refused ``NotFound``, never written into a dropped graph.

State changes are synchronous and wake every waiter through an event
replaced at each change, so a cancelled write can never leave a count
behind.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager

from mnemonet.model.errors import Busy, NotFound

# The key of derived writes (a source's name is never None).
DERIVED = None


class WriteGate:
    """Counts the writes under way by key (a source's name, or ``DERIVED``) and lets erasures exclude them."""

    def __init__(self) -> None:
        self._writing: Counter[str | None] = Counter()
        self._closed: Counter[str | None] = Counter()  # erasures under way, per source they exclude
        self._closed_to_all = 0  # erasures under way that exclude every write
        self._retired: str | None = None
        self._changed = asyncio.Event()

    @asynccontextmanager
    async def writing(self, keys: Collection[str | None], wait: float) -> AsyncIterator[None]:
        """Hold the gate under ``keys`` while a write runs; waits out an erasure of any of them."""
        if self._shut(keys) and not await self._until(lambda: not self._shut(keys), wait):
            raise Busy(f"an erasure of what this write rests on is under way, still after {wait:g}s "
                       "(setting forget_write_wait); try again")
        if self._retired is not None:
            raise NotFound(self._retired)
        self._writing.update(keys)
        try:
            yield
        finally:
            self._writing.subtract(keys)
            self._wake()

    @asynccontextmanager
    async def excluding(self, sources: Collection[str] | None, wait: float) -> AsyncIterator[None]:
        """Close the gate to the writes of ``sources`` and to derived writes (``None``: to every write),
        wait for those under way to finish, and open it again on leaving."""
        keys: set[str | None] | None = None if sources is None else {*sources, DERIVED}
        if keys is None:
            self._closed_to_all += 1
        else:
            self._closed.update(keys)
        self._wake()
        try:
            if not await self._until(lambda: not self._under_way(keys), wait):
                raise Busy(f"erasure: writes of what it erases still under way after {wait:g}s "
                           "(setting forget_drain_wait); nothing was erased, try again")
            yield
        finally:
            if keys is None:
                self._closed_to_all -= 1
            else:
                self._closed.subtract(keys)
            self._wake()

    def retire(self, reason: str) -> None:
        """Refuse every write from now on with ``NotFound(reason)`` (its space is being erased whole)."""
        self._retired = reason
        self._wake()

    def _shut(self, keys: Collection[str | None]) -> bool:
        return self._retired is None and (self._closed_to_all > 0 or any(self._closed[k] > 0 for k in keys))

    def _under_way(self, keys: set[str | None] | None) -> bool:
        if keys is None:
            return any(n > 0 for n in self._writing.values())
        return any(self._writing[k] > 0 for k in keys)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _until(self, ready: Callable[[], bool], wait: float) -> bool:
        """Whether ``ready()`` became true within ``wait`` seconds."""
        try:
            async with asyncio.timeout(wait):
                while not ready():
                    await self._changed.wait()
        except TimeoutError:
            return False
        return True
