"""A CLI node with a client token (``--token`` / ``MNEMONET_TOKEN``) makes and shares spaces; without one, the
refusal is one line, and a script stops at the first failed command with a non-zero exit (issue 30)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from netsupport import CLUSTER_KEY, client_token, node_factory

from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.node.peer_node import PeerNode
from mnemonet.profiles import PROFILES
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

TEST = PROFILES["test"]
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0


@pytest.fixture
async def spaced_store(falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
                       ) -> AsyncIterator[tuple[PeerNode, SpacedMemory]]:
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url)
    llm, embedder = make_language_model(settings), make_embedder(settings)
    memory = SpacedMemory(await build_memory_service(settings, llm, embedder, vector_schema=unique_name))
    try:
        async with node_factory() as make:
            node = await make({"store", "llm", "embed"}, providers={"store": memory, "llm": llm, "embed": embedder},
                              node_id="store")
            yield node, memory
    finally:
        await memory.close()


async def _cli(store: PeerNode, script: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    fast = ["--probe-interval", str(TEST["probe_interval"]), "--probe-timeout", str(TEST["probe_timeout"]),
            "--gossip-interval", str(TEST["gossip_interval"]), "--shutdown-timeout", str(TEST["shutdown_timeout"])]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MNEMONET_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "--capabilities", "cli", "--port", "0", "--bootstrap", store.url,
        "--cluster-key", CLUSTER_KEY, "--node-id", "cli", *fast, "--script", str(script), *extra,
        env={**environ, "PYTHONPATH": str(REPO / "src"), "MNEMONET_LLM": "offline", **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _texts(memory: SpacedMemory, space: str) -> list[str]:
    return sorted(o.text for o in await memory.get_recent_observations(50, space=space))


async def test_without_a_token_a_space_is_refused_in_one_line_and_the_script_stops(
    spaced_store: tuple[PeerNode, SpacedMemory], tmp_path: Path
) -> None:
    store, memory = spaced_store
    script = tmp_path / "team.txt"
    script.write_text("/space research\nthe research team meets on thursdays\n")
    code, out, err = await _cli(store, script)
    assert code != 0, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "admin" in errors[0], out
    assert "Traceback" not in err and "Traceback" not in out, err
    assert "the research team" not in out  # the script stopped before its next line
    assert await _texts(memory, "default") == []  # nothing went into the default space instead


@pytest.mark.parametrize("given", ["flag", "env"])
async def test_with_an_admin_token_the_cli_creates_and_shares_spaces(
    spaced_store: tuple[PeerNode, SpacedMemory], tmp_path: Path, given: str
) -> None:
    store, memory = spaced_store
    token = client_token("read,write,admin", name="ops")
    script = tmp_path / "team.txt"
    script.write_text("/space research\nthe research team meets on thursdays\n/space default\n/share research\n")
    extra, env = (["--token", token], {}) if given == "flag" else ([], {"MNEMONET_TOKEN": token})
    code, out, err = await _cli(store, script, *extra, env=env)
    assert code == 0, out + err
    assert "created space 'research'" in out and "space 'default' reads research" in out, out
    assert await _texts(memory, "research") == ["the research team meets on thursdays"]
    assert await _texts(memory, "default") == []
