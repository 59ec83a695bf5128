"""Refusal logging that a flood cannot turn into a log flood.

A refused envelope, link or token is worth one warning: it names a broken or
hostile caller. A caller sending thousands of bad tags or tokens a second
would otherwise write thousands of lines, fill the disk and bury everything
else. So per source (an address or a peer id) the first refusal is logged,
later ones within ``interval`` seconds are only counted, and one summary line
("N more refused from X in the last Ts") follows when the interval ends. The
table of sources is bounded; past ``max_sources`` the rest share one entry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

OTHERS = "other sources"


@dataclass
class _Window:
    started: float
    suppressed: int = 0
    last: str = ""
    timer: asyncio.TimerHandle | None = None


class RefusalLog:
    """Logs the first refusal per source, then one summary per ``interval`` of what it left out."""

    def __init__(self, logger: logging.Logger, interval: float, max_sources: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._interval = interval
        self._max_sources = max_sources
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def refused(self, source: str, what: str) -> None:
        """One refusal from ``source``; ``what`` says what was refused and why (one line)."""
        now = self._clock()
        self.flush(now)
        if source not in self._windows and len(self._windows) >= self._max_sources:
            source = OTHERS
        window = self._windows.get(source)
        if window is None:
            self._windows[source] = _Window(started=now)
            self._log.warning("refused %s from %s", what, source)
            return
        window.suppressed += 1
        window.last = what
        if window.timer is None:
            window.timer = _call_later(self._interval - (now - window.started), lambda: self._end(source))

    def flush(self, now: float | None = None) -> None:
        """Write the summary of every window that has ended; forget the quiet ones."""
        now = self._clock() if now is None else now
        for source, window in list(self._windows.items()):
            if now - window.started >= self._interval:
                self._end(source, now)

    def close(self) -> None:
        """Summarise what is still counted (at stop), so no refusal goes unmentioned."""
        now = self._clock()
        for source in list(self._windows):
            self._end(source, now)

    def _end(self, source: str, now: float | None = None) -> None:
        window = self._windows.pop(source, None)
        if window is None:
            return
        if window.timer is not None:
            window.timer.cancel()
        if window.suppressed:
            elapsed = (self._clock() if now is None else now) - window.started
            self._log.warning("refused %d more from %s in the last %.1fs (the last: %s)",
                              window.suppressed, source, elapsed, window.last)


def _call_later(delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle | None:
    # Inside a node a timer writes the summary when the window ends even if the flood stopped;
    # without a running loop (unit tests on a fake clock) ``flush`` is called by hand.
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(max(0.0, delay), callback)
