"""Which side of a contradiction stands: the resolution policy the validation worker applies.

A statement may carry a revision cue from its text (``revision``):
``correction`` ("sorry", "actually", "correction:", "I meant", "X is wrong")
or ``change`` ("now", "no longer", "anymore"). A cue is the speaker saying the
new value replaces an earlier one, so it decides where the attribute alone
would not (a birthday is not temporal; two agents seconds apart are too close
for recency).

Same source (a source updating itself): the newer statement supersedes the
older one if the predicate is temporal or the newer carries a revision cue,
unless it is less confident. Otherwise (an uncued restatement of a
non-temporal fact, an exclusivity pair such as likes/dislikes) the conflict
stays open.

Different sources: each side weighs ``trust(source) x confidence``
(``source_trust``, default 1.0 for every source).

1. If one side outweighs the other by more than ``resolution_margin``, it
   supersedes the other (a trusted or confident source over a doubtful one).
2. Otherwise, if the newer side carries a revision cue, it supersedes the
   older (another agent correcting or updating what was said).
3. Otherwise, for a temporal predicate, if the two were said more than
   ``resolution_close_seconds`` apart, the newer supersedes the older (a change).
4. Otherwise the conflict stays open (``CONTRADICTS`` only): equal weight,
   close in time, nothing in the text says which replaces which; ``remember``
   shows both sides.
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


def _cued(new: StatementView, old: StatementView) -> str:
    verb = "corrects" if new.revision == "correction" else "reports a change of"
    whose = "its own" if new.source == old.source else f"{old.source}'s"
    return f"{new.source} {verb} {whose} {old.predicate}"


def resolve(new: StatementView, old: StatementView, temporal: bool, settings: Settings) -> Resolution:
    """The policy above for a contradicting pair, ``new`` the later statement."""
    if new.source and new.source == old.source:
        if new.confidence < old.confidence:
            return Resolution(None, None, f"{new.source} said both; the newer is less confident")
        if temporal:
            return Resolution(new, old, f"newer {new.predicate} from {new.source}")
        if new.revision is not None:
            return Resolution(new, old, _cued(new, old))
        return Resolution(None, None, f"{new.source} said both; {new.predicate} does not change and nothing says which")
    w_new, w_old = _weight(new, settings), _weight(old, settings)
    margin = 1.0 + settings.resolution_margin
    if w_new > w_old * margin:
        return Resolution(new, old, _outweighs(new, old, w_new, w_old))
    if w_old > w_new * margin:
        return Resolution(old, new, _outweighs(old, new, w_old, w_new))
    if new.revision is not None:
        return Resolution(new, old, _cued(new, old))
    apart = (new.created_at - old.created_at) / 1000
    if temporal and apart > settings.resolution_close_seconds:
        return Resolution(new, old, f"newer {new.predicate} from {new.source}, {apart:.0f}s after {old.source}'s")
    return Resolution(None, None, f"{old.source} and {new.source} disagree with equal weight, {apart:.0f}s apart")


def _outweighs(winner: StatementView, loser: StatementView, w_winner: float, w_loser: float) -> str:
    return f"{winner.source} outweighs {loser.source} (trust x confidence {w_winner:.2f} vs {w_loser:.2f})"
