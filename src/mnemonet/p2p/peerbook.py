"""The peers a node keeps re-contacting so its membership heals itself: seeds and remembered peers.

A node that lost sight of a seed, or of a peer it knew, cannot count on that
peer finding it again: a restarted store (a new process, often a new node id)
knows nobody, and the workers that still see each other would never call it.
So each target URL is tried again, with capped exponential backoff and
jitter, whenever no alive member answers at it. Remembered peers are the
addresses of members seen alive, written atomically to a small JSON file in
the data directory, so a restarted node reaches its old peers at once even
when it has no seed of its own. No networking here: ``Cluster`` does the
contacting and reports back.
"""

from __future__ import annotations

import json
import logging
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mnemonet.p2p.membership import Member, MemberState

log = logging.getLogger(__name__)

_FILE_VERSION = 1


@dataclass(frozen=True)
class RejoinConfig:
    """Backoff and memory of the re-contacting (mapped from ``Settings``).

    backoff_initial, backoff_max: first and longest wait between two tries
        of one target that did not answer; the wait doubles in between.
    jitter: each wait is stretched by a random fraction up to this, so the
        nodes of a cluster do not all call a restarted seed in one burst.
    max_remembered: most remembered peers kept (the most recently seen).
    remembered_ttl: seconds after which a peer not seen alive is forgotten.
    max_url_chars: longest URL accepted from the file.
    """

    backoff_initial: float = 0.5
    backoff_max: float = 4.0
    jitter: float = 0.2
    max_remembered: int = 64
    remembered_ttl: float = 86_400.0
    max_url_chars: int = 2048

    def __post_init__(self) -> None:
        if not 0 < self.backoff_initial <= self.backoff_max:
            raise ValueError("need 0 < backoff_initial <= backoff_max")
        if not 0 <= self.jitter <= 1 or self.max_remembered < 0 or self.remembered_ttl <= 0:
            raise ValueError("need 0 <= jitter <= 1, max_remembered >= 0 and remembered_ttl > 0")

    def retry_bound(self) -> float:
        """Longest pause between two tries of one target."""
        return self.backoff_max * (1 + self.jitter)


@dataclass
class _Target:
    url: str
    seed: bool
    seen: float = 0.0  # wall-clock time last seen alive (survives restarts in the file)
    node_id: str | None = None  # who answered at this URL last
    delay: float = 0.0  # the next wait after a failure; 0 = not failing
    next_try: float = 0.0  # monotonic time before which it is not tried again
    is_self: bool = field(default=False)


def _valid_url(url: object, max_chars: int) -> bool:
    if not isinstance(url, str) or not 0 < len(url) <= max_chars or not url.isprintable() or " " in url:
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class PeerBook:
    """Which seeds and remembered peers are due to be contacted, and their backoff."""

    def __init__(
        self,
        seeds: Iterable[str],
        path: Path | None,
        config: RejoinConfig,
        clock: Callable[[], float],
        rng: random.Random,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.path = path
        self._clock = clock
        self._wall = wall_clock
        self._rng = rng
        self._targets: dict[str, _Target] = {}
        for url in seeds:
            self._targets[url.rstrip("/")] = _Target(url.rstrip("/"), seed=True)
        self._saved: frozenset[str] = frozenset()
        if path is not None:
            self._load(path)

    @property
    def seeds(self) -> list[str]:
        """The seed URLs, in the order given."""
        return [t.url for t in self._targets.values() if t.seed]

    def remembered(self) -> list[str]:
        """The remembered (non-seed) peer URLs."""
        return [t.url for t in self._targets.values() if not t.seed]

    # -- the file --------------------------------------------------------

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable peer file %s: %s", path, exc)
            return
        peers = data.get("peers") if isinstance(data, dict) else None
        if not isinstance(peers, list):
            log.warning("ignoring peer file %s: no list of peers", path)
            return
        now = self._wall()
        for entry in peers[: self.config.max_remembered]:
            url, seen = (entry.get("url"), entry.get("seen")) if isinstance(entry, dict) else (None, None)
            if not _valid_url(url, self.config.max_url_chars) or type(seen) not in (int, float):
                log.warning("ignoring a malformed entry of peer file %s", path)
                continue
            assert isinstance(url, str) and isinstance(seen, (int, float))
            if now - seen > self.config.remembered_ttl:
                continue
            url = url.rstrip("/")
            target = self._targets.setdefault(url, _Target(url, seed=False))
            target.seen = max(target.seen, float(seen))
        self._saved = frozenset(self.remembered())
        log.info("remembered %d peers from %s", len(self._saved), path)

    def pending_save(self) -> dict[str, Any] | None:
        """The file's new content when the remembered set changed since the last save, else None."""
        if self.path is None or frozenset(self.remembered()) == self._saved:
            return None
        peers = sorted((t for t in self._targets.values() if not t.seed), key=lambda t: -t.seen)
        return {"version": _FILE_VERSION, "peers": [{"url": t.url, "seen": t.seen} for t in peers]}

    def save(self, content: dict[str, Any]) -> None:
        """Write ``content`` atomically (a temporary file renamed over the old one); blocking.

        A failed write is not retried until the remembered set changes again,
        so an unwritable data directory costs one warning per change.
        """
        assert self.path is not None
        self._saved = frozenset(p["url"] for p in content["peers"])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".peers-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(content, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- what is due -----------------------------------------------------

    def observe(self, members: Iterable[Member], local_id: str) -> None:
        """Remember the addresses of the members alive now; forget peers unseen for too long or gone for good.

        A member that left said goodbye (scaled down, stopped): calling it is
        pointless, and if it comes back it calls the peers it remembers.
        """
        now = self._wall()
        for member in members:
            if member.node_id == local_id:
                continue
            if member.state is MemberState.LEFT:
                gone = self._targets.get(member.url)
                if gone is not None and not gone.seed and gone.node_id == member.node_id:
                    del self._targets[member.url]
                continue
            if member.state is not MemberState.ALIVE:
                continue
            target = self._targets.get(member.url)
            if target is None:
                target = self._targets[member.url] = _Target(member.url, seed=False)
            target.seen = now
            target.node_id = member.node_id
        stale = [u for u, t in self._targets.items()
                 if not t.seed and (t.is_self or now - t.seen > self.config.remembered_ttl)]
        peers = sorted((t for t in self._targets.values() if not t.seed and t.url not in stale), key=lambda t: -t.seen)
        stale += [t.url for t in peers[self.config.max_remembered:]]
        for url in stale:
            del self._targets[url]

    def due(self, members: Iterable[Member]) -> list[str]:
        """Target URLs at which no alive member answers and whose backoff has run out."""
        alive_ids: set[str] = set()
        alive_urls: set[str] = set()
        for m in members:
            if m.state is MemberState.ALIVE:  # a suspect may be the dead process of a restarted one
                alive_ids.add(m.node_id)
                alive_urls.add(m.url)
        now = self._clock()
        return [
            t.url for t in self._targets.values()
            if not t.is_self and now >= t.next_try
            and t.url not in alive_urls and (t.node_id is None or t.node_id not in alive_ids)
        ]

    def answered(self, url: str, node_id: str, local_id: str) -> None:
        """``node_id`` welcomed us at ``url``: reset its backoff (our own URL is never tried again)."""
        target = self._targets.get(url)
        if target is None:
            return
        target.node_id = node_id
        target.delay = 0.0
        # Even a welcome is not retried at once: if the peer still does not show
        # as alive (it is leaving, say), the next try waits a first backoff.
        target.next_try = self._clock() + self.config.backoff_initial
        if node_id == local_id:
            target.is_self = True

    def backoff(self, url: str) -> float:
        """The wait ``url`` is at after its failed tries (0 while it answers, or when it is no target)."""
        target = self._targets.get(url)
        return 0.0 if target is None else target.delay

    def failed(self, url: str) -> float:
        """No welcome from ``url``: back off (doubling, capped, with jitter); returns the wait."""
        target = self._targets.get(url)
        if target is None:
            return 0.0
        cfg = self.config
        target.delay = cfg.backoff_initial if target.delay == 0 else min(target.delay * 2, cfg.backoff_max)
        wait = target.delay * (1 + self._rng.uniform(0, cfg.jitter))
        target.next_try = self._clock() + wait
        return wait
