"""Authority stays in its lane (issue 31): a token of some spaces reaches those spaces and nothing else.

Real nodes on real sockets over the session's FalkorDB and PostgreSQL (offline model). Tokens:
``root`` (admin of every space, ``*``), ``alpha-ops`` (admin of alpha and apex only), readers and
writers of one space. Each test reproduces a row of the issue's attack pass that got through on the
code before this change; the registry walk checks every client method against its declared reach,
so a method added without a declaration fails here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from netsupport import CLUSTER_KEY, NodeFactory

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.registry import REGISTRY, Remote
from mnemonet.p2p.tokens import TokenVerifier, create_token
from mnemonet.service import MemoryService, SpacedMemory

TIMERS = dict(llm="offline", request_timeout=60.0, client_rate_limit=0.0)
SCOPES = "read,write,admin"
OWN = ("alpha", "apex")  # the space-scoped admin's spaces
OTHER = "beta"  # a space it may not use


def token(name: str, scopes: str, spaces: str) -> str:
    return create_token(CLUSTER_KEY, name, scopes.split(","), 3600.0, spaces=spaces)[0]


ROOT = token("root", SCOPES, "*")
SPACE_ADMIN = token("alpha-ops", SCOPES, ",".join(OWN))


class Api:
    """POSTs to one node's client API with a token; ``call`` gives the status and the JSON body."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def call(self, credential: str, method: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        reply = await self.http.post(f"/v1/{method}", json=body or {},
                                     headers={"authorization": f"Bearer {credential}"})
        return reply.status_code, reply.json()

    async def ok(self, credential: str, method: str, body: dict[str, Any] | None = None) -> Any:
        status, answer = await self.call(credential, method, body)
        assert status == 200, (method, body, answer)
        return answer["result"]

    async def refused(self, credential: str, method: str, body: dict[str, Any] | None = None) -> str:
        status, answer = await self.call(credential, method, body)
        assert (status, answer["error"]["code"]) == (403, "forbidden"), (method, body, answer)
        return str(answer["error"]["message"])

    async def spaces(self) -> set[str]:
        return {view["name"] for view in await self.ok(ROOT, "spaces")}

    async def ensure_spaces(self) -> None:
        for name in (*OWN, OTHER):
            await self.ok(ROOT, "create_space", {"name": name})


@pytest.fixture
async def api(make_node: NodeFactory, store_service: MemoryService) -> AsyncIterator[Api]:
    node: PeerNode = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)},
                                     **TIMERS)
    async with httpx.AsyncClient(base_url=node.url, timeout=120.0) as http:
        client = Api(http)
        await client.ensure_spaces()
        yield client


async def test_a_space_admin_neither_deletes_nor_creates_spaces_outside_its_own(api: Api) -> None:
    # Row 1: delete_space beta answered 200 true and erased beta; create_space gamma succeeded.
    await api.ok(token("beta-writer", "write", OTHER), "observe", {"text": "the launch code name is Falcon"})
    assert "beta" in await api.refused(SPACE_ADMIN, "delete_space", {"name": OTHER})
    await api.refused(SPACE_ADMIN, "create_space", {"name": "gamma"})
    await api.refused(SPACE_ADMIN, "forget", {"whole_space": True, "space": OTHER})
    await api.refused(SPACE_ADMIN, "clear", {"space": OTHER})
    assert await api.spaces() == {"default", *OWN, OTHER}
    assert (await api.ok(ROOT, "stats", {"space": OTHER}))["graph"]["Observation"] == 1  # beta keeps its data
    # Its own spaces it manages: one it names may be created, and deleted.
    assert await api.ok(SPACE_ADMIN, "delete_space", {"name": "apex"}) is True
    assert (await api.ok(SPACE_ADMIN, "create_space", {"name": "apex"}))["name"] == "apex"


async def test_a_share_needs_both_spaces_in_the_admins_own(api: Api) -> None:
    # Row 2: the alpha admin shared beta into alpha; an alpha reader then searched and remembered beta's text.
    await api.ok(token("beta-writer", "write", OTHER), "observe", {"text": "the launch code name is Falcon"})
    reader = token("alpha-reader", "read", "alpha")
    await api.refused(SPACE_ADMIN, "share_space", {"name": "alpha", "reads": OTHER})
    await api.refused(SPACE_ADMIN, "share_space", {"name": OTHER, "reads": "alpha"})
    assert not [h for h in await api.ok(reader, "search", {"query": "launch code name"}) if "Falcon" in h["text"]]
    assert "Falcon" not in (await api.ok(reader, "remember", {"query": "what is the launch code name?"}))["text"]
    # Between two of its own spaces it may.
    assert (await api.ok(SPACE_ADMIN, "share_space", {"name": "alpha", "reads": "apex"}))["reads"] == ["apex"]


async def test_a_space_admin_revokes_only_tokens_of_its_spaces(api: Api) -> None:
    # Row 4: the alpha admin revoked the '*' admin's token; the root's next call answered 401.
    verifier = TokenVerifier(CLUSTER_KEY)
    assert "'*'" in await api.refused(SPACE_ADMIN, "revoke_token", {"token_id": verifier.verify(ROOT).id})
    await api.refused(SPACE_ADMIN, "revoke_token", {"token_id": ROOT})  # by the token itself: for every space
    beta_reader = token("beta-reader", "read", OTHER)
    await api.refused(SPACE_ADMIN, "revoke_token", {"token_id": beta_reader})
    assert await api.ok(ROOT, "revoked_tokens") == []
    await api.ok(ROOT, "stats")  # the root still works
    await api.ok(beta_reader, "stats", {"space": OTHER})
    # A token of its own spaces it revokes, given as the token (an id alone says nothing of its spaces).
    alpha_reader = token("alpha-reader", "read", "alpha")
    assert await api.ok(SPACE_ADMIN, "revoke_token", {"token_id": alpha_reader}) is True
    status, answer = await api.call(alpha_reader, "stats")
    assert (status, answer["error"]["code"]) == (401, "unauthorized")
    assert await api.ok(ROOT, "revoked_tokens") == [verifier.verify(alpha_reader).id]
    await api.refused(SPACE_ADMIN, "revoked_tokens")  # the list of the whole network is the root's
    # A junk token string is bad input, not the caller's 401.
    status, answer = await api.call(SPACE_ADMIN, "revoke_token", {"token_id": "mnt1.junk.junk"})
    assert (status, answer["error"]["code"]) == (400, "bad_input")


async def test_a_space_admin_reads_the_audit_records_and_names_of_its_spaces_only(api: Api) -> None:
    # Row 12: the alpha admin read the whole audit log and every space's name.
    await api.ok(token("bob", "write", OTHER), "observe", {"text": "beta's secret plan is ready"})
    await api.ok(token("alice", "write", "alpha"), "observe", {"text": "alpha ships on friday"})
    assert {v["name"] for v in await api.ok(SPACE_ADMIN, "spaces")} == set(OWN)
    assert await api.spaces() == {"default", *OWN, OTHER}  # the root sees them all
    records = await api.ok(SPACE_ADMIN, "audit_log", {"limit": 100})
    assert records and all(r["spaces"] and set(r["spaces"]) <= set(OWN) for r in records), records
    seen = [(r["who"], r["method"], r["detail"], r["spaces"]) for r in records]
    assert ("root", "create_space", "alpha", ["alpha"]) in seen  # made by the root, but about alpha
    assert [(who, method) for who, method, *_ in seen if who == "alice"] == [("alice", "observe")]
    assert not [r for r in seen if r[0] == "bob" or r[2] == OTHER]  # beta's writes, the root's making of beta
    everything = await api.ok(ROOT, "audit_log", {"limit": 100, "spaces": ["alpha"]})  # it cannot narrow itself
    assert {("bob", "observe"), ("root", "create_space")} <= {(r["who"], r["method"]) for r in everything}
    # Asking for another space's records in the body changes nothing: the node files by the token.
    forged = await api.ok(SPACE_ADMIN, "audit_log", {"limit": 100, "spaces": [OTHER]})
    assert {r["id"] for r in forged} >= {r["id"] for r in records} and not [r for r in forged if r["who"] == "bob"]
    # Erasing beta leaves a tombstone in the default space: only admins of every space (or of beta) read it.
    await api.ok(ROOT, "delete_space", {"name": OTHER})
    wide = token("wide-ops", SCOPES, "default,alpha")
    assert [t["space"] for t in await api.ok(ROOT, "tombstones")] == [OTHER]
    assert await api.ok(wide, "tombstones") == []


async def test_a_writer_retracts_only_what_its_own_source_wrote(api: Api) -> None:
    # Row 6: "alice" retracted bob's "Henrietta is allergic to peanuts"; bob's answers then listed it as retracted.
    bob = token("bob", "read,write", "alpha")
    said = await api.ok(bob, "claim", {"text": "Henrietta is allergic to peanuts"})
    seen = await api.ok(bob, "observe", {"text": "Henrietta told me she is allergic to peanuts"})
    ids = [said["statement_id"], seen["observation_id"]]
    # Another writer may not, nor the subject's own source: what bob said about Henrietta is bob's to take back.
    for other in (token("alice", "read,write", "alpha"), token("Henrietta", "read,write", "alpha")):
        for item in ids:
            message = await api.refused(other, "retract", {"id": item, "reason": "not true"})
            assert "'bob'" in message
    assert not (await api.ok(bob, "recall", {"query": "is Henrietta allergic to peanuts?"}))["retractions"]
    # Its own source may; so may an admin of the space, and no admin of other spaces.
    assert (await api.ok(bob, "retract", {"id": ids[0], "reason": "I was wrong"}))["source"] == "bob"
    await api.refused(token("beta-ops", SCOPES, OTHER), "retract", {"id": ids[1], "reason": "x", "space": "alpha"})
    taken = await api.ok(SPACE_ADMIN, "retract", {"id": ids[1], "reason": "moderated", "any_source": False})
    assert taken["source"] == "alpha-ops"  # the node decides any_source from the token, whatever the body says


# -- the walk: every client method of the registry, a space-scoped admin and a '*' admin ---------------------

Sample = Callable[[Api, str], Awaitable[dict[str, Any]]]


def _plain(body: dict[str, Any]) -> Sample:
    async def sample(api: Api, space: str) -> dict[str, Any]:
        return dict(body)
    return sample


async def _an_observation(api: Api, space: str) -> dict[str, Any]:
    written = await api.ok(ROOT, "observe", {"text": "the walk passed here", "space": space})
    return {"id": written["observation_id"], "reason": "a test of who may take it back"}


# The arguments other than spaces each client method is called with: a method added to the registry
# without a line here fails the walk (add one, and declare its reach in the registry).
SAMPLES: dict[str, Sample] = {
    "observe": _plain({"text": "the walk passed here"}),
    "claim": _plain({"text": "the walk is long"}),
    "import_file": _plain({"content": '{"text": "an imported line"}\n'}),
    "remember": _plain({"query": "where did the walk pass?"}),
    "recall": _plain({"query": "walk"}),
    "brief": _plain({"subject": "walk"}),
    "search": _plain({"query": "walk"}),
    "load": _plain({"ids": []}),
    "get_recent_observations": _plain({}),
    "get_recent_statements": _plain({}),
    "get_unresolved_contradictions": _plain({}),
    "get_concepts": _plain({}),
    "get_concept_statements": _plain({"name": "walk"}),
    "stats": _plain({}),
    "clear": _plain({}),
    "retract": _an_observation,
    "forget": _plain({"source": "nobody"}),
    "tombstones": _plain({}),
    "spaces": _plain({}),
    "audit_log": _plain({}),
    "revoked_tokens": _plain({}),
    "revoke_token": _plain({}),
    "create_space": _plain({}),
    "delete_space": _plain({}),
    "share_space": _plain({}),
    "unshare_space": _plain({}),
    "infer": _plain({"observation_text": "I like tea"}),
}


async def _walk_named(api: Api, remote: Remote, base: Sample) -> None:
    assert remote.reach is not None
    args = remote.reach.args
    assert len(args) <= len(OWN), f"{remote.name}: the walk has {len(OWN)} own spaces to name"
    own = dict(zip(args, OWN, strict=False))  # distinct spaces: a share between two of its own
    await api.ok(SPACE_ADMIN, remote.name, {**await base(api, own[args[0]]), **own})
    await api.ensure_spaces()
    for arg in args:  # any one argument outside its spaces refuses the call, nothing done
        outside = {**own, arg: OTHER}
        await api.refused(SPACE_ADMIN, remote.name, {**await base(api, outside[args[0]]), **outside})
        assert OTHER in await api.spaces()
        await api.ok(ROOT, remote.name, {**await base(api, outside[args[0]]), **outside})
        await api.ensure_spaces()


async def test_every_client_method_reaches_as_its_registry_entry_declares(api: Api) -> None:
    clients = {name: remote for name, remote in REGISTRY.items() if remote.scope is not None}
    undeclared = sorted(name for name, remote in clients.items() if remote.reach is None)
    assert not undeclared, f"declare the reach of {undeclared} in p2p/registry.py"
    for name, remote in clients.items():
        params = method_spec(name).params
        assert remote.reach is not None and set(remote.reach.args) <= set(params), name
        # A method taking a space must name it in its reach: the token's spaces are checked against it.
        assert "space" not in params or "space" in remote.reach.args, f"{name} takes a space its reach omits"
    missing = sorted(set(clients) - set(SAMPLES))
    assert not missing, f"add the walk's arguments of {missing} to SAMPLES"

    verifier = TokenVerifier(CLUSTER_KEY)
    for name, remote in clients.items():
        assert remote.reach is not None
        kind = remote.reach.kind
        if kind == "named":
            await _walk_named(api, remote, SAMPLES[name])
        elif kind == "own":  # answered to both, each cut to its spaces (test_..._of_its_spaces_only)
            await api.ok(SPACE_ADMIN, name, await SAMPLES[name](api, OWN[0]))
            await api.ok(ROOT, name, await SAMPLES[name](api, OWN[0]))
        elif kind == "cluster":
            await api.refused(SPACE_ADMIN, name, await SAMPLES[name](api, OWN[0]))
            await api.ok(ROOT, name, await SAMPLES[name](api, OWN[0]))
        else:
            assert kind == "token", name
            mine, theirs = token("mine", "read", OWN[0]), token("theirs", "read", OTHER)
            await api.ok(SPACE_ADMIN, name, {"token_id": mine})
            await api.refused(SPACE_ADMIN, name, {"token_id": theirs})
            await api.refused(SPACE_ADMIN, name, {"token_id": verifier.verify(mine).id})
            await api.ok(ROOT, name, {"token_id": verifier.verify(theirs).id})
