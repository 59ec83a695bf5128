"""Link set-up: each side proves it holds the cluster key with a fresh challenge, before any envelope flows.

A signed envelope proves who wrote it, not who sits at the other end of a
socket: a node once learned a link's peer from the first envelope on it, so a
signed reply captured from one node and replayed to another bound the
attacker's socket to the first node's identity. Now both sides contribute a
random nonce and answer with HMAC(cluster key, direction, both nonces, both
node ids); a proof covers the other side's fresh nonce, so no earlier proof
fits, and the direction keeps the acceptor's proof from serving as a dialler's.

The three messages (JSON, one WebSocket frame each)::

    dialler  -> acceptor  {"hello": 1, "node_id": D, "target": A, "nonce": Nd}
    acceptor -> dialler   {"node_id": A, "nonce": Na, "proof": P("accept")}
    dialler  -> acceptor  {"proof": P("dial")}

The dialler checks the acceptor's proof before it sends its own, so an
impostor acceptor learns nothing it could replay. A failed handshake ends in
a close code (``POLICY``), never in a reply an attacker could reuse. Without a
cluster key (the keyless demo) the same exchange runs with an empty key: it
proves nothing, as every envelope there proves nothing.

Sockets wait in their handshake in slots of their own, and a stranger who
keeps re-opening idle sockets must not take the slots a peer needs to link
(issue 31: 8 idle sockets made 8 of 8 keyed link attempts fail with 403). So
the dialler shows the key already in its upgrade request: a ticket
(``TICKET_HEADER``), HMAC(cluster key, dialler, target, time, nonce), fresh
within the envelopes' own clock window and good once. A socket with a valid
ticket waits in the peers' slots, any other in the strangers'; the handshake
that follows is the same for both, and a ticket holder must then prove to be
the dialler its ticket names.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from typing import Any

from mnemonet.model.jsontext import nested_deeper
from mnemonet.p2p.envelope import ReplayCache
from mnemonet.p2p.links import Link, LinkClosed

POLICY = 1008  # WebSocket close code: policy violation
MAX_FRAME_BYTES = 1024  # handshake frames are a few hundred bytes; anything larger is not one
_NONCE_RE = re.compile(r"[0-9a-f]{32}")
_ID_RE = re.compile(r"[A-Za-z0-9_.:@\-]{1,128}")  # the envelope codec's id syntax: no '|' to confuse the MAC input


class HandshakeFailed(ConnectionError):
    """The other side did not prove it holds the cluster key (or broke the protocol)."""


TICKET_HEADER = "x-mnemonet-link-ticket"


def ticket(key: bytes, dialler: str, target: str, now: float) -> str:
    """The upgrade request's proof that ``dialler`` holds the key, for ``target`` at time ``now``."""
    stamp, nonce = f"{now:.3f}", new_nonce()
    return " ".join((dialler, stamp, nonce, _ticket_mac(key, dialler, target, stamp, nonce)))


def _ticket_mac(key: bytes, dialler: str, target: str, stamp: str, nonce: str) -> str:
    message = "|".join(("mnemonet-link-ticket-v1", dialler, target, stamp, nonce))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def ticket_holder(value: str | None, key: bytes, node_id: str, now: float, max_age: float,
                  seen: ReplayCache) -> str | None:
    """The dialler a ticket was made for, if it is valid for this node now and not seen before; else None."""
    parts = (value or "").split(" ")
    if len(parts) != 4:
        return None
    dialler, stamp, nonce, mac = parts
    if not _ID_RE.fullmatch(dialler) or not _NONCE_RE.fullmatch(nonce):
        return None
    try:
        age = abs(now - float(stamp))
    except ValueError:
        return None
    if not age <= max_age or not _matches(mac, _ticket_mac(key, dialler, node_id, stamp, nonce)):
        return None
    return dialler if seen.check_and_add(nonce, now) else None


def new_nonce() -> str:
    """128 random bits, hex."""
    return secrets.token_hex(16)


def proof(key: bytes, direction: str, dial_nonce: str, accept_nonce: str, dialler: str, acceptor: str) -> str:
    """HMAC-SHA256 over everything both sides agreed on; ``direction`` is ``dial`` or ``accept``."""
    message = "|".join(("mnemonet-link-v1", direction, dial_nonce, accept_nonce, dialler, acceptor))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


async def _receive(link: Link) -> dict[str, Any]:
    data = await link.receive()
    if data is None:
        raise HandshakeFailed("the peer closed the link during the handshake")
    if len(data) > MAX_FRAME_BYTES:
        raise HandshakeFailed(f"handshake frame of {len(data)} bytes (limit {MAX_FRAME_BYTES})")
    if nested_deeper(data if isinstance(data, str) else data.decode("utf-8", errors="replace")):
        raise HandshakeFailed("handshake frame nests too deeply")
    try:
        message = json.loads(data)
    except ValueError:
        raise HandshakeFailed("handshake frame is not JSON") from None
    if not isinstance(message, dict):
        raise HandshakeFailed("handshake frame is not a JSON object")
    return message


def _field(message: dict[str, Any], name: str, pattern: re.Pattern[str]) -> str:
    value = message.get(name)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise HandshakeFailed(f"handshake field {name!r} is missing or malformed")
    return value


def _matches(given: object, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())


async def _send(link: Link, message: dict[str, Any], timeout: float) -> None:
    try:
        await link.send(json.dumps(message).encode(), timeout)
    except LinkClosed as exc:
        raise HandshakeFailed(str(exc)) from None


async def dial(link: Link, key: bytes, node_id: str, peer_id: str, send_timeout: float) -> None:
    """Prove ``link`` reaches ``peer_id`` and prove ourselves to it; ``HandshakeFailed`` otherwise."""
    dial_nonce = new_nonce()
    await _send(link, {"hello": 1, "node_id": node_id, "target": peer_id, "nonce": dial_nonce}, send_timeout)
    challenge = await _receive(link)
    if challenge.get("node_id") != peer_id:
        raise HandshakeFailed(f"expected {peer_id}, the link reached {challenge.get('node_id')!r}")
    accept_nonce = _field(challenge, "nonce", _NONCE_RE)
    expected = proof(key, "accept", dial_nonce, accept_nonce, node_id, peer_id)
    if not _matches(challenge.get("proof"), expected):
        raise HandshakeFailed(f"{peer_id} did not prove it holds the cluster key")
    await _send(link, {"proof": proof(key, "dial", dial_nonce, accept_nonce, node_id, peer_id)}, send_timeout)


async def accept(link: Link, key: bytes, node_id: str, send_timeout: float) -> str:
    """Serve the handshake on an accepted ``link``; the proven peer id, or ``HandshakeFailed``."""
    hello = await _receive(link)
    if type(hello.get("hello")) is not int or hello["hello"] != 1:  # True == 1 in Python; not a version
        raise HandshakeFailed("the first frame on a link must be a hello")
    peer_id = _field(hello, "node_id", _ID_RE)
    dial_nonce = _field(hello, "nonce", _NONCE_RE)
    if hello.get("target") != node_id:
        raise HandshakeFailed(f"hello for {hello.get('target')!r} reached {node_id}")
    if peer_id == node_id:
        raise HandshakeFailed("a node does not link to itself")
    accept_nonce = new_nonce()
    await _send(link, {"node_id": node_id, "nonce": accept_nonce,
                       "proof": proof(key, "accept", dial_nonce, accept_nonce, peer_id, node_id)}, send_timeout)
    answer = await _receive(link)
    expected = proof(key, "dial", dial_nonce, accept_nonce, peer_id, node_id)
    if not _matches(answer.get("proof"), expected):
        raise HandshakeFailed(f"the peer claiming to be {peer_id} did not prove it holds the cluster key")
    return peer_id
