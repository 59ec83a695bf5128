"""An idle node stops quickly: issue 21 item 5 ("every stop takes ~5 s even when idle").

The wait was redis-py's default retry policy: FalkorDB's SHUTDOWN closes the connection, and the
client reconnected to the stopped server with backoff for ~4 s. The bound is the node's own graceful
stop budget (``shutdown_timeout``), which that wait alone overran; an idle stop measures ~0.4 s here.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from mnemonet.node.peer_node import PeerNode
from mnemonet.settings import Settings


async def test_an_idle_store_node_stops_within_the_graceful_budget(tmp_path: Path) -> None:
    settings = Settings(port=0, data_dir=tmp_path / "data", llm="offline", node_id="idle")
    node = PeerNode(settings, {"store", "llm", "embed"})
    await node.start()
    try:
        await node.health_checks()  # the store opens on first use; /health's checks start it
        await asyncio.wait_for(node.providers.store_ready.wait(), 120)
        # /health's last check answers for health_cache_ttl: the store is ok once a check runs after it opened.
        deadline = time.monotonic() + 60
        while (await node.health_checks())["status"] != "ok":
            assert time.monotonic() < deadline, "the opened store never checked ok"
            await asyncio.sleep(settings.health_cache_ttl)  # the next check is due then
    except BaseException:
        await node.stop()
        raise
    started = time.monotonic()
    await node.stop()
    elapsed = time.monotonic() - started
    assert node.state == "stopped"
    assert elapsed < settings.shutdown_timeout, f"stop took {elapsed:.2f}s"
