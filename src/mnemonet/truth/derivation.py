"""What a worker's claim rests on: the literal statement it was drawn from.

The inference worker writes its claims ``DERIVED_FROM`` the observation ("alice is located in Rome"
from "I live in Rome"), but what such a claim restates is the speaker's own statement of the same
observation about the same two things ("alice lives in Rome"): its **base**. A claim follows its
base: taken back with it, replaced with it (``service/derivations.py`` writes that). A worker's claim
with no base among the literal statements (a model inferring from the whole text) rests on the
observation alone, as written.
"""

from __future__ import annotations

from mnemonet.model.records import WORKER_SOURCES, normalise_name
from mnemonet.model.views import StatementView


def _pair(s: StatementView) -> frozenset[str]:
    return frozenset((normalise_name(s.subject), normalise_name(s.object)))


def inferred(s: StatementView) -> bool:
    """A worker's claim (not a source's own statement)."""
    return (s.source or "") in WORKER_SOURCES and s.summary is None


def rests_on(claim: StatementView, base: StatementView) -> bool:
    """Whether ``claim`` is a worker's restatement of ``base``: drawn from the same observation, about the
    same two things, ``base`` being what the speaker said."""
    return (
        claim.id != base.id and inferred(claim) and not inferred(base) and base.summary is None
        and bool(set(claim.derived_from) & set(base.derived_from)) and _pair(claim) == _pair(base)
    )


def resting_on(base: StatementView, drawn: list[StatementView]) -> list[StatementView]:
    """The claims among ``drawn`` (statements of the base's observations) that rest on ``base``."""
    return [s for s in drawn if rests_on(s, base)]


def bases_of(claim: StatementView, drawn: list[StatementView]) -> list[StatementView]:
    """The statements among ``drawn`` that ``claim`` rests on."""
    return [s for s in drawn if rests_on(claim, s)]
