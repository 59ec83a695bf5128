"""``POST /v1/import`` against a real store node over HTTP: per-line outcomes, retries, limits, tokens, spaces."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx
from netsupport import CLUSTER_KEY, NodeFactory

from mnemonet.model.ids import keyed_id
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, SpacedMemory
from mnemonet.service.import_formats import content_identity, import_key

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 8
STORE_SETTINGS = {"import_request_max_lines": MAX_LINES}


def token(name: str, scopes: str, spaces: str = "*") -> str:
    return create_token(CLUSTER_KEY, name, scopes.split(","), 3600.0, spaces=spaces)[0]


LOADER = token("loader", "read,write,speak-for")
WRITER = token("writer", "read,write")  # speaks only for itself
READER = token("reader", "read")

CHAT = "\n".join([
    "alice: on day 1 I planted tulips",
    "alice: my key is sk-ant-" + "a1B2c3D4" * 5,
    "bob: I keep bees on the roof",
    "bob: " + "word " * 5000,  # over max_text_chars
    "",
    "a line that names no speaker",
]) + "\n"


async def _post(url: str, tok: str, body: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {tok}"}, timeout=120.0, trust_env=False) as http:
        return await http.post(f"{url}/v1/import", json=body)


async def _observations(memory: SpacedMemory, space: str = "default") -> dict[str, tuple[str, str | None]]:
    graph = (await memory.memory(space)).graph
    return {o.id: (o.text, o.source) for o in await graph.recent_observations(1000)}


async def test_each_line_is_reported_and_a_retried_request_writes_nothing_twice(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    memory = SpacedMemory(store_service)
    node = await make_node({"store", "llm", "embed"}, providers={"store": memory}, request_timeout=60.0)
    body = {"content": CHAT, "format": "chat", "defer_extraction": True}
    keys = {n: keyed_id("obs", import_key(content_identity(CHAT.encode()), n), "loader") for n in (1, 3, 6)}

    resp = await _post(node.url, LOADER, body)
    assert resp.status_code == 200, resp.text
    report = resp.json()["result"]
    lines = {line["line"]: line for line in report["lines"]}
    assert [line["line"] for line in report["lines"]] == [1, 2, 3, 4, 6]  # file order; the blank line 5 is no line
    assert {n: lines[n]["status"] for n in lines} == {1: "ok", 2: "refused", 3: "ok", 4: "refused", 6: "ok"}
    assert "secret" in lines[2]["reason"].lower() and "longer than" in lines[4]["reason"]
    assert {n: lines[n]["observation_id"] for n in (1, 3, 6)} == keys  # the keys run_node.py import gives the file
    assert all(lines[n]["pending"] for n in (1, 3, 6))
    assert (report["ok"], report["duplicate"], report["refused"], report["unreadable"]) == (3, 0, 2, 0)
    stored = await _observations(memory)
    assert stored == {keys[1]: ("on day 1 I planted tulips", "alice"), keys[3]: ("I keep bees on the roof", "bob"),
                      keys[6]: ("a line that names no speaker", "import")}  # default_source, as run_node.py import

    again = (await _post(node.url, LOADER, body)).json()["result"]  # a retried request
    assert {line["line"]: line["status"] for line in again["lines"]} == {
        1: "duplicate", 2: "refused", 3: "duplicate", 4: "refused", 6: "duplicate"}
    assert {line["line"]: line.get("observation_id") for line in again["lines"] if line["observation_id"]} == keys
    assert await _observations(memory) == stored

    # The command line imports the same file under the same keys: everything is already there.
    path = tmp_path / "chat.txt"
    path.write_bytes(CHAT.encode())
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "import", str(path), "--format", "chat", "--url", node.url,
        "--token", LOADER, "--defer-extraction", env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120.0)
    assert proc.returncode == 0, err.decode()
    assert "(0 new, 3 already there), 2 refused" in out.decode()
    assert await _observations(memory) == stored


async def test_tokens_limits_and_spaces(make_node: NodeFactory, store_service: MemoryService) -> None:
    memory = SpacedMemory(store_service)
    node = await make_node({"store", "llm", "embed"}, providers={"store": memory}, request_timeout=60.0)
    body: dict[str, object] = {"content": CHAT, "format": "chat", "defer_extraction": True}

    resp = await _post(node.url, READER, body)  # import writes: the write scope
    assert resp.status_code == 403 and "'write' scope" in resp.text

    # Without speak-for a line is written only as the token's own; another speaker's line is refused alone.
    own = {**body, "default_source": "writer"}
    lines = {line["line"]: line for line in (await _post(node.url, WRITER, own)).json()["result"]["lines"]}
    assert lines[1]["status"] == "refused" and "needs the speak-for scope" in lines[1]["reason"]
    assert lines[6]["status"] == "ok"
    assert list((await _observations(memory)).values()) == [("a line that names no speaker", "writer")]
    as_other = {**body, "as_source": None}  # as_source is the node's to set, whatever the body says
    lines = {line["line"]: line for line in (await _post(node.url, WRITER, as_other)).json()["result"]["lines"]}
    assert lines[6]["status"] == "refused" and "'import'" in lines[6]["reason"]

    # Over the line limit: refused as a whole with the setting's name, nothing written.
    before = await _observations(memory)
    too_long = "".join(f"loader: note {i}\n" for i in range(MAX_LINES + 1))
    resp = await _post(node.url, LOADER, {"content": too_long, "format": "chat"})
    assert resp.status_code == 400 and "import_request_max_lines" in resp.text
    resp = await _post(node.url, LOADER, {"content": "not json\n", "format": "csv"})
    assert resp.status_code == 400 and "format" in resp.text
    assert await _observations(memory) == before

    # Into a space, through the Python client: the lines land there only; unreadable lines are reported.
    async with HttpMemoryClient(node.url, token("ops", "read,admin")) as admin:
        await admin.create_space("imports")
    async with HttpMemoryClient(node.url, LOADER) as client:
        report = await client.import_file('{"text": "the roof leaks", "source": "carol"}\nnot json\n',
                                          "jsonl", space="imports", defer_extraction=True)
    assert [(line.line, line.status) for line in report.lines] == [(1, "ok"), (2, "unreadable")]
    assert list((await _observations(memory, "imports")).values()) == [("the roof leaks", "carol")]
    assert await _observations(memory) == before
