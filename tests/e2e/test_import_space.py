"""``run_node.py import --space NAME`` against a real store node: the lines land in that memory space only."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from netsupport import CLUSTER_KEY, NodeFactory

from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, SpacedMemory

REPO = Path(__file__).resolve().parents[2]
LINES = 6


def token(name: str, scopes: str, spaces: str) -> str:
    return create_token(CLUSTER_KEY, name, scopes.split(","), 3600.0, spaces=spaces)[0]


LOADER = token("loader", "read,write,speak-for", "imports")  # speak-for: the chat names its speakers
OUTSIDER = token("outsider", "read,write,speak-for", "default")


async def _import(path: Path, url: str, tok: str, *extra: str, token_in_env: bool = False) -> tuple[int, str, str]:
    """Run ``run_node.py import``; the token as ``--token``, or with ``token_in_env`` as MNEMONET_TOKEN."""
    given = {"MNEMONET_TOKEN": tok} if token_in_env else {}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "import", str(path), "--format", "chat", "--url", url,
        *([] if token_in_env else ["--token", tok]), "--concurrency", "2", *extra,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **given},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300.0)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _observation_ids(memory: SpacedMemory, space: str) -> set[str]:
    graph = (await memory.memory(space)).graph
    return {r["id"] for r in await graph.driver.read("MATCH (o:Observation) RETURN o.id AS id", {})}


async def test_import_into_a_space_lands_there_and_not_in_default(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    memory = SpacedMemory(store_service)
    node = await make_node({"store", "llm", "embed"}, providers={"store": memory}, request_timeout=60.0)
    async with HttpMemoryClient(node.url, token("ops", "read,admin", "*")) as admin:
        await admin.create_space("imports")
    path = tmp_path / "chat.txt"
    path.write_text("".join(f"alice: on day {i} I planted {i} tulips\n" for i in range(1, LINES + 1)))
    before_default = await _observation_ids(memory, "default")

    code, out, err = await _import(path, node.url, LOADER, "--space", "imports")
    assert code == 0, err
    assert f"imported {LINES} of {LINES} lines ({LINES} new" in out
    in_space = await _observation_ids(memory, "imports")
    assert len(in_space) == LINES
    assert await _observation_ids(memory, "default") == before_default  # nothing went to default

    # A token not allowed in the space: a clear error naming the space, nothing written anywhere.
    # Given as MNEMONET_TOKEN (the token setting): the refusal names the space, so the node got the token.
    other = tmp_path / "other.txt"
    other.write_text("bob: I keep bees on the roof\n")
    code, _, err = await _import(other, node.url, OUTSIDER, "--space", "imports", token_in_env=True)
    assert code == 1 and "may not use space 'imports'" in err, err
    assert len(await _observation_ids(memory, "imports")) == LINES
    assert await _observation_ids(memory, "default") == before_default

    # A malformed space name is refused before anything is sent.
    code, _, err = await _import(other, node.url, LOADER, "--space", "No Such!")
    assert code == 2 and "--space" in err, err
