"""Write events flooded through the neighbour links, delivered once to each local listener.

An event names what a store node wrote and in which memory space
(``{"type": "observation", "ids": [...], "space": "default"}``): an observation,
a claim, a retraction or an erasure (``p2p/registry.py`` says which call floods which).
It travels with a TTL; each node forwards it to its neighbours (except the
one it came from) with the TTL lowered, and drops ids it has already seen.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mnemonet.model.errors import InvalidInput
from mnemonet.model.spaces import DEFAULT_SPACE, check_space
from mnemonet.p2p.envelope import Envelope, Kind
from mnemonet.p2p.transport import PeerUnavailable, Transport

log = logging.getLogger(__name__)

EVENT_TYPES = frozenset({"observation", "claim", "retraction", "erasure"})
MAX_EVENT_IDS = 1000
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")

Listener = Callable[[dict[str, Any]], Awaitable[None] | None]


def _validate(payload: dict[str, Any]) -> dict[str, Any]:
    event_id, kind, ids, origin = (payload.get(k) for k in ("event_id", "type", "ids", "origin"))
    if not isinstance(event_id, str) or not _ID_RE.match(event_id):
        raise InvalidInput("event_id: must be an id string")
    if kind not in EVENT_TYPES:
        raise InvalidInput(f"type: must be one of {sorted(EVENT_TYPES)}")
    if not isinstance(ids, list) or len(ids) > MAX_EVENT_IDS \
            or not all(isinstance(i, str) and _ID_RE.match(i) for i in ids):
        raise InvalidInput(f"ids: must be a list of at most {MAX_EVENT_IDS} ids")
    if not isinstance(origin, str):
        raise InvalidInput("origin: must be a node id")
    # Nodes from before spaces send none: their writes were all in the default space.
    space = check_space(payload.get("space", DEFAULT_SPACE))
    return {"event_id": event_id, "type": kind, "ids": list(ids), "origin": origin, "ts": payload.get("ts"),
            "space": space}


class EventBus:
    """Publishes this node's write events and delivers everyone's to local subscribers once each."""

    def __init__(self, node_id: str, transport: Transport, ttl: int, dedup_size: int) -> None:
        self._node_id = node_id
        self._transport = transport
        self._ttl = ttl
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._dedup_size = dedup_size
        self._listeners: list[Listener] = []
        self.delivered = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` once per event (sync or async); returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def publish(self, event_type: str, ids: list[str], space: str = DEFAULT_SPACE) -> str:
        """Announce a write in ``space`` to the network and to local listeners; returns the event id."""
        event = _validate({"event_id": uuid.uuid4().hex, "type": event_type, "ids": ids,
                           "origin": self._node_id, "ts": time.time(), "space": space})
        self._first_sight(event["event_id"])
        self._deliver(event)
        await self._forward(event, self._ttl, came_from=None)
        return event["event_id"]

    async def handle(self, env: Envelope) -> None:
        """An event from a neighbour: deliver and forward it unless already seen."""
        event = _validate(env.payload)
        if not self._first_sight(event["event_id"]):
            return
        self._deliver(event)
        if env.ttl > 1:
            await self._forward(event, env.ttl - 1, came_from=env.sender)

    def _first_sight(self, event_id: str) -> bool:
        if event_id in self._seen:
            return False
        self._seen[event_id] = None
        while len(self._seen) > self._dedup_size:
            self._seen.popitem(last=False)
        return True

    def _deliver(self, event: dict[str, Any]) -> None:
        self.delivered += 1
        for listener in list(self._listeners):
            try:
                result = listener(dict(event))
                if inspect.isawaitable(result):
                    # A slow subscriber must not hold up flooding.
                    self._transport.spawn(self._await_listener(result), "event-listener")
            except Exception as exc:
                log.exception("event listener failed: %s", exc)

    async def _await_listener(self, awaitable: Awaitable[None]) -> None:
        try:
            await awaitable
        except Exception as exc:
            log.exception("event listener failed: %s", exc)

    async def _forward(self, event: dict[str, Any], ttl: int, came_from: str | None) -> None:
        # A fresh envelope per hop: the envelope id is for replay refusal, the event id for de-duplication.
        links = [link for link in self._transport.links()
                 if link.peer_id not in (came_from, event["origin"])]
        envs = [Envelope(kind=Kind.EVENT, sender=self._node_id, target=link.peer_id, ttl=ttl, payload=event)
                for link in links]
        sends = (self._transport.send_on(link, env) for link, env in zip(links, envs, strict=True))
        results = await asyncio.gather(*sends, return_exceptions=True)
        for link, result in zip(links, results, strict=True):
            if isinstance(result, PeerUnavailable):
                log.debug("event not forwarded to %s: %s", link.peer_id, result)
            elif isinstance(result, BaseException):
                raise result
