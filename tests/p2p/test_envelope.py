"""The envelope codec: round trip, and every way an envelope is refused."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from mnemonet.p2p.envelope import (
    TAG_CHARS,
    Codec,
    Envelope,
    EnvelopeError,
    Kind,
    ReplayCache,
    decode,
    encode,
)

KEY = b"k1"
LIMIT = 10_000


def _decode(raw: bytes, key: bytes = KEY, now: float | None = None, replay: ReplayCache | None = None) -> Envelope:
    env_ts = json.loads(raw[TAG_CHARS:])["ts"] if now is None else now
    return decode(raw, key, env_ts, max_bytes=LIMIT, max_age=30.0, replay=replay)


def _tagged(body: dict, key: bytes = KEY) -> bytes:
    raw = json.dumps(body).encode()
    return hmac.new(key, raw, hashlib.sha256).hexdigest().encode() + raw


def test_round_trip_keeps_every_field() -> None:
    env = Envelope(kind=Kind.REQUEST, sender="a", target="b", ttl=3, method="llm.answer",
                   payload={"kwargs": {"query": "q", "memory": [["1", "x"]]}, "n": 1.5})
    assert _decode(encode(env, KEY)) == env


def test_tampered_payload_is_refused() -> None:
    raw = encode(Envelope(kind=Kind.GOSSIP, sender="a", payload={"updates": []}), KEY)
    tampered = raw.replace(b'"updates":[]', b'"updates":[1]')
    with pytest.raises(EnvelopeError) as err:
        _decode(tampered)
    assert err.value.code == "bad_tag"


def test_wrong_key_is_refused() -> None:
    raw = encode(Envelope(kind=Kind.PING, sender="a"), b"other key")
    with pytest.raises(EnvelopeError) as err:
        _decode(raw)
    assert err.value.code == "bad_tag"


def test_missing_tag_is_refused() -> None:
    body = encode(Envelope(kind=Kind.PING, sender="a"), KEY)[TAG_CHARS:]
    with pytest.raises(EnvelopeError) as err:
        _decode(body, now=0.0)
    assert err.value.code == "malformed"


def test_oversize_is_refused_before_parsing() -> None:
    raw = encode(Envelope(kind=Kind.EVENT, sender="a", payload={"x": "y" * LIMIT}), KEY)
    with pytest.raises(EnvelopeError) as err:
        _decode(raw)
    assert err.value.code == "too_large"


@pytest.mark.parametrize("raw", [b"\x00\xff garbage", b"[1, 2]", b"", b"0" * 64])
def test_garbage_is_malformed(raw: bytes) -> None:
    with pytest.raises(EnvelopeError) as err:
        decode(raw, KEY, 0.0, max_bytes=LIMIT, max_age=30.0)
    assert err.value.code == "malformed"


@pytest.mark.parametrize("body", [b"[1, 2]", b"{\"kind\": ", b"not json"])
def test_authentic_but_unparsable_body_is_malformed(body: bytes) -> None:
    raw = hmac.new(KEY, body, hashlib.sha256).hexdigest().encode() + body
    with pytest.raises(EnvelopeError) as err:
        decode(raw, KEY, 0.0, max_bytes=LIMIT, max_age=30.0)
    assert err.value.code == "malformed"


@pytest.mark.parametrize("field,value", [
    ("kind", "shout"), ("sender", "not an id!"), ("ttl", -1), ("ttl", 1000), ("version", 2),
    ("method", "__class__"), ("payload", [1]), ("extra", 1),
])
def test_invalid_fields_are_refused_even_when_tagged(field: str, value: object) -> None:
    data = json.loads(encode(Envelope(kind=Kind.PING, sender="a"), KEY)[TAG_CHARS:])
    data[field] = value
    # Tagged correctly, so only field validation can refuse it.
    with pytest.raises(EnvelopeError) as err:
        decode(_tagged(data), KEY, data["ts"], max_bytes=LIMIT, max_age=30.0)
    assert err.value.code == "invalid"


def test_stale_and_future_timestamps_are_refused() -> None:
    env = Envelope(kind=Kind.PING, sender="a", ts=1000.0)
    raw = encode(env, KEY)
    for now in (1031.0, 969.0):
        with pytest.raises(EnvelopeError) as err:
            _decode(raw, now=now)
        assert err.value.code == "stale"
    assert _decode(raw, now=1029.0) == env


def test_replay_is_refused() -> None:
    replay = ReplayCache(max_entries=100, max_age=30.0)
    raw = encode(Envelope(kind=Kind.PING, sender="a"), KEY)
    _decode(raw, replay=replay)
    with pytest.raises(EnvelopeError) as err:
        _decode(raw, replay=replay)
    assert err.value.code == "replay"


def test_replay_cache_is_bounded() -> None:
    replay = ReplayCache(max_entries=3, max_age=30.0)
    for i in range(10):
        assert replay.check_and_add(f"id{i}", now=0.0)
    assert len(replay._seen) <= 3


def test_codec_counts_refusals_by_code() -> None:
    codec = Codec("k", max_bytes=LIMIT, max_age=30.0, replay_entries=10)
    raw = codec.encode(Envelope(kind=Kind.PING, sender="a"))
    codec.decode(raw)
    for bad in (raw, b"junk"):
        with pytest.raises(EnvelopeError):
            codec.decode(bad)
    assert codec.refused == {"replay": 1, "malformed": 1}


