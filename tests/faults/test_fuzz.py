"""Hostile input, generated: the envelope decoder, the client HTTP API and the CLI parser never crash or hang.

Each hypothesis example carries a batch of inputs, so the counts below are
reached in a few seconds: 10,000+ envelopes, 2,000+ HTTP bodies in process
(``httpx.ASGITransport``) plus a sample over real sockets, 3,000 CLI lines.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import random
import resource
import time
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory

from mnemonet.cli.commands import COMMANDS, Command, parse_line
from mnemonet.p2p.envelope import TAG_CHARS, Codec, Envelope, EnvelopeError, Kind, encode
from mnemonet.p2p.routing import CLIENT_METHODS
from mnemonet.p2p.server import create_app

ENVELOPE_BATCH, ENVELOPE_EXAMPLES = 10, 1_050  # 10,500 envelopes
HTTP_BATCH, HTTP_EXAMPLES = 5, 420  # 2,100 bodies in process
SOCKET_SAMPLE = 100
CLI_BATCH, CLI_EXAMPLES = 10, 300
MAX_RSS_GROWTH_KB = 200_000
FUZZ = settings(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
envelope_fields = st.fixed_dictionaries({}, optional={
    "version": st.sampled_from([1, 2, "1", None]), "id": st.text(max_size=140),
    "kind": st.sampled_from([k.value for k in Kind] + ["", "bogus"]), "sender": st.text(max_size=140),
    "target": st.none() | st.text(max_size=20), "ttl": st.integers(-5, 100), "ts": st.floats(allow_nan=False),
    "reply_to": st.none() | st.text(max_size=20), "method": st.none() | st.text(max_size=70),
    "payload": json_values, "extra": json_values,
})


def encode_raw(body: bytes, key: bytes) -> bytes:
    """A correct tag over arbitrary bytes: what a peer holding the key (or a bug) could send."""
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode() + body


def _variants(fields: dict[str, Any], payload: Any, seed: int, key: bytes) -> list[bytes]:
    """ENVELOPE_BATCH wire inputs from one generated example: hostile bodies under a good tag, no tag,
    a valid envelope and its replay, and byte-level damage (flips, truncation, noise) of a valid one."""
    rng = random.Random(seed)
    body = json.dumps(fields).encode()
    valid = encode(Envelope(kind=rng.choice(list(Kind)), sender=f"n{seed % 97}",
                            payload={"data": payload}), key)
    cut = rng.randrange(len(valid))
    flipped = bytearray(valid)
    flipped[rng.randrange(len(valid))] ^= 1 << rng.randrange(8)
    return [
        encode_raw(body, key), body, valid, valid, valid[:cut], bytes(flipped),
        encode_raw(valid[TAG_CHARS:][:cut], key), rng.randbytes(rng.randrange(1, 200)),
        encode_raw(json.dumps({**fields, "kind": "ping", "sender": "x", "ts": time.time()}).encode(), key),
        encode_raw(rng.randbytes(rng.randrange(1, 100)), key),
    ]


def test_envelope_decoder_refuses_or_accepts_and_never_crashes() -> None:
    codec = Codec(CLUSTER_KEY, max_bytes=4096, max_age=30.0, replay_entries=1000)
    outcomes: dict[str, int] = {}

    @settings(FUZZ, max_examples=ENVELOPE_EXAMPLES)
    @given(envelope_fields, json_values, st.integers(0, 2**32))
    def check(fields: dict[str, Any], payload: Any, seed: int) -> None:
        batch = _variants(fields, payload, seed, CLUSTER_KEY.encode())
        assert len(batch) == ENVELOPE_BATCH
        for raw in batch:
            try:
                env = codec.decode(raw)
            except EnvelopeError as exc:
                outcomes[exc.code] = outcomes.get(exc.code, 0) + 1
            else:
                assert isinstance(env, Envelope)
                outcomes["accepted"] = outcomes.get("accepted", 0) + 1

    started = time.monotonic()
    check()
    total = sum(outcomes.values())
    print(f"\nfuzz envelopes: {total} in {time.monotonic() - started:.1f}s: {dict(sorted(outcomes.items()))}")
    assert total >= 10_000
    assert {"malformed", "bad_tag", "invalid", "replay", "accepted"} <= set(outcomes)


def _bodies() -> st.SearchStrategy[tuple[str, bytes]]:
    methods = st.sampled_from(sorted(CLIENT_METHODS) + ["nope", "llm.answer", "embed.embed", "__init__"])
    kwargs = st.dictionaries(st.sampled_from(["text", "query", "ids", "limit", "k", "idempotency_key", "source",
                                              "kinds", "name", "x"]), json_values, max_size=4)
    body = st.one_of(kwargs.map(lambda d: json.dumps(d).encode()), st.binary(max_size=200),
                     json_values.map(lambda v: json.dumps(v).encode()))
    return st.tuples(methods, body)


def _check_reply(resp: httpx.Response) -> int:
    assert resp.status_code < 500 or resp.status_code in (502, 503, 504), resp.text
    assert "error" in resp.json() or "result" in resp.json()
    return resp.status_code


async def test_client_http_api_answers_every_generated_body(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()}, client_rate_limit=0.0)
    app = create_app(node)
    headers = {"authorization": f"Bearer {CLUSTER_KEY}"}
    statuses: dict[int, int] = {}
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    loop = asyncio.get_running_loop()
    examples: list[list[tuple[str, bytes]]] = []

    @settings(FUZZ, max_examples=HTTP_EXAMPLES)
    @given(st.lists(_bodies(), min_size=HTTP_BATCH, max_size=HTTP_BATCH))
    def collect(batch: list[tuple[str, bytes]]) -> None:
        examples.append(batch)  # hypothesis is synchronous: generate here, send below on the test's loop

    await loop.run_in_executor(None, collect)
    started = time.monotonic()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://fuzz",
                                 headers=headers) as http:
        for batch in examples:
            for method, body in batch:
                status = _check_reply(await asyncio.wait_for(http.post(f"/v1/{method}", content=body), 10.0))
                statuses[status] = statuses.get(status, 0) + 1
    in_process = sum(statuses.values())
    async with httpx.AsyncClient(base_url=node.url, headers=headers, trust_env=False) as http:
        sample = [pair for batch in examples for pair in batch][:SOCKET_SAMPLE]
        for method, body in sample:
            _check_reply(await asyncio.wait_for(http.post(f"/v1/{method}", content=body), 10.0))
        assert (await http.get("/health")).status_code == 200  # the node lives on
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    print(f"\nfuzz http: {in_process} bodies in process + {len(sample)} over sockets in "
          f"{time.monotonic() - started:.1f}s, statuses {dict(sorted(statuses.items()))}, max RSS +{growth} KB")
    assert in_process >= 2_000 and len(sample) == SOCKET_SAMPLE
    assert growth < MAX_RSS_GROWTH_KB


def test_cli_parser_answers_every_line_with_a_command_or_a_reason() -> None:
    lines = st.one_of(
        st.text(max_size=120),
        st.sampled_from(["/", "?", "/claim", "/source", "/help x"])
        .flatmap(lambda p: st.text(max_size=60).map(p.__add__)),
        st.sampled_from(sorted(COMMANDS)).flatmap(lambda n: st.text(max_size=30).map(lambda a: f"/{n} {a}")),
    )
    seen: dict[str, int] = {}

    @settings(FUZZ, max_examples=CLI_EXAMPLES)
    @given(st.lists(lines, min_size=CLI_BATCH, max_size=CLI_BATCH))
    def check(batch: list[str]) -> None:
        for line in batch:
            try:
                command = parse_line(line, 100, 40)
            except ValueError as exc:
                assert str(exc)
                seen["refused"] = seen.get("refused", 0) + 1
                continue
            assert command is None or isinstance(command, Command)
            name = "blank" if command is None else command.name
            seen[name] = seen.get(name, 0) + 1

    check()
    print(f"\nfuzz cli: {sum(seen.values())} lines: {dict(sorted(seen.items()))}")
    assert sum(seen.values()) >= 3_000
