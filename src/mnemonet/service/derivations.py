"""Truth maintenance through derivations: a worker's claim follows the statement it rests on.

``truth.derivation`` says what a claim rests on (its base: the speaker's statement of the same
observation about the same two things). Here the consequences are written, append-only, whatever the
order or the volume of writes:

- a base retracted: each claim resting on it is retracted too, its retraction citing the base's;
- a base superseded: each claim resting on it is superseded by the winner's own claim of the same
  relation if it has one, else by the winner;
- a claim written after its base was retracted or superseded follows it at once.

So "alice lives in Rome", retracted or replaced, never leaves "alice is located in Rome" current.
"""

from __future__ import annotations

from mnemonet.model.ids import derived_id
from mnemonet.model.records import VALIDATION_SOURCE
from mnemonet.model.views import StatementView
from mnemonet.service.common import worker_spec
from mnemonet.service.context import ServiceContext
from mnemonet.truth.derivation import bases_of, resting_on


class Derivations:
    """Writes what a change of a base means for the claims resting on it."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    async def _drawn_with(self, s: StatementView) -> list[StatementView]:
        """Every statement of the observations ``s`` was drawn from."""
        graph = self._ctx.graph
        out: dict[str, StatementView] = {}
        for origin in s.derived_from:
            out.update((x.id, x) for x in await graph.statements_from_observation(origin))
        return list(out.values())

    async def retracted(self, base: StatementView, retraction_id: str, by: str) -> list[str]:
        """Retract the claims resting on ``base`` (just retracted by ``retraction_id``); their ids."""
        graph = self._ctx.graph
        out = []
        for claim in resting_on(base, await self._drawn_with(base)):
            reason = f"rests on {base.id}, retracted by {by} ({retraction_id})"
            await graph.retract(derived_id("rtr", claim.id), claim.id, "statement", reason, by)
            out.append(claim.id)
        return out

    async def superseded(self, winner_id: str, loser_id: str, source: str) -> list[str]:
        """Supersede the claims resting on ``loser_id`` (just superseded by ``winner_id``); their ids."""
        graph = self._ctx.graph
        found = {s.id: s for s in await graph.get_statements([winner_id, loser_id])}
        loser, winner = found.get(loser_id), found.get(winner_id)
        if loser is None or winner is None:
            return []
        claims = [c for c in resting_on(loser, await self._drawn_with(loser)) if winner_id not in c.superseded_by]
        if not claims:
            return []
        winners_claims = resting_on(winner, await self._drawn_with(winner))
        out = []
        for claim in claims:
            by = next((w for w in winners_claims if w.predicate == claim.predicate), winner)
            if by.id in claim.superseded_by or by.id == claim.id:
                continue
            reason = f"rests on {loser.id}, superseded by {winner.id}"
            await graph.link_statements("SUPERSEDES", by.id, claim.id, reason, worker_spec(source))
            out.append(claim.id)
        return out

    async def inferred(self, claim_ids: list[str]) -> None:
        """Claims just written follow a base already retracted or superseded."""
        graph = self._ctx.graph
        for claim in await graph.get_statements(claim_ids):
            for base in bases_of(claim, await self._drawn_with(claim)):
                for standing in await graph.retractions_of([base.id]) if base.retracted_by else []:
                    await self.retracted(base, standing.id, standing.source)
                for winner in base.superseded_by:
                    await self.superseded(winner, base.id, VALIDATION_SOURCE)
