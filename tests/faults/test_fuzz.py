"""Hostile input, generated: the envelope decoder, the link handshake, the client HTTP API, the peer endpoints
and the CLI parser never crash or hang.

Each hypothesis example carries a batch of inputs, so the counts below are
reached in a few seconds: 10,000+ envelopes, 3,000+ link handshakes in process
plus a sample over real sockets, 2,000+ HTTP bodies in process
(``httpx.ASGITransport``) plus a sample over real sockets, unfinished uploads
to the peer endpoints over real sockets, 3,000 CLI lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import random
import re
import resource
import time
from collections.abc import Callable
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netsupport import ADMIN_TOKEN, CLUSTER_KEY, InMemoryStore, NodeFactory, eventually
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from mnemonet.cli.commands import COMMANDS, Command, parse_line
from mnemonet.p2p import handshake
from mnemonet.p2p.envelope import TAG_CHARS, Codec, Envelope, EnvelopeError, Kind, encode
from mnemonet.p2p.links import Link
from mnemonet.p2p.routing import CLIENT_METHODS
from mnemonet.p2p.server import create_app
from mnemonet.p2p.transport import ws_url

ENVELOPE_BATCH, ENVELOPE_EXAMPLES = 10, 1_050  # 10,500 envelopes
HTTP_BATCH, HTTP_EXAMPLES = 5, 420  # 2,100 bodies in process
SOCKET_SAMPLE = 100
CLI_BATCH, CLI_EXAMPLES = 10, 300
HANDSHAKE_BATCH, HANDSHAKE_EXAMPLES = 10, 320  # 3,200 dialler scripts in process
HANDSHAKE_SOCKETS = 40
UPLOAD_EXAMPLES, UPLOAD_CONCURRENCY = 60, 12
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
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
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


# -- the link handshake -------------------------------------------------------------------------------------

class _ScriptedLink(Link):
    """An accepted link whose peer is a script: ``answer(sent)`` gives its next frame (None: it hangs up)."""

    def __init__(self, answer: Callable[[list[bytes]], bytes | None]) -> None:
        super().__init__(None, outbound=False)
        self._answer = answer
        self.sent: list[bytes] = []

    async def _send(self, data: bytes) -> None:
        self.sent.append(data)

    async def _recv(self) -> bytes | None:
        return self._answer(self.sent)

    async def _close(self, code: int, reason: str) -> None:
        pass


_ME = "acceptor"
hello_fields = st.fixed_dictionaries({}, optional={
    "hello": st.sampled_from([1, 2, "1", None, True]),
    "node_id": st.sampled_from(["dialler", _ME, "a|b", ""]) | st.text(max_size=130),
    "target": st.sampled_from([_ME, "other"]) | st.text(max_size=10),
    "nonce": st.sampled_from(["0" * 32, "g" * 32]) | st.text(max_size=40),
    "extra": json_values,
})
_PROOFS = ("right", "wrong_key", "reflected", "junk", "hang_up")


def _dialler_script(hello: bytes, proof_kind: str, key: bytes) -> Callable[[list[bytes]], bytes | None]:
    def answer(sent: list[bytes]) -> bytes | None:
        if not sent:
            return hello
        if proof_kind == "hang_up":
            return None
        challenge = json.loads(sent[0])
        fields = json.loads(hello)
        if proof_kind == "junk":
            return b"\xff not a proof"
        if proof_kind == "reflected":
            return json.dumps({"proof": challenge["proof"]}).encode()
        used = key if proof_kind == "right" else b"guessed key"
        return json.dumps({"proof": handshake.proof(used, "dial", fields["nonce"], challenge["nonce"],
                                                    fields["node_id"], _ME)}).encode()
    return answer


def _valid_hello(fields: dict[str, Any]) -> bool:
    node_id, nonce = fields.get("node_id"), fields.get("nonce")
    return (fields.get("hello") == 1 and type(fields.get("hello")) is int and fields.get("target") == _ME
            and isinstance(node_id, str) and re.fullmatch(r"[A-Za-z0-9_.:@\-]{1,128}", node_id) is not None
            and node_id != _ME and isinstance(nonce, str) and re.fullmatch(r"[0-9a-f]{32}", nonce) is not None)


async def test_link_handshake_accepts_only_a_dialler_holding_the_key() -> None:
    key = CLUSTER_KEY.encode()
    cases: list[tuple[bytes, bool, str]] = []

    @settings(FUZZ, max_examples=HANDSHAKE_EXAMPLES)
    @given(st.lists(st.tuples(hello_fields, st.sampled_from(_PROOFS), st.binary(max_size=60)),
                    min_size=HANDSHAKE_BATCH, max_size=HANDSHAKE_BATCH))
    def collect(batch: list[tuple[dict[str, Any], str, bytes]]) -> None:
        for fields, proof_kind, noise in batch:
            # Most hellos are well formed, so the proof step is reached; some are noise or broken JSON.
            if noise and noise[0] % 5 == 0:
                cases.append((noise, False, proof_kind))
            else:
                good = {"hello": 1, "node_id": "dialler", "target": _ME, "nonce": handshake.new_nonce()}
                merged = good if noise[:1] == b"\x01" else {**good, **fields}
                frame = json.dumps(merged).encode()
                # A well-formed hello too long for a handshake frame is refused unread (an "extra" of
                # escaped non-ASCII text passed 1 KiB in a run and was, rightly, refused).
                cases.append((frame, _valid_hello(merged) and len(frame) <= handshake.MAX_FRAME_BYTES, proof_kind))

    await asyncio.get_running_loop().run_in_executor(None, collect)
    outcomes: dict[str, int] = {}
    for hello, valid, proof_kind in cases:
        link = _ScriptedLink(_dialler_script(hello, proof_kind, key))
        try:
            peer = await handshake.accept(link, key, _ME, 10.0)  # scripted sends never block: a long bound
        except handshake.HandshakeFailed:
            outcome = "refused"
        else:
            outcome = "accepted"
            assert peer == json.loads(hello)["node_id"]
        assert outcome == ("accepted" if valid and proof_kind == "right" else "refused"), (hello, proof_kind)
        assert len(link.sent) <= 1  # at most the challenge: nothing else is ever said to an unproven peer
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"\nfuzz handshake: {len(cases)} dialler scripts: {outcomes}")
    assert len(cases) >= 3_000 and min(outcomes.values()) > 100


async def test_link_handshake_over_sockets_refuses_with_a_close(make_node: NodeFactory) -> None:
    node = await make_node({"llm"}, link_handshake_timeout=1.0)
    rng = random.Random(17)
    closes: dict[int | None, int] = {}
    for i in range(HANDSHAKE_SOCKETS):
        frames = [rng.randbytes(rng.randrange(1, 300)),
                  json.dumps({"hello": 1, "node_id": f"x{i}", "target": node.node_id, "nonce": "0" * 32}).encode()]
        async with connect(ws_url(node.url), proxy=None) as ws:
            await ws.send(frames[i % 2])
            if i % 2:
                await ws.recv()  # the challenge
                await ws.send(json.dumps({"proof": "f" * 64}))
            with contextlib.suppress(ConnectionClosed):
                async with asyncio.timeout(5.0):
                    await ws.recv()
            closes[ws.close_code] = closes.get(ws.close_code, 0) + 1
    assert closes == {handshake.POLICY: HANDSHAKE_SOCKETS}
    assert node.transport.neighbours() == [] and node.codec.refused["handshake"] == HANDSHAKE_SOCKETS
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.get(f"{node.url}/health")).status_code == 200


# -- peer HTTP endpoints with unfinished bodies ---------------------------------------------------------------

async def _upload(port: int, path: str, declared: int | None, send: int, then: str) -> int | None:
    """One peer upload: ``declared`` bytes announced (None: chunked), ``send`` sent, then hang up or wait."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    length = "transfer-encoding: chunked" if declared is None else f"content-length: {declared}"
    writer.write(f"POST {path} HTTP/1.1\r\nhost: n\r\n{length}\r\n\r\n".encode())
    body = b"7" * send
    writer.write(body if declared is not None else f"{len(body):x}\r\n".encode() + body)
    try:
        await writer.drain()
        if then == "hang_up":
            return None
        async with asyncio.timeout(10.0):
            status_line = await reader.readline()
        return int(status_line.split()[1]) if status_line else None
    except (ConnectionError, TimeoutError, IndexError, ValueError):
        return None
    finally:
        writer.close()


async def test_peer_endpoints_answer_unfinished_bodies_and_release_every_byte(make_node: NodeFactory) -> None:
    node = await make_node({"llm"}, peer_read_timeout=1.0, max_unauthenticated_reads=4,
                           unauthenticated_read_budget_bytes=1 << 20)
    port = int(node.url.rsplit(":", 1)[1])
    uploads: list[tuple[str, int | None, int, str]] = []

    @settings(FUZZ, max_examples=UPLOAD_EXAMPLES)
    @given(st.sampled_from(["/v1/peer", "/v1/join"]),
           st.sampled_from([None, 0, 10, 1 << 16, 1 << 20, node.max_body_bytes, node.max_body_bytes + 1]),
           st.integers(0, 1 << 18), st.sampled_from(["hang_up", "wait"]))
    def collect(path: str, declared: int | None, send: int, then: str) -> None:
        uploads.append((path, declared, send if declared is None else min(send, declared), then))

    await asyncio.get_running_loop().run_in_executor(None, collect)
    statuses: dict[int | None, int] = {}
    for start in range(0, len(uploads), UPLOAD_CONCURRENCY):
        batch = uploads[start:start + UPLOAD_CONCURRENCY]
        for status in await asyncio.gather(*(_upload(port, *u) for u in batch)):
            assert status is None or status in (400, 401, 408, 413, 503), status
            statuses[status] = statuses.get(status, 0) + 1
    # Every read ended (answered, timed out or cut off) and gave its bytes back to the budget.
    await eventually(lambda: node.peer_reads.reads == 0 and node.peer_reads.held == 0, 10.0, "budget released")
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.get(f"{node.url}/health")).status_code == 200
    print(f"\nfuzz unfinished uploads: {len(uploads)}: statuses {statuses}")
    assert len(uploads) >= UPLOAD_EXAMPLES and {408, 503} <= set(statuses)
