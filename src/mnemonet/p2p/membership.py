"""Cluster membership: the SWIM / memberlist state machine, without I/O.

Each member is ``alive``, ``suspect``, ``dead`` or ``left`` at some
incarnation. Updates from peers are merged by explicit rules (see
:meth:`Membership.apply`); changes are queued for piggybacking on outgoing
messages a bounded number of times. Time comes from an injected clock so the
same code runs under a simulated clock in tests and benchmarks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from mnemonet.p2p.suspicion import Suspicion


class MemberState(StrEnum):
    """The states of the membership state machine."""

    ALIVE = "alive"
    SUSPECT = "suspect"
    DEAD = "dead"
    LEFT = "left"


# At equal incarnation the higher rank wins: a suspicion overrides "alive",
# a death or departure overrides both. Dead and left are both final.
_RANK = {MemberState.ALIVE: 0, MemberState.SUSPECT: 1, MemberState.DEAD: 2, MemberState.LEFT: 2}
_GONE = (MemberState.DEAD, MemberState.LEFT)
_ROUTABLE = (MemberState.ALIVE, MemberState.SUSPECT)

_WIRE_KEYS = frozenset({"node_id", "url", "capabilities", "incarnation", "state"})
_SUSPECT_KEYS = _WIRE_KEYS | {"by"}  # a suspicion names its suspecter, so confirmations can be counted
_NODE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
_CAPABILITY_RE = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True)
class MembershipConfig:
    """Timers and limits of the membership protocol (mapped from ``Settings``).

    suspicion_timeout: seconds a suspect has to refute before it is declared
        dead, for clusters of up to 10 members (memberlist's
        ``suspicion_mult x probe_interval``; 5 x 1 s here).
    suspicion_log_scale: scale ``suspicion_timeout`` by ``max(1, log10(N))``
        like memberlist, so larger clusters, where a refutation needs more
        gossip rounds to spread, do not declare live members dead.
    suspicion_max_mult: Lifeguard: a suspicion starts at this multiple of
        the (scaled) suspicion timeout and shrinks to it as independent
        suspecters confirm it (memberlist's ``SuspicionMaxTimeoutMult``);
        1 turns this off.
    suspicion_confirmations: Lifeguard's k, the confirmations after which
        a suspicion runs for the plain suspicion timeout (memberlist's
        ``SuspicionMult - 2``); 0 where fewer than k + 2 members are known.
    retransmit_mult: each update is piggybacked
        ``retransmit_mult x ceil(log2(N + 1))`` times, then dropped.
    max_piggyback: most updates carried by one outgoing message. 24 (about
        4 KB of JSON): at 1000 members and 10% loss some seven suspicions a
        second and their refutations each need ``max_transmits`` sends from
        every member; 8 per message cannot carry that, a refutation spreads
        too thinly and live members are declared dead (bench/README.md).
    dead_member_reap: seconds a dead/left member stays listed before it is
        forgotten; a tombstone (its last record) is kept so stale gossip
        cannot resurrect it.
    max_tombstones: most tombstones kept; the oldest are dropped first.
    max_node_id_chars, max_url_chars, max_capabilities,
    max_capability_chars: size limits of a member record on the wire.
    max_incarnation: largest incarnation accepted. 2**62 leaves room to
        refute any accepted claim within a signed 64-bit integer; a member
        refuting once a second would need 10**11 years to reach it.
    max_incarnation_jump: most an update may raise the incarnation of a
        member we list or keep a tombstone of (ourselves included): one
        gossip claiming 2**63-1 once evicted a node for good, as its
        refutation could not be higher. A live member raises its own by one
        per refutation, so a million is far beyond any real jump, and an
        attacker needs 2**42 messages to reach the cap. A claim its subject
        must refute (a suspicion, a death, any claim about ourselves) may
        rise one less, so the refutation stays within the bound for every
        peer that held the old record. One exception: the first full view a
        peer sends back to us holding our own record (``merge_view``), which
        a restarted node must refute whatever it is.
    max_updates_per_message: most member records one message may carry;
        a longer list is refused whole (20,000 forged members in one 2.3 MB
        message once broke routing cluster-wide). Snapshots are cut to fit.
    max_members: most members listed at once (pending ones included); news
        of more is refused until some are gone.
    admission_timeout: seconds a member heard of second-hand stays
        *pending* (listed, but not routed to, probed by the detector,
        relayed or sent in snapshots) until it answers a probe itself
        (``admit``); then it is forgotten without a trace. None admits at
        once (simulations that model no addresses).
    max_pending_members: most members pending at once.
    """

    suspicion_timeout: float = 5.0
    suspicion_log_scale: bool = True
    suspicion_max_mult: float = 6.0
    suspicion_confirmations: int = 3
    retransmit_mult: int = 3
    max_piggyback: int = 24
    dead_member_reap: float = 60.0
    max_tombstones: int = 10_000
    max_node_id_chars: int = 128
    max_url_chars: int = 2048
    max_capabilities: int = 32
    max_capability_chars: int = 32
    max_incarnation: int = 2**62
    max_incarnation_jump: int = 2**20
    max_updates_per_message: int = 4096
    max_members: int = 4096
    admission_timeout: float | None = None
    max_pending_members: int = 256

    def __post_init__(self) -> None:
        if self.suspicion_timeout <= 0 or self.dead_member_reap < 0:
            raise ValueError("suspicion_timeout must be > 0 and dead_member_reap >= 0")
        if self.suspicion_max_mult < 1 or self.suspicion_confirmations < 0:
            raise ValueError("suspicion_max_mult must be >= 1 and suspicion_confirmations >= 0")
        if self.admission_timeout is not None and self.admission_timeout <= 0:
            raise ValueError("admission_timeout must be > 0 (or None)")
        for name in ("retransmit_mult", "max_piggyback", "max_tombstones", "max_node_id_chars",
                     "max_url_chars", "max_capabilities", "max_capability_chars", "max_incarnation",
                     "max_incarnation_jump", "max_updates_per_message", "max_members", "max_pending_members"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")


_DEFAULT_CONFIG = MembershipConfig()


@dataclass
class Member:
    """One member as this node sees it. Treat instances as read-only values."""

    node_id: str
    url: str
    capabilities: frozenset[str]
    incarnation: int
    state: MemberState
    state_since: float  # clock() when the state last changed in our view
    suspected_by: str | None = None  # the member whose suspicion this record carries (suspect only)

    def to_wire(self) -> dict[str, Any]:
        """The gossip form of this record (``state_since`` is local and not sent)."""
        wire = {
            "node_id": self.node_id,
            "url": self.url,
            "capabilities": sorted(self.capabilities),
            "incarnation": self.incarnation,
            "state": self.state.value,
        }
        if self.state is MemberState.SUSPECT and self.suspected_by is not None:
            wire["by"] = self.suspected_by
        return wire

    @classmethod
    def from_wire(cls, d: dict[str, Any], now: float, config: MembershipConfig = _DEFAULT_CONFIG) -> Member:
        """Validate a gossip record and build a member; raise ``ValueError`` if malformed."""
        if not isinstance(d, dict):
            raise ValueError("member update must be an object")
        keys = set(d)
        if keys != _WIRE_KEYS and not (keys == _SUSPECT_KEYS and d.get("state") == MemberState.SUSPECT.value):
            raise ValueError(f"member update must have exactly the keys {sorted(_WIRE_KEYS)} (and 'by' if suspect)")
        by = d.get("by")
        if by is not None and (not isinstance(by, str) or not 0 < len(by) <= config.max_node_id_chars
                               or not _NODE_ID_RE.fullmatch(by)):
            raise ValueError("by must be a node id")
        node_id, url, caps, inc, state = (d[k] for k in ("node_id", "url", "capabilities", "incarnation", "state"))
        if not isinstance(node_id, str) or not 0 < len(node_id) <= config.max_node_id_chars \
                or not _NODE_ID_RE.fullmatch(node_id):
            raise ValueError(f"node_id must be 1..{config.max_node_id_chars} chars of [A-Za-z0-9._:@-]")
        _check_url(url, config.max_url_chars)
        if not isinstance(caps, list) or len(caps) > config.max_capabilities:
            raise ValueError(f"capabilities must be a list of at most {config.max_capabilities} names")
        for cap in caps:
            if not isinstance(cap, str) or len(cap) > config.max_capability_chars or not _CAPABILITY_RE.fullmatch(cap):
                raise ValueError(f"invalid capability name {cap!r}")
        # bool is an int subclass; True is not an incarnation.
        if type(inc) is not int or not 0 <= inc <= config.max_incarnation:
            raise ValueError(f"incarnation must be an integer in 0..{config.max_incarnation}")
        try:
            member_state = MemberState(state)
        except ValueError:
            raise ValueError(f"invalid state {state!r}") from None
        return cls(node_id, url, frozenset(caps), inc, member_state, now, by)


def _check_url(url: object, max_chars: int) -> None:
    if not isinstance(url, str) or not 0 < len(url) <= max_chars or not url.isprintable() or " " in url:
        raise ValueError(f"url must be 1..{max_chars} printable characters without spaces")
    _check_url_syntax(url)


@functools.lru_cache(maxsize=4096)
def _check_url_syntax(url: str) -> None:
    # Cached: the same few member URLs arrive in every gossip message, and
    # parsing dominates validation. Only valid URLs are cached (errors raise).
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        raise ValueError(f"malformed url {url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be http:// or https:// with a host")


Listener = Callable[[Member, MemberState | None], None]


class _BroadcastQueue:
    """Updates waiting to be piggybacked, one per node, each sent a bounded number of times.

    Like memberlist's TransmitLimitedQueue: a newer update about a node
    replaces the queued one, and the least-sent (then newest) updates go out
    first so fresh news spreads before old news is repeated. Updates are bucketed by
    times sent, so taking a batch does not sort the whole queue.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, dict[str, dict[str, Any]]] = {}  # times sent -> node_id -> wire
        self._sent: dict[str, int] = {}  # node_id -> times sent

    def __len__(self) -> int:
        return len(self._sent)

    def put(self, wire: dict[str, Any]) -> None:
        node_id = wire["node_id"]
        if node_id in self._sent:
            self._remove(node_id)
        self._buckets.setdefault(0, {})[node_id] = wire
        self._sent[node_id] = 0

    def take(self, limit: int, max_transmits: int, first: str) -> list[dict[str, Any]]:
        chosen: list[tuple[str, int, dict[str, Any]]] = []
        if first in self._sent:  # a node's own refutation has no other source; it jumps the queue
            sent = self._sent[first]
            chosen.append((first, sent, self._buckets[sent][first]))
        for sent in sorted(self._buckets):
            # Newest first among equally-sent updates (memberlist's order):
            # when the queue is long, a fresh refutation must not wait
            # behind a backlog of older news.
            for node_id, wire in reversed(self._buckets[sent].items()):
                if len(chosen) == limit:
                    break
                if node_id != first:
                    chosen.append((node_id, sent, wire))
            if len(chosen) == limit:
                break
        for node_id, sent, wire in chosen:
            self._remove(node_id)
            if sent + 1 < max_transmits:
                self._buckets.setdefault(sent + 1, {})[node_id] = wire
                self._sent[node_id] = sent + 1
        return [wire for _, _, wire in chosen]

    def _remove(self, node_id: str) -> None:
        sent = self._sent.pop(node_id)
        bucket = self._buckets[sent]
        del bucket[node_id]
        if not bucket:
            del self._buckets[sent]


class Membership:
    """This node's view of the cluster and the SWIM merge rules."""

    def __init__(self, local: Member, config: MembershipConfig, clock: Callable[[], float]) -> None:
        if local.state is not MemberState.ALIVE:
            raise ValueError("the local member starts alive")
        Member.from_wire(local.to_wire(), 0.0, config)  # our own record must be valid gossip
        self.local = dataclasses.replace(local, state_since=clock())
        self.config = config
        self._clock = clock
        self._members: dict[str, Member] = {local.node_id: self.local}
        # Wire form of listed records, built on first use: an incoming copy
        # equal to it is news to no one, so a full-state merge skips it cheaply.
        self._wire: dict[str, dict[str, Any]] = {}
        self._tombstones: OrderedDict[str, Member] = OrderedDict()
        self._queue = _BroadcastQueue()
        self._routable = 1  # members alive or suspect, us included; sizes the timers
        self._timed: set[str] = set()  # suspect/dead/left peers: the only ones tick() looks at
        self._suspicions: dict[str, Suspicion] = {}  # per suspect: its suspecters, for Lifeguard's timeout
        self._pending: dict[str, float] = {}  # heard of, not yet heard from -> clock() when listed
        self._listeners: list[Listener] = []
        self.invalid_updates = 0  # malformed updates refused by apply_many
        # A view a peer sent back to us has held our own record since we started (``merge_view``).
        self.own_record_seen = False
        # Per listed member, the times this view turned it suspect (a new suspicion: our detector's or one
        # gossiped to us) and dead: a member that is only slow should gather none (/metrics). Forgotten with it.
        self.suspicions: Counter[str] = Counter()
        self.deaths: Counter[str] = Counter()

    def preload(self, members: Iterable[Member]) -> None:
        """Start from a known view of alive peers without gossiping it.

        For a view that needs no spreading because everyone already holds
        it (a simulated cluster's starting state). Only allowed while we
        know no one but ourselves; raises ``ValueError`` otherwise.
        """
        if len(self._members) != 1:
            raise ValueError("preload only into a fresh view")
        peers = [m for m in members if m.node_id != self.local.node_id]
        if any(not isinstance(m, Member) or m.state is not MemberState.ALIVE for m in peers):
            raise ValueError("preload takes alive Member records")
        for member in peers:
            # Members are never mutated once stored, so records may be shared.
            self._members[member.node_id] = member
        self._routable += len(peers)

    # -- reading ---------------------------------------------------------

    def get(self, node_id: str) -> Member | None:
        """The listed member with this id (dead/left included, tombstones not)."""
        return self._members.get(node_id)

    def members(self, include_dead: bool = False) -> list[Member]:
        """All admitted listed members, the local one included; dead/left only if asked."""
        return [m for m in self._members.values()
                if (include_dead or m.state in _ROUTABLE) and m.node_id not in self._pending]

    def alive(self, capability: str | None = None, include_local: bool = True) -> list[Member]:
        """Routable members (alive or suspect, admitted), optionally only those with ``capability``."""
        return [
            m for m in self._members.values()
            if m.state in _ROUTABLE
            and (capability is None or capability in m.capabilities)
            and (include_local or m.node_id != self.local.node_id)
            and m.node_id not in self._pending
        ]

    def pending(self) -> list[Member]:
        """Members heard of from others, waiting to answer a probe themselves before they are routed to."""
        return [self._members[node_id] for node_id in self._pending]

    def admit(self, node_id: str) -> bool:
        """``node_id`` answered a probe itself: route to it, relay it. False if it was not pending."""
        if self._pending.pop(node_id, None) is None:
            return False
        member = self._members[node_id]
        self._routable += member.state in _ROUTABLE
        self._queue.put(self._wire_of(node_id) or member.to_wire())
        return True

    def tombstone(self, node_id: str) -> Member | None:
        """The last record of a reaped dead/left member, if one is kept."""
        return self._tombstones.get(node_id)

    def snapshot(self) -> list[dict[str, Any]]:
        """Full state for anti-entropy: every listed member plus the tombstones.

        Tombstones travel too, so a peer holding a stale "alive" learns of the
        death, and a restarted node reusing its id refutes its own tombstone.
        """
        listed = [wire for node_id in self._members
                  if node_id not in self._pending and (wire := self._wire_of(node_id)) is not None]
        room = max(0, self.config.max_updates_per_message - len(listed))
        tombs = list(self._tombstones.values())
        return [*listed, *(t.to_wire() for t in tombs[max(0, len(tombs) - room):])]  # the newest that fit

    def suspicion_timeout(self) -> float:
        """Seconds a suspect has to refute, scaled with cluster size if configured."""
        if not self.config.suspicion_log_scale:
            return self.config.suspicion_timeout
        return self.config.suspicion_timeout * max(1.0, math.log10(self._routable))

    def max_transmits(self) -> int:
        """How many times one update is piggybacked before it is dropped."""
        return self.config.retransmit_mult * math.ceil(math.log2(self._routable + 1))

    # -- merging ---------------------------------------------------------

    def apply(self, update: dict[str, Any], *, view: bool = False) -> bool:
        """Merge one gossip update; return True if it changed our view. ``view``: see ``merge_view``.

        Rules, for a member other than ourselves:
        - a higher incarnation wins, whatever its state;
        - at equal incarnation dead/left > suspect > alive;
        - a lower incarnation changes nothing, so dead/left are never
          overridden by alive at the same or a lower incarnation;
        - a reaped member's tombstone is overridden only by a higher
          incarnation (the node restarted and refuted its death).
        About ourselves: a suspect/dead/left claim at our incarnation or
        above, or an alive claim above it, is refuted by raising our own
        incarnation past it and broadcasting that we are alive.
        Malformed updates raise ``ValueError`` and change nothing.
        """
        # Type checks keep the shortcut strict: True == 1 == 1.0 in Python.
        if isinstance(update, dict) and isinstance(update.get("node_id"), str) \
                and type(update.get("incarnation")) is int and self._wire_of(update["node_id"]) == update:
            self.own_record_seen |= view and update["node_id"] == self.local.node_id
            return False
        now = self._clock()
        incoming = Member.from_wire(update, now, self.config)
        about_us = incoming.node_id == self.local.node_id
        if not (view and about_us and not self.own_record_seen):
            self._check_jump(incoming)
        if about_us:
            changed = self._about_local(incoming)
            self.own_record_seen |= view
            if not changed:
                self._answer_stale(incoming, self.local)
            return changed
        current = self._members.get(incoming.node_id)
        if current is None:
            return self._about_unlisted(incoming)
        if not _supersedes(incoming, current):
            self._answer_stale(incoming, current)
            if incoming.state is current.state is MemberState.SUSPECT and incoming.suspected_by is not None \
                    and incoming.incarnation == current.incarnation:
                self._confirm(incoming.node_id, incoming.suspected_by)
            return False
        self._store(incoming, current)
        return True

    def apply_many(self, updates: list[dict[str, Any]], *, view: bool = False) -> int:
        """Merge a batch, skipping (and counting in ``invalid_updates``) malformed ones.

        Returns how many changed our view. A batch that is not a list at all
        raises ``ValueError``. ``view``: see ``merge_view``.
        """
        if not isinstance(updates, list):
            raise ValueError("updates must be a list")
        if len(updates) > self.config.max_updates_per_message:
            raise ValueError(f"{len(updates)} member updates in one message (limit "
                             f"{self.config.max_updates_per_message}); refused whole")
        changed = 0
        for update in updates:
            try:
                changed += self.apply(update, view=view)
            except ValueError:
                self.invalid_updates += 1
        return changed

    def merge_view(self, updates: list[dict[str, Any]]) -> int:
        """Merge the full state a peer sent back to our own join or push-pull (``apply_many`` otherwise).

        The first such view holding our own record is refuted whatever its
        incarnation: a restarted node starts at 0 and the cluster may have
        seen it at any incarnation (one forged claim, refuted, raises it by
        ``max_incarnation_jump``), and only an incarnation past what the peers
        hold wins our identity back (issue 31: routed calls failed for minutes).
        Past that first view the jump bound holds again, for our record too;
        gossip, piggyback and views pushed at us unasked are bounded always.
        """
        return self.apply_many(updates, view=True)

    def _answer_stale(self, incoming: Member, known: Member) -> None:
        """Send our newer "alive" again when someone still spreads an older suspicion or death.

        The sender has not heard the refutation. In a big cluster under loss a
        refutation competes with newer suspicions for piggyback slots and stops
        being sent after its retransmits, while the suspicion it answers still
        circulates; a member it never reached then declares a live member dead.
        Queued afresh, the refutation goes out next, and on the ack to a ping
        straight back to the sender. Bounded: each stale message re-queues one record.
        """
        if incoming.state is not MemberState.ALIVE and known.state is MemberState.ALIVE \
                and incoming.incarnation < known.incarnation and known.node_id not in self._pending:
            wire = self._wire_of(known.node_id)
            if wire is not None:
                self._queue.put(wire)

    def _check_jump(self, incoming: Member) -> None:
        known = self._members.get(incoming.node_id) or self._tombstones.get(incoming.node_id)
        # A claim the member must refute (a suspicion or death; any claim about ourselves) is taken only if its
        # refutation, one higher, is within the bound too: else the peers still holding the known record would
        # refuse the refutation, and their views of the member part for good.
        refuted = incoming.node_id == self.local.node_id or incoming.state is not MemberState.ALIVE
        bound = self.config.max_incarnation_jump - refuted
        if known is not None and incoming.incarnation > known.incarnation + bound:
            raise ValueError(f"incarnation {incoming.incarnation} of {incoming.node_id} jumps more than "
                             f"{bound} past {known.incarnation}")

    def _about_local(self, incoming: Member) -> bool:
        local = self.local
        if local.state is MemberState.LEFT:
            return False  # we are leaving; nothing to defend
        if incoming.state is MemberState.ALIVE:
            threatened = incoming.incarnation > local.incarnation
        else:
            threatened = incoming.incarnation >= local.incarnation
        if not threatened:
            return False
        if incoming.incarnation >= self.config.max_incarnation:
            raise ValueError("a claim at the largest incarnation cannot be refuted; refused")
        # Only the node itself raises its incarnation, and only to refute.
        self._store(dataclasses.replace(local, incarnation=incoming.incarnation + 1), local)
        return True

    def _about_unlisted(self, incoming: Member) -> bool:
        tomb = self._tombstones.get(incoming.node_id)
        if tomb is not None and incoming.incarnation <= tomb.incarnation:
            return False  # stale gossip about a reaped member
        if incoming.state in _GONE:
            # News of a death we never saw alive: remember it only so a stale
            # "alive" cannot bring the member in later.
            self._bury(incoming)
            return False
        if len(self._members) >= self.config.max_members:
            raise ValueError(f"already listing {len(self._members)} members (limit {self.config.max_members})")
        if self.config.admission_timeout is not None:
            if len(self._pending) >= self.config.max_pending_members:
                raise ValueError(f"{len(self._pending)} members already wait for admission "
                                 f"(limit {self.config.max_pending_members})")
            self._pending[incoming.node_id] = self._clock()
        self._tombstones.pop(incoming.node_id, None)
        self._store(incoming, None)
        return True

    # -- local verdicts --------------------------------------------------

    def suspect(self, node_id: str) -> None:
        """Our failure detector got no ack: alive -> suspect at the same incarnation."""
        member = self._members.get(node_id)
        if member is None or node_id == self.local.node_id:
            return
        if member.state is MemberState.SUSPECT:
            self._confirm(node_id, self.local.node_id)  # we found it silent too: an independent confirmation
        elif member.state is MemberState.ALIVE:
            self._store(dataclasses.replace(member, state=MemberState.SUSPECT, suspected_by=self.local.node_id),
                        member)

    def _confirm(self, node_id: str, by: str) -> None:
        suspicion = self._suspicions.get(node_id)
        wire = self._wire_of(node_id)
        if suspicion is not None and wire is not None and suspicion.confirm(by):
            # Pass the confirmation on (as memberlist does): the other suspecters'
            # timers shrink only if they hear of it.
            self._queue.put({**wire, "by": by})

    def suspects(self) -> list[Member]:
        """The members suspected now."""
        return [member for node_id in self._timed if (member := self._members[node_id]).state is MemberState.SUSPECT]

    def suspicion_deadline(self, node_id: str) -> float | None:
        """When a suspect will be declared dead unless it refutes (None if it is not suspect)."""
        member = self._members.get(node_id)
        if member is None or member.state is not MemberState.SUSPECT:
            return None
        low = self.suspicion_timeout()
        suspicion = self._suspicions.get(node_id)
        if suspicion is None:
            return member.state_since + low
        return suspicion.expires(low, low * self.config.suspicion_max_mult)

    def mark_dead(self, node_id: str) -> None:
        """Declare a member dead at its current incarnation (suspicion expired)."""
        member = self._members.get(node_id)
        if member is None or node_id == self.local.node_id or member.state in _GONE:
            return
        self._store(dataclasses.replace(member, state=MemberState.DEAD), member)

    def leave(self) -> dict[str, Any]:
        """Mark ourselves as left and return the update to broadcast."""
        if self.local.state is not MemberState.LEFT:
            self._store(dataclasses.replace(self.local, state=MemberState.LEFT), self.local)
        return self._wire[self.local.node_id]

    def tick(self) -> None:
        """Promote expired suspects to dead; reap long-dead members to tombstones."""
        now = self._clock()
        if self.config.admission_timeout is not None:
            for node_id, since in list(self._pending.items()):
                if now - since >= self.config.admission_timeout:
                    self._forget_pending(node_id)
        for member in [self._members[node_id] for node_id in self._timed]:
            if member.state is MemberState.SUSPECT:
                deadline = self.suspicion_deadline(member.node_id)
                if deadline is not None and now >= deadline:
                    self.mark_dead(member.node_id)
            elif member.state in _GONE and now - member.state_since >= self.config.dead_member_reap:
                del self._members[member.node_id]
                self._wire.pop(member.node_id, None)
                self._timed.discard(member.node_id)
                self._forget_verdicts(member.node_id)
                self._bury(member)

    # -- dissemination ---------------------------------------------------

    def take_piggyback(self) -> list[dict[str, Any]]:
        """Up to ``max_piggyback`` queued updates for one outgoing message."""
        return self._queue.take(self.config.max_piggyback, self.max_transmits(), self.local.node_id)

    def pending_broadcasts(self) -> int:
        """How many updates are still waiting to be piggybacked."""
        return len(self._queue)

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(member, old_state)`` on every accepted change (old_state None: new member).

        A change may keep the state and raise the incarnation (a refutation,
        or a restarted node with a new address).
        """
        self._listeners.append(fn)

    def _forget_pending(self, node_id: str) -> None:
        # Never admitted, so never relayed: forgetting it leaves no trace to clean up elsewhere.
        del self._pending[node_id]
        del self._members[node_id]
        self._wire.pop(node_id, None)
        self._timed.discard(node_id)
        self._forget_verdicts(node_id)

    def _forget_verdicts(self, node_id: str) -> None:
        self.suspicions.pop(node_id, None)
        self.deaths.pop(node_id, None)

    def _store(self, member: Member, previous: Member | None) -> None:
        old_state = previous.state if previous is not None else None
        was_routable = old_state in _ROUTABLE and member.node_id not in self._pending
        if member.state in _GONE:
            self._pending.pop(member.node_id, None)  # a death needs no admission; it is reaped like any other
        pending = member.node_id in self._pending
        # A new suspicion (even at a higher incarnation) restarts the timer;
        # an alive member that refuted keeps its "alive since".
        if previous is not None and member.state is old_state is not MemberState.SUSPECT:
            member.state_since = previous.state_since
        else:
            member.state_since = self._clock()
        self._routable += (member.state in _ROUTABLE and not pending) - was_routable
        if member.state is not MemberState.ALIVE and member.node_id != self.local.node_id:
            self._timed.add(member.node_id)
        else:
            self._timed.discard(member.node_id)
        if member.state is not MemberState.SUSPECT:
            self._suspicions.pop(member.node_id, None)
        elif previous is None or previous.state is not MemberState.SUSPECT \
                or previous.incarnation != member.incarnation:
            # memberlist's k: expect confirmations only from members that are not the suspect or us.
            k = self.config.suspicion_confirmations
            self._suspicions[member.node_id] = Suspicion(
                member.state_since, member.suspected_by, k if self._routable - 2 >= k else 0)
            self.suspicions[member.node_id] += 1
        if member.state is MemberState.DEAD and old_state is not MemberState.DEAD:
            self.deaths[member.node_id] += 1
        self._members[member.node_id] = member
        wire = self._wire[member.node_id] = member.to_wire()
        if member.node_id == self.local.node_id:
            self.local = member
        if not pending:  # a member no one has heard from itself is not news we vouch for
            self._queue.put(wire)
        for fn in self._listeners:
            fn(member, old_state)

    def _wire_of(self, node_id: str) -> dict[str, Any] | None:
        wire = self._wire.get(node_id)
        if wire is None and node_id in self._members:
            wire = self._wire[node_id] = self._members[node_id].to_wire()
        return wire

    def _bury(self, member: Member) -> None:
        self._tombstones.pop(member.node_id, None)
        self._tombstones[member.node_id] = member
        while len(self._tombstones) > self.config.max_tombstones:
            self._tombstones.popitem(last=False)


def _supersedes(incoming: Member, current: Member) -> bool:
    if incoming.incarnation != current.incarnation:
        return incoming.incarnation > current.incarnation
    return _RANK[incoming.state] > _RANK[current.state]
