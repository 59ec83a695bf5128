"""The node's embedded FalkorDB is its own: a password nobody else knows, files and directories only its user reads."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import AuthenticationError, ResponseError

from mnemonet.settings import Settings
from mnemonet.store.dialects.falkordb import FalkorDriver
from mnemonet.store.embedded_falkordb import SECRET_FILE, EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore


def _modes(directory: Path) -> dict[str, int]:
    """The permission bits of every path under ``directory``, itself included."""
    found = {".": stat.S_IMODE(directory.stat().st_mode)}
    for root, dirs, files in os.walk(directory):
        for name in [*dirs, *files]:
            path = Path(root, name)
            found[str(path.relative_to(directory))] = stat.S_IMODE(path.lstat().st_mode)
    return found


async def test_only_the_node_reads_or_reaches_its_graph(tmp_path: Path) -> None:
    data = tmp_path / "falkordb"
    data.mkdir(mode=0o755)
    (data / "left-by-an-old-version.aof").write_text("x")
    (data / "left-by-an-old-version.aof").chmod(0o644)
    server = EmbeddedFalkorDB(data)
    await server.start()
    try:
        assert server.password and server.password not in " ".join(_cmdline(server))  # ps never shows it
        store = GraphStore(FalkorDriver(server.host, server.port, "g", password=server.password), Settings())
        await store.ensure_indexes()
        await store.driver.write("CREATE (:N {v: 1})", {})
        await server.compact()  # the append-only files rewritten: written again under the server's umask
        modes = _modes(data)
        assert modes[SECRET_FILE] == 0o600 and (data / SECRET_FILE).read_text().strip() == server.password
        assert any(name.startswith("appendonlydir/") for name in modes)
        loose = {name: oct(mode) for name, mode in modes.items()
                 if mode != (0o700 if (data / name).is_dir() else 0o600)}
        assert loose == {}, "files must be 0600 and directories 0700"

        anonymous = aioredis.Redis(host=server.host, port=server.port)
        wrong = aioredis.Redis(host=server.host, port=server.port, password="guess")
        try:
            with pytest.raises((AuthenticationError, ResponseError), match="(?i)auth"):
                await anonymous.execute_command("GRAPH.RO_QUERY", "g", "MATCH (n) RETURN count(n)")
            with pytest.raises((AuthenticationError, ResponseError), match="(?i)password|auth"):
                await wrong.ping()
        finally:
            await anonymous.aclose()
            await wrong.aclose()
        await store.driver.close()
    finally:
        await server.stop()
    # The next start keeps the password, so the same data is reachable with it.
    again = EmbeddedFalkorDB(data)
    await again.start()
    try:
        assert again.password == server.password
        driver = FalkorDriver(again.host, again.port, "g", password=again.password)
        rows = await driver.read("MATCH (n:N) RETURN n.v AS v", {})
        assert [dict(r) for r in rows] == [{"v": 1}]
        await driver.close()
    finally:
        await again.stop()


def _cmdline(server: EmbeddedFalkorDB) -> list[str]:
    assert server.process is not None
    return Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode().split("\0")
