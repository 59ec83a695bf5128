"""Lifeguard's suspicion timeout: long while one member suspects, shorter with each independent confirmation.

A member suspected by a single peer may just have a slow or lossy link to
that peer (or the peer may be the slow one); a member many peers suspect on
their own has most likely failed. So a suspicion starts at ``max_timeout``
and, as ``n`` of the ``k`` expected confirmations from other suspecters
arrive, shrinks on a log scale to ``min_timeout``:
``max - log(n + 1) / log(k + 1) x (max - min)``, never below ``min``.
With ``k`` < 1 (too few members to expect confirmations) it is ``min`` at
once. (HashiCorp memberlist's ``suspicion``.)
"""

from __future__ import annotations

import math


def suspicion_timeout(confirmations: int, k: int, min_timeout: float, max_timeout: float) -> float:
    """Seconds from the start of a suspicion until the member is declared dead."""
    if k < 1:
        return min_timeout
    n = min(confirmations, k)
    fraction = math.log(n + 1) / math.log(k + 1)
    return max(min_timeout, max_timeout - fraction * (max_timeout - min_timeout))


class Suspicion:
    """One suspicion of one member: who has suspected it, and when it expires."""

    def __init__(self, started: float, by: str | None, k: int) -> None:
        self.started = started
        self.k = k
        self._by: set[str] = {by} if by is not None else set()

    @property
    def confirmations(self) -> int:
        """Independent suspecters beyond the first (capped at ``k`` by ``confirm``)."""
        return max(0, len(self._by) - 1)

    def confirm(self, by: str) -> bool:
        """Count ``by`` as a suspecter; True if it is new and still shortens the timeout."""
        if by in self._by or self.confirmations >= self.k:
            return False
        self._by.add(by)
        return True

    def expires(self, min_timeout: float, max_timeout: float) -> float:
        """The clock time at which the suspect is declared dead."""
        return self.started + suspicion_timeout(self.confirmations, self.k, min_timeout, max_timeout)
