"""Embedded servers of a test's own, in its own directories, and a byte grep over their files.

The session's servers hold every test's data, so a test that greps the data directories for erased
text starts its own FalkorDB and PostgreSQL. FalkorDB is told not to LZF-compress strings in its
rewritten file (``rdbcompression no``): a compressed string could hide the erased text from grep and
the test would pass for nothing (each test also finds a text it kept with the same grep).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.embedded_postgres import EmbeddedPostgres


@asynccontextmanager
async def own_servers(root: Path, graph_name: str) -> AsyncIterator[Settings]:
    """FalkorDB in ``root/falkordb`` and PostgreSQL in ``root/postgres``; the settings of a store on them."""
    falkordb, postgres = EmbeddedFalkorDB(root / "falkordb"), EmbeddedPostgres(root / "postgres")
    _, url = await asyncio.gather(falkordb.start(), postgres.start())
    config = falkordb.client()
    try:
        await config.config_set("rdbcompression", "no")
        yield Settings(llm="offline", falkordb_port=falkordb.port, falkordb_password=falkordb.password or "",
                       graph_name=graph_name, database_url=url)
    finally:
        await config.aclose()
        await asyncio.gather(falkordb.stop(), postgres.stop())


def _files(directory: Path) -> list[tuple[Path, bytes]]:
    """Each file under ``directory`` with its bytes in lower case."""
    found = []
    for path in directory.rglob("*"):
        try:
            if path.is_file():
                found.append((path, path.read_bytes().lower()))
        except OSError:  # a file removed while the walk ran (an old WAL segment, a rewritten AOF)
            continue
    return found


def found_in(directory: Path, needle: str) -> list[str]:
    """Files under ``directory`` whose bytes contain ``needle`` (ASCII, any case)."""
    wanted = needle.lower().encode()
    return [str(path.relative_to(directory)) for path, data in _files(directory) if wanted in data]


def matches_in(directory: Path, pattern: str) -> set[str]:
    """Every match of ``pattern`` (a regular expression of lower-case ASCII) in the bytes of the files under
    ``directory``, read once each (any case)."""
    compiled = re.compile(pattern.encode())
    return {m.decode() for _, data in _files(directory) for m in compiled.findall(data)}
