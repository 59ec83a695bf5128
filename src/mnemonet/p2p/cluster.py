"""Membership over the network: join/welcome, gossip, probes, push-pull, leave and re-joining.

``Membership`` and ``FailureDetector`` hold the protocol without I/O; this
module carries their messages through the transport and runs their loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from pathlib import Path
from typing import Any

from mnemonet.p2p.detector import DetectorConfig, FailureDetector
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.errors import P2PError
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.p2p.peerbook import PeerBook, RejoinConfig
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
        suspicion_max_mult=settings.suspicion_max_mult,
        suspicion_confirmations=settings.suspicion_confirmations,
        max_incarnation_jump=settings.max_incarnation_jump,
        max_updates_per_message=settings.max_updates_per_message,
        max_members=settings.max_members,
        admission_timeout=settings.member_admission_timeout,
        max_pending_members=settings.max_pending_members,
    )


def detector_config(settings: Settings) -> DetectorConfig:
    """The failure detector's timers from the settings."""
    return DetectorConfig(
        probe_interval=settings.probe_interval,
        probe_timeout=settings.probe_timeout,
        indirect_probes=settings.indirect_probes,
        push_pull_interval=settings.push_pull_interval,
        awareness_max=settings.awareness_max,
        stall_threshold=settings.stall_threshold,
    )


def rejoin_config(settings: Settings) -> RejoinConfig:
    """Backoff and memory of the re-contacting of seeds and remembered peers."""
    return RejoinConfig(
        backoff_initial=settings.rejoin_backoff_initial,
        backoff_max=settings.rejoin_backoff_max,
        jitter=settings.rejoin_jitter,
        max_remembered=settings.max_remembered_peers,
        remembered_ttl=settings.remembered_peer_ttl,
    )


def peer_file(settings: Settings) -> Path | None:
    """Where this node remembers its peers: one file per node in the data directory.

    Named after the node id when one is set, else after the port; a node on
    a random port (0) has no stable name and remembers nothing.
    """
    if settings.node_id:
        name = settings.node_id
    elif settings.port:
        name = f"port-{settings.port}"
    else:
        return None
    return settings.data_dir / "peers" / f"{name}.json"


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
        self, target: Member, piggyback: list[dict[str, Any]], timeout: float,
    ) -> list[dict[str, Any]] | None:
        """Ping ``target``; the ack's piggyback, None on failure."""
        reply = await self._ask(target, Kind.PING, {"piggyback": piggyback}, timeout)
        if reply is None:
            return None
        updates = reply.payload.get("piggyback", [])
        return updates if isinstance(updates, list) else []

    async def ping_req(
        self, via: Member, target: Member, piggyback: list[dict[str, Any]], timeout: float,
    ) -> bool | None:
        """Ask ``via`` to ping ``target``; None if ``via`` did not answer."""
        reply = await self._ask(via, Kind.PING_REQ, {"target_id": target.node_id, "piggyback": piggyback}, timeout)
        return None if reply is None else reply.payload.get("ok") is True

    async def push_pull(self, target: Member, snapshot: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Exchange full membership state with ``target``."""
        reply = await self._ask(target, Kind.PUSH_PULL, {"members": snapshot}, self._control_timeout)
        if reply is None:
            return None
        members = reply.payload.get("members")
        return members if isinstance(members, list) else None


def join_failure(url: str, exc: Exception) -> str:
    """Why joining through ``url`` failed, the way a person acts on it: the cause, and the fix where known."""
    code = getattr(exc, "code", "")
    if code == "bad_tag":
        return f"the seed at {url} refused our cluster key (every node needs the same MNEMONET_CLUSTER_KEY)"
    if code == "stale":
        return f"the seed at {url} refused our message as too old or from the future (are the clocks apart?)"
    if isinstance(exc, PeerTimeout):
        return f"the seed at {url} did not answer in time ({exc})"
    if isinstance(exc, PeerUnavailable):
        return f"no node at {url} ({exc})"
    return f"the seed at {url} did not welcome us ({code or 'error'}: {exc})"


class Cluster:
    """One node's part in the membership protocol."""

    def __init__(
        self, settings: Settings, membership: Membership, transport: Transport, rng: random.Random,
    ) -> None:
        self._settings = settings
        self.membership = membership
        self._transport = transport
        self._rng = rng
        self.peers = PeerBook(
            [url.strip() for url in settings.bootstrap.split(",") if url.strip()],
            peer_file(settings), rejoin_config(settings), time.monotonic, rng,
        )
        self._probes = NetworkProbes(transport, membership.local.node_id, settings.control_timeout)
        self.detector = FailureDetector(
            membership, self._probes, detector_config(settings), time.monotonic, asyncio.sleep, rng,
        )
        self._heard_of = asyncio.Event()  # a member was listed pending: probe it now, not at the next round
        # Why the last join through each URL failed (dropped once it welcomes us): for /health and the log.
        self.join_errors: dict[str, str] = {}
        self._last_warning = ""
        membership.add_listener(self._on_change)

    def _on_change(self, member: Member, old_state: MemberState | None) -> None:
        if old_state is None:
            self._heard_of.set()

    @property
    def node_id(self) -> str:
        """This node's id."""
        return self.membership.local.node_id

    def handles(self, kind: Kind) -> bool:
        """True for the kinds this component answers."""
        return kind in _CONTROL_KINDS

    @property
    def seeds(self) -> list[str]:
        """The seed URLs this node joins through."""
        return self.peers.seeds

    # -- joining -------------------------------------------------------------------
    async def join_once(self) -> bool:
        """Try each seed in turn; True once one welcomed us."""
        for seed in self.seeds:
            if await self.join_url(seed):
                return True
        return False

    async def join_url(self, url: str) -> bool:
        """Join through the node at ``url``; True if it welcomed us and is not ourselves."""
        try:
            reply = await self._post_join(url)
        except (PeerUnavailable, PeerTimeout, P2PError) as exc:
            self.join_errors[url] = join_failure(url, exc)
            log.info("join through %s failed: %s", url, self.join_errors[url])
            self.peers.failed(url)
            return False
        self.join_errors.pop(url, None)
        self.peers.answered(url, reply.sender, self.node_id)
        if reply.sender == self.node_id:
            return False  # our own URL is among the seeds
        incarnation = self.membership.local.incarnation
        self.membership.merge_view(_updates(reply.payload, "members"))
        self.membership.admit(reply.sender)  # it answered us itself, at this address
        # The peer may advertise an address we cannot use (NAT, Docker); keep the one that worked.
        self._transport.remember_url(reply.sender, url)
        if self.membership.local.incarnation != incarnation:
            # The welcome held a stale record of us (we restarted under the same
            # id): we refuted it; tell the peer now instead of waiting for gossip.
            await self._rejoin_quietly(url)
        peer = self.membership.get(reply.sender)
        if peer is not None and peer.state is not MemberState.ALIVE:
            # We hold the peer dead or suspect from its previous run: a full-state
            # exchange shows it that record, it refutes, and we take the refutation.
            remote = await self.detector.transport.push_pull(peer, self.membership.snapshot())
            if remote is not None:
                self.membership.merge_view(remote)
        log.info("joined through %s (%s); %d members known", url, reply.sender, len(self.membership.members()))
        return True

    async def _post_join(self, url: str) -> Envelope:
        # A join is bound to the node it joins, like every other envelope: replayed to another node, it is
        # refused (``wrong_target``) instead of listing us there. The seed's id comes first, from a join
        # that carries nothing (``handle``), so only a key holder learns it.
        asked = await self._post(url, Envelope(kind=Kind.JOIN, sender=self.node_id))
        if asked.sender == self.node_id:
            return asked  # our own URL among the seeds: nothing to join
        env = Envelope(kind=Kind.JOIN, sender=self.node_id, target=asked.sender,
                       payload={"member": self.membership.local.to_wire()})
        return await self._post(url, env)

    async def _post(self, url: str, env: Envelope) -> Envelope:
        reply = await self._transport.post_url(url, JOIN_PATH, env, self._settings.control_timeout)
        if reply is None:
            raise PeerUnavailable(f"{url} sent no welcome")
        return raise_for_error(reply)

    async def _rejoin_quietly(self, url: str) -> None:
        try:
            await self._post_join(url)
        except (PeerUnavailable, PeerTimeout, P2PError) as exc:
            log.info("peer %s not reachable: %s", url, exc)

    async def bootstrap_loop(self) -> None:
        """Re-contact every seed and remembered peer at which no alive member answers, with backoff.

        Not only when nobody is known: a restarted seed comes back knowing
        nobody (often under a new id), while the others still see each other
        and would never call it. Every ``link_maintenance_interval`` the
        remembered set is refreshed (and saved when it changed) and the
        targets whose backoff ran out are tried, concurrently.
        """
        while True:
            members = self.membership.members(include_dead=True)
            self.peers.observe(members, self.node_id)
            content = self.peers.pending_save()
            if content is not None:
                try:
                    await asyncio.to_thread(self.peers.save, content)
                except OSError as exc:
                    log.warning("could not save remembered peers to %s: %s", self.peers.path, exc)
            due = self.peers.due(members)
            if due:
                joined = await asyncio.gather(*(self.join_url(url) for url in due))
                if not any(joined) and not self.membership.alive(include_local=False):
                    self.warn_not_joined(due)
            await asyncio.sleep(self._settings.link_maintenance_interval)

    def warn_not_joined(self, tried: list[str]) -> None:
        """One warning naming why each URL tried did not take us in; repeated only when a reason changes."""
        reasons = "; ".join(self.join_errors.get(url, f"no answer from {url}") for url in tried)
        message = f"not joined to any network yet: {reasons}; retrying"
        if message != self._last_warning:
            log.warning("%s", message)
            self._last_warning = message
        else:
            log.debug("%s", message)

    def join_status(self) -> dict[str, object]:
        """``joined``: some other member is alive (or there is nothing to join); ``last_error``: why not."""
        alive = bool(self.membership.alive(include_local=False))
        errors = [self.join_errors[url] for url in self.seeds if url in self.join_errors] \
            or list(self.join_errors.values())
        return {"joined": alive or not self.seeds, "seeds": list(self.seeds),
                "last_error": None if alive or not errors else errors[-1]}

    # -- admission -----------------------------------------------------------------
    async def admission_loop(self) -> None:
        """Probe members heard of from others; admit each that answers itself (``Membership.admit``).

        Forged gossip can name thousands of members at addresses no node
        answers at; none is routed to before it proves it is there. Each
        pending member is probed at most once per ``probe_interval``; the
        membership forgets those that never answer.
        """
        tried: dict[str, float] = {}
        limit = asyncio.Semaphore(self._settings.admission_concurrency)

        async def probe(member: Member) -> None:
            async with limit:
                if await self._probes.ping(member, [], self._settings.probe_timeout) is not None:
                    if self.membership.admit(member.node_id):
                        log.info("admitted %s (%s): it answered a probe", member.node_id, member.url)

        while True:
            self._heard_of.clear()
            now = time.monotonic()
            pending = self.membership.pending()
            due = [m for m in pending if now - tried.get(m.node_id, -math.inf) >= self._settings.probe_interval]
            tried = {m.node_id: tried[m.node_id] for m in pending if m.node_id in tried}  # drop admitted/expired
            tried.update((m.node_id, now) for m in due)
            await asyncio.gather(*(probe(m) for m in due))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.probe_interval):
                    await self._heard_of.wait()

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
            if env.target is None:
                # Who is here: a joiner's first question, answered with our id alone, changing nothing.
                if payload:
                    raise ValueError("a join names the node it joins (target); only an empty one asks who is here")
                return env.reply(Kind.WELCOME, self.node_id, {})
            member = payload.get("member")
            if not isinstance(member, dict) or member.get("node_id") != env.sender:
                raise ValueError("member: a node may only join as itself")
            self.membership.apply(member)
            log.info("member %s joined from %s", env.sender, member.get("url"))
            return env.reply(Kind.WELCOME, self.node_id, {"members": self.membership.snapshot()})
        raise ValueError(f"kind {env.kind} is not a membership message")
