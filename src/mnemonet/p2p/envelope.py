"""The one envelope codec for every peer message.

On the wire an envelope is its tag, 64 hex characters of HMAC-SHA256 keyed
with the cluster key, followed by the envelope's JSON: the tag covers those
exact bytes, every field and the timestamp included, so nothing has to be
re-serialised to check it. Decoding checks, in order: size, tag, JSON shape,
every field, freshness, and replays (a bounded cache of ids seen within the
freshness window).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mnemonet.model.errors import MnemonetError

VERSION = 1
_ID_RE = re.compile(r"^[A-Za-z0-9_.:@\-]{1,128}$")
_METHOD_RE = re.compile(r"^[a-z][a-z_.]{0,63}$")


class Kind(StrEnum):
    """Every kind of peer message."""

    JOIN = "join"
    WELCOME = "welcome"
    GOSSIP = "gossip"
    PUSH_PULL = "push_pull"
    REQUEST = "request"
    RESPONSE = "response"
    EVENT = "event"
    PING = "ping"
    PING_REQ = "ping_req"
    ACK = "ack"
    LEAVE = "leave"


class EnvelopeError(MnemonetError):
    """A refused envelope; ``code`` is one of too_large, malformed, invalid, bad_tag, stale, replay."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class Envelope(BaseModel):
    """One peer message. ``reply_to`` names the envelope this one answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    kind: Kind
    sender: str
    target: str | None = None
    ttl: int = Field(1, ge=0, le=64)
    ts: float = Field(default_factory=time.time)
    reply_to: str | None = None
    method: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_validator("version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != VERSION:
            raise ValueError(f"unsupported version {v}")
        return v

    @field_validator("id", "sender", "target", "reply_to")
    @classmethod
    def _ids(cls, v: str | None) -> str | None:
        if v is not None and not _ID_RE.match(v):
            raise ValueError("ids must be 1-128 characters of letters, digits, '_', '.', ':', '@' or '-'")
        return v

    @field_validator("method")
    @classmethod
    def _method(cls, v: str | None) -> str | None:
        if v is not None and not _METHOD_RE.match(v):
            raise ValueError("method must be a lower-case dotted name")
        return v

    def reply(self, kind: Kind, sender: str, payload: dict[str, Any]) -> Envelope:
        """An envelope answering this one."""
        return Envelope(kind=kind, sender=sender, target=self.sender, reply_to=self.id, payload=payload)


TAG_CHARS = 64  # hex HMAC-SHA256
_HEX = frozenset(b"0123456789abcdef")


def _tag(body: bytes, key: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode()


def encode(env: Envelope, key: bytes) -> bytes:
    """The wire form of ``env``: its hex tag, then its JSON (the exact bytes the tag covers)."""
    body = env.model_dump_json().encode()
    return _tag(body, key) + body


def _body(raw: bytes) -> bytes | None:
    if len(raw) <= TAG_CHARS or not _HEX.issuperset(raw[:TAG_CHARS]):
        return None
    return raw[TAG_CHARS:]


class ReplayCache:
    """Envelope ids seen recently; bounded in size and in age (older ids are refused as stale anyway)."""

    def __init__(self, max_entries: int, max_age: float) -> None:
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._max_entries = max_entries
        self._max_age = max_age

    def check_and_add(self, envelope_id: str, now: float) -> bool:
        """True when the id is new (and is now remembered), False for a replay."""
        while self._seen:
            oldest_id, seen_at = next(iter(self._seen.items()))
            if now - seen_at <= 2 * self._max_age and len(self._seen) < self._max_entries:
                break
            del self._seen[oldest_id]
        if envelope_id in self._seen:
            return False
        self._seen[envelope_id] = now
        return True


def decode(
    raw: bytes | str,
    key: bytes,
    now: float,
    *,
    max_bytes: int,
    max_age: float,
    replay: ReplayCache | None = None,
) -> Envelope:
    """Authenticate and validate ``raw``; raise ``EnvelopeError`` naming what is wrong.

    The tag is checked before the body is parsed, so unauthenticated bytes are never interpreted.
    """
    if isinstance(raw, str):
        raw = raw.encode()
    if len(raw) > max_bytes:
        raise EnvelopeError("too_large", f"envelope of {len(raw)} bytes exceeds {max_bytes}")
    body = _body(raw)
    if body is None:
        raise EnvelopeError("malformed", "not an envelope: it must start with a 64-character hex tag")
    if not hmac.compare_digest(raw[:TAG_CHARS], _tag(body, key)):
        raise EnvelopeError("bad_tag", "authentication tag does not match (wrong cluster key?)")
    try:
        env = Envelope.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] in ("json_invalid", "model_type"):
            raise EnvelopeError("malformed", f"body is not a JSON object: {first['msg']}") from None
        where = ".".join(str(p) for p in first["loc"]) or "envelope"
        raise EnvelopeError("invalid", f"{where}: {first['msg']}") from None
    if abs(now - env.ts) > max_age:
        raise EnvelopeError("stale", f"timestamp is {now - env.ts:.1f}s off (limit {max_age}s)")
    if replay is not None and not replay.check_and_add(env.id, now):
        raise EnvelopeError("replay", f"envelope {env.id} was already received")
    return env


class Codec:
    """The codec bound to one node: its key, limits, replay cache and counts of refused envelopes."""

    def __init__(
        self, key: str, *, max_bytes: int, max_age: float, replay_entries: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key.encode()
        self.max_bytes = max_bytes
        self._max_age = max_age
        self._clock = clock
        self._replay = ReplayCache(replay_entries, max_age)
        self.refused: Counter[str] = Counter()

    @property
    def key(self) -> bytes:
        """The cluster key (the link handshake proves it too)."""
        return self._key

    def encode(self, env: Envelope) -> bytes:
        """Tag and serialise ``env``."""
        return encode(env, self._key)

    def decode(self, raw: bytes | str) -> Envelope:
        """Decode ``raw``, counting a refusal by its code before re-raising it."""
        try:
            return decode(raw, self._key, self._clock(), max_bytes=self.max_bytes,
                          max_age=self._max_age, replay=self._replay)
        except EnvelopeError as exc:
            self.refused[exc.code] += 1
            raise
