"""Which side of a contradiction stands: the resolution policy the validation worker applies.

Same source: the newer statement of a temporal predicate supersedes the older
one unless it is less confident (a source updating itself).

Different sources: each side weighs ``trust(source) x confidence``
(``source_trust``, default 1.0 for every source).

1. If one side outweighs the other by more than ``resolution_margin``, it
   supersedes the other (a trusted or confident source over a doubtful one).
2. Otherwise, for a temporal predicate, if the two were said more than
   ``resolution_close_seconds`` apart, the newer supersedes the older (a change).
3. Otherwise the conflict stays open (``CONTRADICTS`` only): equal weight, close
   in time; ``remember`` shows both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemonet.model.views import StatementView
from mnemonet.settings import Settings


@dataclass(frozen=True)
class Resolution:
    """``winner`` supersedes ``loser`` for ``reason``; no winner: the conflict stays open."""

    winner: StatementView | None
    loser: StatementView | None
    reason: str


def _weight(s: StatementView, settings: Settings) -> float:
    return settings.source_trust.get(s.source or "", 1.0) * s.confidence


def resolve(new: StatementView, old: StatementView, temporal: bool, settings: Settings) -> Resolution:
    """The policy above for a contradicting pair, ``new`` the later statement."""
    if new.source and new.source == old.source:
        if temporal and new.confidence >= old.confidence:
            return Resolution(new, old, f"newer {new.predicate} from {new.source}")
        return Resolution(None, None, f"{new.source} said both; the newer is less confident")
    w_new, w_old = _weight(new, settings), _weight(old, settings)
    margin = 1.0 + settings.resolution_margin
    if w_new > w_old * margin:
        return Resolution(new, old, _outweighs(new, old, w_new, w_old))
    if w_old > w_new * margin:
        return Resolution(old, new, _outweighs(old, new, w_old, w_new))
    apart = (new.created_at - old.created_at) / 1000
    if temporal and apart > settings.resolution_close_seconds:
        return Resolution(new, old, f"newer {new.predicate} from {new.source}, {apart:.0f}s after {old.source}'s")
    return Resolution(None, None, f"{old.source} and {new.source} disagree with equal weight, {apart:.0f}s apart")


def _outweighs(winner: StatementView, loser: StatementView, w_winner: float, w_loser: float) -> str:
    return f"{winner.source} outweighs {loser.source} (trust x confidence {w_winner:.2f} vs {w_loser:.2f})"
