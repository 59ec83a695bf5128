"""Client tokens on their own: signed with a key derived from the cluster key, scoped, expiring, revocable."""

from __future__ import annotations

import base64
import json

import pytest

from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.simulation import SimClock
from mnemonet.p2p.tokens import (
    LOCAL_CALLER,
    TokenError,
    TokenVerifier,
    claimed_name,
    create_token,
    parse_scopes,
    parse_ttl,
    token_key,
)

KEY = "a-cluster-key"


def test_a_token_round_trips_with_its_claims_and_no_lookup() -> None:
    clock = SimClock(1_000_000.0)
    text, made = create_token(KEY, "alice", ["read", "write"], 3600, now=clock)
    token = TokenVerifier(KEY, now=clock).verify(text)
    assert token == made
    assert (token.name, token.scopes, token.expires) == ("alice", frozenset({"read", "write"}), 1_003_600)
    assert token.allows("write") and not token.allows("admin")
    assert KEY not in text and token_key(KEY).hex() not in text


async def test_a_client_reads_the_name_its_token_claims_for_its_keyed_ids() -> None:
    # HttpMemoryClient.writer: the name the node scopes the client's idempotency keys by.
    text, _ = create_token(KEY, "chat relay", ["write", "speak-for"], 3600)
    assert claimed_name(text) == "chat relay"
    async with HttpMemoryClient("http://127.0.0.1:9", text) as client, HttpMemoryClient("http://127.0.0.1:9") as bare:
        assert (client.writer, bare.writer) == ("chat relay", "")  # no token: a keyless node's unscoped keys
    assert [claimed_name(junk) for junk in ("", "mnt1.e30.x", "mnt1.bm90IGpzb24.x", text + ".x")] == [None] * 4


def test_forged_tampered_expired_and_revoked_tokens_are_refused() -> None:
    clock = SimClock(1_000_000.0)
    verifier = TokenVerifier(KEY, now=clock)
    text, token = create_token(KEY, "bob", ["read"], 60, now=clock)
    prefix, claims, signature = text.split(".")
    raised = json.loads(base64.urlsafe_b64decode(claims + "=="))
    raised["scopes"] = ["read", "admin"]
    widened = base64.urlsafe_b64encode(json.dumps(raised).encode()).rstrip(b"=").decode()
    refused = {
        "other cluster": create_token("another-key", "bob", ["read"], 60, now=clock)[0],
        "scopes widened": f"{prefix}.{widened}.{signature}",
        "signature cut": f"{prefix}.{claims}.",
        "garbage": "not-a-token",
        "too long": text + "A" * 2000,
        "empty": "",
    }
    for bad in refused.values():
        with pytest.raises(TokenError):
            verifier.verify(bad)
    clock.now += 61
    with pytest.raises(TokenError, match="expired"):
        verifier.verify(text)
    clock.now -= 61
    verifier.revoke([token.id])
    with pytest.raises(TokenError, match="revoked"):
        verifier.verify(text)


def test_a_token_with_characters_added_or_changed_is_refused() -> None:
    """Issue 31 row 16: the base64url decoder dropped characters outside its alphabet, so a token with
    junk appended (or inserted into its signature) still verified; so did a signature whose last character
    differed only in bits the decoder throws away."""
    clock = SimClock(1_000_000.0)
    verifier = TokenVerifier(KEY, now=clock)
    text, _ = create_token(KEY, "carol", ["read"], 60, now=clock)
    prefix, claims, signature = text.split(".")
    # 32 signature bytes take 43 characters: the last carries 4 bits and 2 more the decoder ignores.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = alphabet[alphabet.index(signature[-1]) ^ 1]
    assert base64.urlsafe_b64decode(signature[:-1] + twin + "=") == base64.urlsafe_b64decode(signature + "=")
    altered = {
        "junk appended": text + "!!",
        "a space and junk appended": text + " #x",
        "padding appended": text + "==",
        "a character inserted": f"{prefix}.{claims}.{signature[:10]}*{signature[10:]}",
        "a newline inserted": f"{prefix}.{claims}.{signature[:10]}\n{signature[10:]}",
        "the last character's unused bits set": f"{prefix}.{claims}.{signature[:-1]}{twin}",
        "standard base64 instead of url-safe": f"{prefix}.{claims}.{signature.replace('-', '+').replace('_', '/')}"
        if "-" in signature or "_" in signature else text + "+",
    }
    refusals = {}
    for what, bad in altered.items():
        try:
            verifier.verify(bad)
            refusals[what] = "verified"
        except TokenError as exc:
            refusals[what] = str(exc)
    assert refusals == dict.fromkeys(altered, "token signature is not base64url")
    assert verifier.verify(text).name == "carol"


def test_callers_the_cluster_key_is_not_a_client_credential_and_keyless_is_local() -> None:
    verifier = TokenVerifier(KEY)
    with pytest.raises(TokenError, match="peers only"):
        verifier.caller(KEY)
    with pytest.raises(TokenError, match="missing"):
        verifier.caller("")
    assert TokenVerifier("").caller("") is LOCAL_CALLER
    assert LOCAL_CALLER.allows("admin") and LOCAL_CALLER.allows("speak-for") and LOCAL_CALLER.name == ""


def test_bad_names_scopes_and_ttls_are_refused_with_a_reason() -> None:
    for name in ("", " alice", "a\x00b", "x" * 201, "bob\u202e"):
        with pytest.raises(ValueError, match="token name"):
            create_token(KEY, name, ["read"], 60)
    with pytest.raises(ValueError, match="unknown scopes"):
        parse_scopes("read,root")
    with pytest.raises(ValueError, match="at least one"):
        parse_scopes(" , ")
    with pytest.raises(ValueError, match="ttl"):
        create_token(KEY, "a", ["read"], 0)
    with pytest.raises(ValueError, match="cluster key"):
        create_token("", "a", ["read"], 60)
    assert [parse_ttl(t) for t in ("90d", "12h", "30m", "45s", "3600")] == [7_776_000, 43_200, 1_800, 45, 3_600]
    with pytest.raises(ValueError, match="duration"):
        parse_ttl("soon")


async def test_revocations_are_read_once_per_period_and_a_failing_store_keeps_the_list() -> None:
    clock = SimClock(0.0)
    fetched: list[float] = []
    answers: list[list[str] | Exception] = [[], RuntimeError("store down")]
    text, token = create_token(KEY, "carol", ["read"], 60)

    async def fetch() -> list[str]:
        fetched.append(clock.now)
        answer = answers.pop(0) if answers else [token.id]
        if isinstance(answer, Exception):
            raise answer
        return answer

    verifier = TokenVerifier(KEY, fetch_revoked=fetch, refresh=10.0, clock=clock)
    assert (await verifier.authenticate(text)).name == "carol"
    clock.now = 5.0
    assert (await verifier.authenticate(text)).name == "carol"  # within the period: no read
    clock.now = 10.0
    assert (await verifier.authenticate(text)).name == "carol"  # the read failed: last list kept
    clock.now = 20.0
    with pytest.raises(TokenError, match="revoked"):
        await verifier.authenticate(text)
    assert fetched == [0.0, 10.0, 20.0]


def _signed(claims: dict[str, object]) -> str:
    """A token with exactly these claims, signed as ``create_token`` signs (a token made before spaces)."""
    import hashlib
    import hmac

    body = "mnt1." + base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    signature = hmac.new(token_key(KEY), body.encode(), hashlib.sha256).digest()
    return f"{body}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_a_token_carries_its_spaces_and_the_first_is_home() -> None:
    clock = SimClock(1_000_000.0)
    verifier = TokenVerifier(KEY, now=clock)
    token = verifier.verify(create_token(KEY, "alice", ["read"], 60, now=clock, spaces="alpha,beta")[0])
    assert token.spaces == ("alpha", "beta") and token.home_space == "alpha"
    assert token.allows_space("beta") and not token.allows_space("default") and not token.allows_space("gamma")
    anywhere = verifier.verify(create_token(KEY, "ops", ["admin"], 60, now=clock, spaces="*")[0])
    assert anywhere.allows_space("gamma") and anywhere.home_space == "default"
    plain = verifier.verify(create_token(KEY, "bob", ["read"], 60, now=clock)[0])
    assert plain.spaces == ("default",) and not plain.allows_space("alpha")
    # Made before tokens had spaces: the default space only.
    old = verifier.verify(_signed({"id": "ab" * 16, "name": "carol", "scopes": ["read"], "exp": 1_000_060}))
    assert old.spaces == ("default",)
    assert LOCAL_CALLER.allows_space("anything")
    for bad in ("", "Alpha", "a,*", "a b", "x" * 40):
        with pytest.raises(ValueError, match="space"):
            create_token(KEY, "dan", ["read"], 60, now=clock, spaces=bad)
    # Widening a token's spaces breaks its signature.
    prefix, claims, signature = create_token(KEY, "eve", ["read"], 60, now=clock, spaces="alpha")[0].split(".")
    raised = json.loads(base64.urlsafe_b64decode(claims + "=="))
    raised["spaces"] = ["*"]
    widened = base64.urlsafe_b64encode(json.dumps(raised).encode()).rstrip(b"=").decode()
    with pytest.raises(TokenError, match="signature"):
        verifier.verify(f"{prefix}.{widened}.{signature}")
