"""``mnemonet mcp`` spawned over stdio and driven by the MCP SDK's own client, against a real network.

The MCP server is a client of the nodes' HTTP API with a token, never a peer: it holds no cluster key.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from livenet import NodeFactory
from netsupport import CLUSTER_KEY, client_token, eventually, sees_all

from mcp import ClientSession, StdioServerParameters, stdio_client
from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, SpacedMemory

TOOLS = {"observe", "claim", "retract", "remember", "search", "load", "recent", "contradictions", "brief"}
MNEMONET = Path(sys.executable).with_name("mnemonet")  # the console script `pip install` made
# The package under test first: the console script of an editable install imports the checkout it was made in.
SOURCE = str(Path(__file__).resolve().parents[2] / "src")
ADAPTER_TOKEN = client_token("read,write,speak-for", name="mcp-adapter")  # it relays several agents and users


@asynccontextmanager
async def mcp_session(urls: str, stderr: Path, token: str = ADAPTER_TOKEN) -> AsyncIterator[ClientSession]:
    """``mnemonet mcp --url URLS`` as a subprocess, initialised; the token comes from the environment."""
    assert MNEMONET.exists(), f"{MNEMONET} missing: install the project (pip install -e .)"
    params = StdioServerParameters(
        command=str(MNEMONET), args=["mcp", "--url", urls, "--log-level", "DEBUG"],
        # No cluster key: it is not a peer.
        env={"MNEMONET_TOKEN": token, "MNEMONET_REQUEST_TIMEOUT": "10", "PYTHONPATH": SOURCE},
    )
    with stderr.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def _call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.structured_content is not None
    return result.structured_content


async def _error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed"
    return result.content[0].text  # type: ignore[union-attr]


async def test_every_tool_over_stdio_and_the_first_node_may_die(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    store = await make_node({"store"}, providers={"store": service})
    seed = await make_node({"cli"}, seed=store)  # the MCP server calls this node first; it will die
    await eventually(lambda: sees_all([store, seed]), 3.0, "joined")

    async with mcp_session(f"{seed.url},{store.url}", tmp_path / "mcp.stderr") as session:
        listed = (await session.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        assert all(len(t.description or "") > 80 for t in listed), "descriptions are written for agents"
        search_tool = next(t for t in listed if t.name == "search")
        assert "load" in (search_tool.description or "") and "k" in search_tool.input_schema["properties"]

        assert (await _call(session, "recent", limit=1))["observations"] == []  # served through the first node
        await seed.kill()  # the next calls go to the next URL; a retried write keeps its idempotency key

        first = await _call(session, "observe", text="I prefer morning meetings", source="user")
        assert first["created"] and first["statements"] == ["user prefers morning meetings"]
        again = await _call(session, "observe", text="I prefer morning meetings", source="user",
                            idempotency_key="k-1")
        retried = await _call(session, "observe", text="I prefer morning meetings", source="user",
                              idempotency_key="k-1")
        assert again["created"] and not retried["created"]
        assert retried["observation_id"] == again["observation_id"]
        second = await _call(session, "observe", text="actually I hate mornings, afternoon is better", source="user")
        assert "user prefers afternoon" in second["statements"]

        claimed = await _call(session, "claim", text="user prefers afternoon contradicts user prefers morning meetings",
                              source="validator")
        assert len(claimed["contradicts"]) == 2

        # The adapter asks for the user it relays: its own "my" would be mcp-adapter, who said nothing.
        answer = await _call(session, "remember", query="what are the user's meeting preferences?")
        assert "afternoon" in answer["answer"].lower() and answer["cited"]
        assert answer["provider"].startswith("offline")
        assert answer["degraded"] is False and 0 < answer["confidence"] <= 1

        hits = (await _call(session, "search", query="meeting preferences", k=5))["hits"]
        assert 0 < len(hits) <= 5
        assert all(set(h) == {"id", "kind", "score", "text"} and "\n" not in h["text"] for h in hits)
        loaded = await _call(session, "load", ids=[hits[0]["id"], "st_does_not_exist"])
        assert [item["id"] for item in loaded["items"]] == [hits[0]["id"]]
        assert loaded["missing"] == ["st_does_not_exist"]

        recent = await _call(session, "recent", limit=2)
        assert [o["text"] for o in recent["observations"]] == [
            "actually I hate mornings, afternoon is better", "I prefer morning meetings"]
        assert len(recent["statements"]) == 2

        [conflict] = (await _call(session, "contradictions", limit=5))["contradictions"]
        assert {conflict["a"]["text"], conflict["b"]["text"]} == {
            "user prefers afternoon", "user prefers morning meetings"}

        # The user changed their mind: the brief reads the contradiction as the answers do, the newer standing.
        brief = await _call(session, "brief", subject="user", since_hours=1, budget=200)
        assert brief["brief"].startswith("What memory holds about user") and brief["tokens"] <= 200
        assert {conflict["a"]["id"], conflict["b"]["id"]} <= set(brief["cited"])
        assert "user prefers afternoon (user; " in brief["brief"] and "Open conflicts:" not in brief["brief"]
        assert "user prefers morning meetings (user" not in brief["brief"]  # said twice, replaced all the same
        assert "user prefers morning meetings (st-" in brief["brief"]  # as a change since the last hour
        assert "budget: must be an integer from 100" in await _error(session, "brief", budget=5)
        assert "since_hours: must be a number of hours above 0" in await _error(session, "brief", since_hours=-1)

        afternoon = next(side["id"] for side in (conflict["a"], conflict["b"])
                         if side["text"] == "user prefers afternoon")
        retracted = await _call(session, "retract", id=afternoon, reason="said by mistake", source="user")
        assert retracted["created"] and retracted["target_id"] == afternoon and retracted["kind"] == "statement"
        again = await _call(session, "retract", id=afternoon, reason="said by mistake", source="user")
        assert not again["created"] and again["retraction_id"] == retracted["retraction_id"]
        assert (await _call(session, "contradictions", limit=5))["contradictions"] == []
        # The adapter asks for the user it relays: its own "my" would be mcp-adapter, who said nothing.
        answer = await _call(session, "remember", query="what are the user's meeting preferences?")
        assert retracted["retraction_id"] in answer["cited"] and "Retracted:" in answer["answer"]
        assert "no such node" in await _error(session, "retract", id="st_does_not_exist", reason="x")

        assert "k: must be between 1 and" in await _error(session, "search", query="x", k=0)
        assert "limit: must be between 1 and" in await _error(session, "recent", limit=10_000)
        assert "refused" in await _error(session, "observe", text="   ")
        assert "could not read a statement" in await _error(session, "claim", text="???")

    assert store.rpc_server.served >= 15  # every call reached the store node through the network


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_node_errors_reach_the_tool_result_and_a_plain_token_writes_as_itself(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    store = await make_node({"store"}, providers={"store": service})
    foreign = client_token("read,write", key="another-cluster")
    async with mcp_session(store.url, tmp_path / "foreign.stderr", token=foreign) as session:
        refused = await _error(session, "recent")
    assert "the node refused our token (401" in refused and "signature" in refused
    nowhere = _closed_port_url()
    async with mcp_session(nowhere, tmp_path / "nowhere.stderr") as session:
        unreachable = await _error(session, "remember", query="anything")
    assert f"no node at {nowhere}" in unreachable
    # Without speak-for the token's name is the source, whatever the tool call says.
    async with mcp_session(store.url, tmp_path / "plain.stderr", token=client_token("read,write", name="claude")) \
            as session:
        await _call(session, "observe", text="the nightly build failed", source="user")
        [seen] = (await _call(session, "recent", limit=1))["observations"]
    assert (seen["text"], seen["source"]) == ("the nightly build failed", "claude")
    assert store.membership.alive(include_local=False) == []  # none of the MCP servers joined as a peer


async def test_a_scope_the_token_lacks_is_named_in_the_tool_result(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    store = await make_node({"store"}, providers={"store": service})
    async with mcp_session(store.url, tmp_path / "reader.stderr", token=client_token("read", name="reader")) \
            as session:
        refused = await _error(session, "observe", text="read tokens do not write")
        briefed = await _call(session, "brief")  # a read: the read scope is enough
        retract_refused = await _error(session, "retract", id="st-x", reason="no")
        assert (await _call(session, "recent", limit=1))["observations"] == []  # the session still works
    assert "the node refused: observe needs a token with the 'write' scope" in refused
    assert briefed["brief"].startswith("What the team's memory holds") and briefed["cited"] == []
    assert "retract needs a token with the 'write' scope" in retract_refused
    assert (await service.graph.counts()).get("Observation", 0) == 0


async def test_tools_take_a_space_and_the_token_decides_which(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    spaced = SpacedMemory(service)
    for name in ("alpha", "beta"):
        await spaced.create_space(name, by="ops")
    store = await make_node({"store"}, providers={"store": spaced})
    team = create_token(CLUSTER_KEY, "team", ["read", "write"], 3600, spaces="alpha,beta")[0]
    async with mcp_session(store.url, tmp_path / "team.stderr", token=team) as session:
        home = await _call(session, "observe", text="I prefer morning meetings")  # the token's first space
        beta = await _call(session, "observe", text="I prefer afternoon meetings", space="beta")
        claimed = await _call(session, "claim", text="Dana works at Acme", space="beta")
        in_alpha = await _call(session, "recent", limit=5, space="alpha")
        in_beta = await _call(session, "recent", limit=5, space="beta")
        in_home = await _call(session, "recent", limit=5)
        answer = await _call(session, "remember", query="what are my meeting preferences?", space="beta")
        hits = (await _call(session, "search", query="meetings", k=5, space="beta"))["hits"]
        loaded = await _call(session, "load", ids=[beta["observation_id"]], space="beta")
        not_in_alpha = await _call(session, "load", ids=[beta["observation_id"]], space="alpha")
        conflicts = await _call(session, "contradictions", limit=5, space="beta")
        taken = await _call(session, "retract", id=claimed["statement_id"], reason="wrong", space="beta")
        outside = await _error(session, "recent", limit=5, space="default")
        malformed = await _error(session, "observe", text="x", space="Beta!")
    assert [o["id"] for o in in_alpha["observations"]] == [home["observation_id"]] == \
        [o["id"] for o in in_home["observations"]]
    assert [o["id"] for o in in_beta["observations"]] == [beta["observation_id"]]
    assert "afternoon" in answer["answer"] and "morning" not in answer["answer"]
    assert hits and home["observation_id"] not in {h["id"] for h in hits}
    assert [i["id"] for i in loaded["items"]] == [beta["observation_id"]]
    assert not_in_alpha["missing"] == [beta["observation_id"]]
    assert conflicts["contradictions"] == [] and taken["created"] and taken["source"] == "team"
    assert "the node refused: this token may not use space 'default'" in outside
    assert "refused" in malformed and "space" in malformed


async def test_mcp_command_needs_a_node_url(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        str(MNEMONET), "mcp", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"})
    out, err = await asyncio.wait_for(process.communicate(), 30.0)
    assert process.returncode == 2 and out == b""  # stdout is only ever the protocol
    assert b"--url URL" in err
