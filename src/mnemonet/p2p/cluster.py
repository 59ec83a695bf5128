"""Membership over the network: join/welcome, gossip, probes, push-pull, leave and re-bootstrap.

``Membership`` and ``FailureDetector`` hold the protocol without I/O; this
module carries their messages through the transport and runs their loops.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

from mnemonet.p2p.detector import DetectorConfig, FailureDetector
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.errors import P2PError
from mnemonet.p2p.membership import Member, Membership, MembershipConfig
from mnemonet.p2p.transport import PeerTimeout, PeerUnavailable, Transport, raise_for_error
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

JOIN_PATH = "/v1/join"
_CONTROL_KINDS = {Kind.JOIN, Kind.GOSSIP, Kind.PUSH_PULL, Kind.PING, Kind.PING_REQ, Kind.LEAVE}


def membership_config(settings: Settings) -> MembershipConfig:
    """The membership protocol's timers and limits from the settings."""
    return MembershipConfig(
        suspicion_timeout=settings.suspicion_timeout,
        retransmit_mult=settings.gossip_retransmit_mult,
        max_piggyback=settings.gossip_max_piggyback,
        dead_member_reap=settings.dead_member_reap,
    )


def detector_config(settings: Settings) -> DetectorConfig:
    """The failure detector's timers from the settings."""
    return DetectorConfig(
        probe_interval=settings.probe_interval,
        probe_timeout=settings.probe_timeout,
        indirect_probes=settings.indirect_probes,
        push_pull_interval=settings.push_pull_interval,
    )


def _updates(payload: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = payload.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key}: must be a list of member updates")
    return value


class NetworkProbes:
    """The detector's ``ProbeTransport`` over this node's transport."""

    def __init__(self, transport: Transport, node_id: str, control_timeout: float) -> None:
        self._transport = transport
        self._node_id = node_id
        self._control_timeout = control_timeout

    async def _ask(self, member: Member, kind: Kind, payload: dict[str, Any], timeout: float) -> Envelope | None:
        env = Envelope(kind=kind, sender=self._node_id, target=member.node_id, payload=payload)
        try:
            return raise_for_error(await self._transport.call(member, env, timeout))
        except (PeerUnavailable, PeerTimeout, P2PError):
            return None

    async def ping(
        self, target: Member, piggyback: list[dict[str, Any]], timeout: float
    ) -> list[dict[str, Any]] | None:
        """Ping ``target``; the ack's piggyback, None on failure."""
        reply = await self._ask(target, Kind.PING, {"piggyback": piggyback}, timeout)
        if reply is None:
            return None
        updates = reply.payload.get("piggyback", [])
        return updates if isinstance(updates, list) else []

    async def ping_req(self, via: Member, target: Member, piggyback: list[dict[str, Any]], timeout: float) -> bool:
        """Ask ``via`` to ping ``target``."""
        reply = await self._ask(via, Kind.PING_REQ, {"target_id": target.node_id, "piggyback": piggyback}, timeout)
        return reply is not None and reply.payload.get("ok") is True

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Exchange full membership state with ``target``."""
        reply = await self._ask(target, Kind.PUSH_PULL, {"members": snapshot}, self._control_timeout)
        if reply is None:
            return None
        members = reply.payload.get("members")
        return members if isinstance(members, list) else None


class Cluster:
    """One node's part in the membership protocol."""

    def __init__(
        self, settings: Settings, membership: Membership, transport: Transport, rng: random.Random,
    ) -> None:
        self._settings = settings
        self.membership = membership
        self._transport = transport
        self._rng = rng
        self.seeds = [url.strip().rstrip("/") for url in settings.bootstrap.split(",") if url.strip()]
        self.detector = FailureDetector(
            membership, NetworkProbes(transport, membership.local.node_id, settings.control_timeout),
            detector_config(settings), time.monotonic, asyncio.sleep, rng,
        )

    @property
    def node_id(self) -> str:
        """This node's id."""
        return self.membership.local.node_id

    def handles(self, kind: Kind) -> bool:
        """True for the kinds this component answers."""
        return kind in _CONTROL_KINDS

    # -- joining -------------------------------------------------------------------
    async def join_once(self) -> bool:
        """Try each seed in turn; True once one welcomed us."""
        for seed in self.seeds:
            env = Envelope(kind=Kind.JOIN, sender=self.node_id, payload={"member": self.membership.local.to_wire()})
            try:
                reply = await self._transport.post_url(seed, JOIN_PATH, env, self._settings.control_timeout)
                if reply is None:
                    raise PeerUnavailable(f"{seed} sent no welcome")
                raise_for_error(reply)
            except (PeerUnavailable, PeerTimeout, P2PError) as exc:
                log.info("seed %s not reachable: %s", seed, exc)
                continue
            if reply.sender == self.node_id:
                continue  # our own URL is among the seeds
            members = _updates(reply.payload, "members")
            self.membership.apply_many(members)
            # The seed may advertise an address we cannot use (NAT, Docker); keep the one that worked.
            self._transport.remember_url(reply.sender, seed)
            log.info("joined through seed %s (%s); %d members known", seed, reply.sender,
                     len(self.membership.members()))
            return True
        return False

    async def bootstrap_loop(self) -> None:
        """Join through the seeds whenever no peer is known, backing off while none answers."""
        delay = self._settings.rejoin_backoff_initial
        while True:
            if self.seeds and not self.membership.alive(include_local=False):
                if await self.join_once():
                    delay = self._settings.rejoin_backoff_initial
                else:
                    log.warning("no seed reachable among %s; retrying in %.1fs", self.seeds, delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self._settings.rejoin_backoff_max)
                    continue
            await asyncio.sleep(self._settings.link_maintenance_interval)

    # -- gossip --------------------------------------------------------------------
    async def gossip_loop(self) -> None:
        """Every ``gossip_interval`` send queued updates to ``gossip_fanout`` random peers."""
        while True:
            await asyncio.sleep(self._settings.gossip_interval)
            peers = self.membership.alive(include_local=False)
            if not peers:
                continue
            updates = self.membership.take_piggyback()
            if not updates:
                continue
            targets = self._rng.sample(peers, min(self._settings.gossip_fanout, len(peers)))
            await asyncio.gather(*(self._send_quietly(m, Kind.GOSSIP, {"updates": updates}) for m in targets))

    async def _send_quietly(self, member: Member, kind: Kind, payload: dict[str, Any]) -> None:
        env = Envelope(kind=kind, sender=self.node_id, target=member.node_id, payload=payload)
        try:
            await self._transport.send(member, env)
        except (PeerUnavailable, PeerTimeout, P2PError) as exc:
            log.debug("%s to %s failed: %s", kind, member.node_id, exc)  # the detector judges liveness

    async def leave(self) -> None:
        """Mark ourselves left and tell every live peer, within ``shutdown_timeout``."""
        update = self.membership.leave()
        peers = self.membership.alive(include_local=False)
        try:
            async with asyncio.timeout(self._settings.shutdown_timeout):
                await asyncio.gather(*(self._send_quietly(m, Kind.LEAVE, {"update": update}) for m in peers))
        except TimeoutError:
            log.warning("leave not confirmed by every peer within %.1fs", self._settings.shutdown_timeout)

    # -- serving -------------------------------------------------------------------
    async def handle(self, env: Envelope) -> Envelope | None:
        """Answer one membership envelope; ``ValueError`` for a malformed payload."""
        payload = env.payload
        if env.kind is Kind.PING:
            piggyback = self.detector.handle_ping(_updates(payload, "piggyback"))
            return env.reply(Kind.ACK, self.node_id, {"piggyback": piggyback})
        if env.kind is Kind.PING_REQ:
            target_id = payload.get("target_id")
            if not isinstance(target_id, str):
                raise ValueError("target_id: must be a string")
            ok = await self.detector.handle_ping_req(target_id, _updates(payload, "piggyback"))
            return env.reply(Kind.ACK, self.node_id, {"ok": ok})
        if env.kind is Kind.PUSH_PULL:
            members = self.detector.handle_push_pull(_updates(payload, "members"))
            return env.reply(Kind.PUSH_PULL, self.node_id, {"members": members})
        if env.kind is Kind.GOSSIP:
            self.membership.apply_many(_updates(payload, "updates"))
            return None
        if env.kind is Kind.LEAVE:
            update = payload.get("update")
            if not isinstance(update, dict) or update.get("node_id") != env.sender:
                raise ValueError("update: a node may only announce its own departure")
            self.membership.apply(update)
            return None
        if env.kind is Kind.JOIN:
            member = payload.get("member")
            if not isinstance(member, dict) or member.get("node_id") != env.sender:
                raise ValueError("member: a node may only join as itself")
            self.membership.apply(member)
            log.info("member %s joined from %s", env.sender, member.get("url"))
            return env.reply(Kind.WELCOME, self.node_id, {"members": self.membership.snapshot()})
        raise ValueError(f"kind {env.kind} is not a membership message")
