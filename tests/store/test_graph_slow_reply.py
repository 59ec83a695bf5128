"""A FalkorDB reply slower than the client library's own read timeout is awaited up to ``graph_query_timeout``.

redis-py 8 gives a connection a 5 s socket read timeout unless told otherwise, and the driver's pool did
not tell it: a write group that took the server over 5 s (bench/scale.py loading past 100,000 statements,
while the server forked for its append-only file rewrite) failed "graph unavailable ... Timeout reading",
though ``graph_query_timeout`` allowed far longer.
"""

from __future__ import annotations

from pathlib import Path

from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph import GraphStore

PAUSE_MS = 6_000  # the server holds its clients this long, by its own clock: past redis-py 8's default 5 s


async def test_a_reply_slower_than_the_library_default_is_awaited(test_data_dir: Path, unique_name: str) -> None:
    # A server of its own: the pause holds every client of the server, and other test files share the session's.
    server = EmbeddedFalkorDB(test_data_dir / unique_name)
    await server.start()
    settings = Settings(falkordb_host=server.host, falkordb_port=server.port,
                        falkordb_password=server.password or "", graph_name=unique_name,
                        graph_query_timeout=PAUSE_MS / 1000 + 120)
    store = await GraphStore.open(settings)
    admin = server.client()
    try:
        await store.driver.write("CREATE (:Probe {n: 1})", {})  # the pool's connection is made before the pause
        await admin.execute_command("CLIENT", "PAUSE", str(PAUSE_MS), "ALL")
        written = await store.driver.write("CREATE (:Probe {n: 2})", {})  # answered once the pause ends
        assert written.nodes_created == 1
        rows = await store.driver.read("MATCH (p:Probe) RETURN p.n AS n ORDER BY n", {})
        assert [r["n"] for r in rows] == [1, 2]
    finally:
        await admin.aclose()
        await store.close()
        await server.stop()
