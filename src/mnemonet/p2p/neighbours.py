"""Keeps up to ``max_neighbours`` WebSocket links to random live peers, replacing dead ones."""

from __future__ import annotations

import asyncio
import logging
import random

from mnemonet.p2p.membership import Member, Membership, MemberState
from mnemonet.p2p.transport import Transport

log = logging.getLogger(__name__)

_GONE = (MemberState.DEAD, MemberState.LEFT)


class Neighbours:
    """Link maintenance: drop links to peers that are gone, dial random live peers to fill the slots."""

    def __init__(
        self, membership: Membership, transport: Transport, max_neighbours: int, interval: float,
        rng: random.Random,
    ) -> None:
        self._membership = membership
        self._transport = transport
        self._max = max_neighbours
        self._interval = interval
        self._rng = rng
        membership.add_listener(self._on_change)

    def _on_change(self, member: Member, old_state: MemberState | None) -> None:
        if member.state in _GONE and member.node_id != self._membership.local.node_id:
            self._transport.spawn(self._transport.close_links_to(member.node_id), f"unlink-{member.node_id}")

    async def run(self) -> None:
        """Maintain links every ``interval`` until cancelled."""
        while True:
            await self.maintain()
            await asyncio.sleep(self._interval)

    async def maintain(self) -> None:
        """One pass: close links to gone peers, then dial replacements."""
        routable = {m.node_id: m for m in self._membership.alive(include_local=False)}
        for peer_id in self._transport.neighbours():
            # Unknown peers keep their link: a fresh joiner may dial us before gossip names it.
            member = self._membership.get(peer_id) or self._membership.tombstone(peer_id)
            if member is not None and member.state in _GONE:
                await self._transport.close_links_to(peer_id)
        free = self._max - self._transport.outbound_count()
        if free <= 0:
            return
        linked = set(self._transport.neighbours())
        candidates = [m for node_id, m in routable.items() if node_id not in linked]
        chosen = self._rng.sample(candidates, min(free, len(candidates)))
        await asyncio.gather(*(self._dial(m) for m in chosen))

    async def _dial(self, member: Member) -> None:
        try:
            await self._transport.dial(member)
            log.debug("linked to %s", member.node_id)
        except ConnectionError as exc:
            log.debug("could not link to %s: %s", member.node_id, exc)
