"""The dashboard's live state: one hub per node, fanning membership and write events out to browsers.

The hub collects write events into a bounded feed from the node's start, so
a dashboard opened after a burst of writes shows them; what costs a store
read (each event's preview) waits until a dashboard is connected. It follows
membership from the first connection, and pushes to each connection through
its own bounded queue so a slow browser never holds up the node.

An erasure (``forget``) leaves no erased text behind on the dashboards: the
previews of the space's feed are dropped and read again, and each dashboard of
the space is sent a fresh snapshot, whose previews no longer find what is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Protocol

from mnemonet.model.api import MemoryAPI
from mnemonet.model.spaces import DEFAULT_SPACE
from mnemonet.model.views import StatementView
from mnemonet.p2p.errors import P2PError
from mnemonet.p2p.membership import Member, MemberState
from mnemonet.p2p.routing import PeerLoad
from mnemonet.p2p.tokens import TokenVerifier
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

# Pushed in place of a backlog a connection could not keep up with: "send a fresh snapshot".
RESYNC: dict[str, Any] = {"type": "resync"}

# The write event ``forget`` floods (``p2p/registry.py``).
ERASURE = "erasure"
# What a tombstone's kind says was erased (a tombstone never says what it was).
_ERASED = {"observation": "an observation", "source": "a source", "space": "the space"}


class _Membership(Protocol):
    def members(self, include_dead: bool = False) -> list[Member]: ...

    def add_listener(self, fn: Callable[[Member, MemberState | None], None]) -> None: ...


class _Events(Protocol):
    def subscribe(self, listener: Callable[[dict[str, Any]], Any]) -> Callable[[], None]: ...


class _Router(Protocol):
    def load_of(self, node_id: str) -> PeerLoad | None: ...


class _RpcServer(Protocol):
    @property
    def in_flight(self) -> int: ...


class DashboardNode(Protocol):
    """What the dashboard reads from a started ``PeerNode``."""

    # Read-only properties, not attributes: a protocol's attribute must match the node's type exactly, a
    # property only needs the node's value to be one (PeerNode.client is a P2PMemoryClient, say).
    @property
    def node_id(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def tokens(self) -> TokenVerifier: ...

    @property
    def client(self) -> MemoryAPI: ...

    @property
    def events(self) -> _Events: ...

    @property
    def rpc_server(self) -> _RpcServer: ...

    @property
    def membership(self) -> _Membership: ...

    @property
    def router(self) -> _Router: ...


class TooManyClients(Exception):
    """The node already serves ``ui_max_clients`` dashboards."""


class DashboardClient:
    """One connected dashboard: a bounded queue of messages to send it."""

    def __init__(self, size: int, space: str = DEFAULT_SPACE) -> None:
        self.space = space  # the memory space it shows
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(max(1, size))
        self._resyncing = False

    def push(self, message: dict[str, Any]) -> None:
        """Queue ``message``; a full queue is dropped and replaced by one ``RESYNC``."""
        if self._resyncing:
            return  # the snapshot it will get includes this
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.resync()

    def resync(self) -> None:
        """Drop what is queued: the connection is sent one fresh snapshot instead."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(RESYNC)
        self._resyncing = True

    async def next_message(self) -> dict[str, Any]:
        """The next queued message; after ``RESYNC`` the caller must send a fresh snapshot."""
        message = await self.queue.get()
        if message is RESYNC:
            # Updates from here on are not in the snapshot the caller is about to take: queue them again.
            self._resyncing = False
        return message


def item_text(item: dict[str, Any]) -> str:
    """One line for an item returned by ``MemoryAPI.load`` (a retraction and a tombstone come as graph nodes)."""
    if item.get("kind") == "statement":
        return StatementView.model_validate(item).sentence()
    if item.get("label") == "Retraction":
        return f"retracted by {item.get('source') or '?'}: {item.get('reason', '')}"
    if item.get("label") == "Tombstone":
        erased = _ERASED.get(str(item.get("tombstone_kind")), "items")
        return (f"{item.get('by') or '?'} erased {erased}: {item.get('observations', 0)} observations, "
                f"{item.get('statements', 0)} statements")
    return str(item.get("text") or item.get("name") or item.get("id", ""))


class DashboardHub:
    """Membership, write events and store counters of one node, pushed to its dashboards."""

    def __init__(self, node: DashboardNode) -> None:
        self._node = node
        self._settings = node.settings
        self._clients: set[DashboardClient] = set()
        self._feed: deque[dict[str, Any]] = deque(maxlen=max(1, self._settings.ui_feed_size))
        self._attached = False
        self._dirty = False
        # Erasures seen per space: a preview read before the latest one of its space may quote what it erased.
        self._erasures: Counter[str] = Counter()
        self._refresher: asyncio.Task[None] | None = None
        node.events.subscribe(self._on_event)  # from the start: the feed is there before the first viewer

    # -- connections ------------------------------------------------------------------
    def connect(self, space: str = DEFAULT_SPACE) -> DashboardClient:
        """Register a dashboard connection showing ``space``; ``TooManyClients`` past the limit."""
        if len(self._clients) >= self._settings.ui_max_clients:
            raise TooManyClients(f"this node serves at most {self._settings.ui_max_clients} dashboards")
        self._attach()
        client = DashboardClient(self._settings.ui_client_queue, space)
        self._clients.add(client)
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.create_task(self._refresh_loop(), name=f"dashboard-{self._node.node_id}")
        return client

    async def disconnect(self, client: DashboardClient) -> None:
        """Forget a connection; the refresh loop stops with the last one."""
        self._clients.discard(client)
        if not self._clients and self._refresher is not None:
            task, self._refresher = self._refresher, None
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _attach(self) -> None:
        if self._attached:
            return
        self._attached = True
        # Membership keeps its listeners for the node's life: attach once (it exists once the node started).
        self._node.membership.add_listener(self._on_member)

    def _broadcast(self, message: dict[str, Any], space: str | None = None) -> None:
        """Push to every dashboard, or only to those showing ``space``."""
        for client in list(self._clients):
            if space is None or client.space == space:
                client.push(message)

    # -- what is shown ----------------------------------------------------------------
    async def snapshot(self, space: str = DEFAULT_SPACE) -> dict[str, Any]:
        """Everything a dashboard of ``space`` shows, sent on connect and after a resync."""
        node = self._node
        feed = [entry for entry in self._feed if entry.get("space", DEFAULT_SPACE) == space]
        for entry in feed:
            if entry["items"] is None:  # collected while no one watched, or since an erasure: preview it now
                await self._preview_entry(entry, space)
        return {
            "type": "snapshot",
            "node": {"node_id": node.node_id, "url": node.url, "capabilities": sorted(node.capabilities)},
            "members": self.members(),
            "feed": feed,
            **await self.store_view(space),
        }

    def members(self) -> list[dict[str, Any]]:
        """The members worth showing, with their load as seen from here.

        Dead ones stay until reaped (a crash is worth seeing), except one whose address a live member now
        serves: that node restarted under a new id. Members that left said goodbye (an MCP client that
        exited, a node stopped on purpose) and are not listed.
        """
        known = self._node.membership.members(include_dead=True)
        live_urls = {m.url for m in known if m.state in (MemberState.ALIVE, MemberState.SUSPECT)}
        return [self._member_view(m) for m in known
                if m.state is not MemberState.LEFT and not (m.state is MemberState.DEAD and m.url in live_urls)]

    def _member_view(self, member: Member) -> dict[str, Any]:
        local = member.node_id == self._node.node_id
        if local:
            # Our own load is what we serve; a peer's is what we have asked of it.
            load: dict[str, Any] = {"in_flight": self._node.rpc_server.in_flight, "latency_ms": None}
        else:
            peer = self._node.router.load_of(member.node_id)
            latency = peer.latency if peer is not None else None
            load = {"in_flight": peer.in_flight if peer is not None else 0,
                    "latency_ms": round(latency * 1000, 1) if latency is not None else None}
        return {"node_id": member.node_id, "url": member.url, "capabilities": sorted(member.capabilities),
                "state": member.state.value, "incarnation": member.incarnation, "local": local, "load": load}

    async def store_view(self, space: str = DEFAULT_SPACE) -> dict[str, Any]:
        """Counters and open contradictions of ``space`` from a store peer; a notice instead when none answers."""
        client = self._node.client
        in_space = None if space == DEFAULT_SPACE else space
        try:
            stats = await client.stats(space=in_space)
            contradictions = await client.get_unresolved_contradictions(self._settings.ui_contradictions_limit,
                                                                        space=in_space)
        except (P2PError, ValueError) as exc:
            return {"stats": None, "contradictions": [], "notice": f"store unavailable: {exc}"}
        return {"stats": stats, "contradictions": [c.model_dump(mode="json") for c in contradictions],
                "notice": None}

    # -- updates ----------------------------------------------------------------------
    def _on_member(self, member: Member, old: MemberState | None) -> None:
        # The whole list: one change can hide another entry (a restarted node's dead one, a member that left).
        self._broadcast({"type": "members", "members": self.members()})

    async def _on_event(self, event: dict[str, Any]) -> None:
        self._dirty = True
        space = event.get("space", DEFAULT_SPACE)
        entry: dict[str, Any] = {**event, "items": None}
        self._feed.append(entry)
        if event["type"] == ERASURE:
            self._erased(space)
            return
        if not self._clients:
            return
        if await self._preview_entry(entry, space):
            self._broadcast({"type": "event", "event": entry}, space)

    def _erased(self, space: str) -> None:
        # Which items went is not said (the ids would name erased content): every preview of the space is read
        # again, by the fresh snapshot each of its dashboards is sent now.
        self._erasures[space] += 1
        for entry in self._feed:
            if entry.get("space", DEFAULT_SPACE) == space:
                entry["items"] = None
        for client in list(self._clients):
            if client.space == space:
                client.resync()

    async def _preview_entry(self, entry: dict[str, Any], space: str) -> bool:
        """Read ``entry``'s preview; False (and none kept) when an erasure in ``space`` came meanwhile: the snapshot
        it sends each dashboard of the space reads it again."""
        erasures = self._erasures[space]
        items = await self._preview(entry["ids"], space)
        if erasures != self._erasures[space]:
            return False
        entry["items"] = items
        return True

    async def _preview(self, ids: list[str], space: str) -> list[dict[str, str]]:
        wanted = ids[: self._settings.ui_event_preview_ids]
        if not wanted:
            return []
        try:
            items = await self._node.client.load(wanted, space=None if space == DEFAULT_SPACE else space)
        except (P2PError, ValueError) as exc:
            log.debug("dashboard could not load %s: %s", wanted, exc)
            return []
        return [{"id": str(i.get("id", "")), "kind": str(i.get("kind", "")), "text": item_text(i)} for i in items]

    async def _refresh_loop(self) -> None:
        # Load figures change without membership events, and counters after writes: poll both gently.
        while True:
            await asyncio.sleep(self._settings.ui_refresh_interval)
            self._broadcast({"type": "members", "members": self.members()})
            if self._dirty:
                self._dirty = False
                for space in {client.space for client in self._clients}:
                    self._broadcast({"type": "store", **await self.store_view(space)}, space)
