"""Lifeguard's local health awareness: a node that is itself slow waits longer before blaming others.

A score from 0 (healthy) to ``max_score - 1``: raised when a probe of ours
gets no ack and the helpers we asked do not even answer (the trouble is more
likely here than there), when we had to refute a suspicion of ourselves, and
when our own event loop stalled; lowered by every direct ack. The probe
interval and the probe timeout are multiplied by ``score + 1``, so a node
busy with CPU-heavy work probes less often and waits longer instead of
raising suspicions it cannot back up. (HashiCorp memberlist's
``awareness``; see Lifeguard, Dadgar et al. 2018.)
"""

from __future__ import annotations


class Awareness:
    """The local health score; ``max_score`` 1 turns it off (the scale stays 1)."""

    def __init__(self, max_score: int) -> None:
        if max_score < 1:
            raise ValueError("max_score must be >= 1")
        self.max_score = max_score
        self.score = 0

    def apply(self, delta: int) -> None:
        """Add ``delta``, kept within ``0 .. max_score - 1``."""
        self.score = min(max(self.score + delta, 0), self.max_score - 1)

    def scale(self, timeout: float) -> float:
        """``timeout`` stretched by the current score."""
        return timeout * (self.score + 1)
