"""A bulk import through a network whose language model and embedder are on their own node (issue 31 row 9).

A store node (its model and embedder are proxies to the model node), a ``llm,embed`` node, then an
inference and a validation node, real nodes over real sockets. The validation worker's first pass over
the import's statements sends 4 batches of 20 candidate searches at once (80 requests to the store,
each embedding its query on the model node), while a second import extracts on the same model node.
On the branch base requests past 64 on a link were refused "busy": validation batches failed, lines were
left "extraction pending" and index writes failed. Now a full link makes its sender wait: nothing
fails, nothing is left pending once the workers are idle. The 1,500-line run is ``bench/import_network.py``.
"""

from __future__ import annotations

from typing import Any

import httpx
from netsupport import ADMIN_TOKEN, NodeFactory, eventually, sees_all, until

from mnemonet.embed import make_embedder
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.client import RemoteEmbedder, RemoteLanguageModel
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

LINES = 80  # per import: past a link's 64 requests once the validation worker reads them in one pass
TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.05, extraction_grace=0.5,
              request_timeout=120.0)
IDLE_WITHIN = 300.0  # seconds for the workers to finish the backlog on two loaded cores


class ThroughNode:
    """Routes the store service's model and embedder calls through the store node, started after it."""

    node: PeerNode | None = None

    async def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        assert self.node is not None, "the store node is not started yet"
        return await self.node.call(method, kwargs)


def _chat(first: int) -> str:
    places = ("Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent", "Split", "Brno")
    return "".join(f"alice: I visited {places[i % len(places)]} in spring number {i}\n"
                   for i in range(first, first + LINES))


async def _import(http: httpx.AsyncClient, url: str, content: str) -> dict[str, Any]:
    resp = await http.post(f"{url}/v1/import", json={"content": content, "format": "chat"})
    assert resp.status_code == 200, resp.text
    report: dict[str, Any] = resp.json()["result"]
    return report


async def test_a_bulk_import_through_a_model_node_leaves_nothing_pending_or_failed(
    make_node: NodeFactory, falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str
) -> None:
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url, extraction_grace=0.5)
    named = make_embedder(settings)  # names the cluster's model and dimension; loads nothing
    through = ThroughNode()
    service = await build_memory_service(
        settings, RemoteLanguageModel(through),
        RemoteEmbedder(through, named.model, named.dimension, settings.embed_batch_size), vector_schema=unique_name)
    try:
        model = await make_node({"llm", "embed"}, **TIMERS)
        store = await make_node({"store"}, seed=model, providers={"store": SpacedMemory(service)}, **TIMERS)
        through.node = store
        await eventually(lambda: sees_all([model, store]), 10.0, "the store and model nodes joined")
        headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        async with httpx.AsyncClient(headers=headers, timeout=IDLE_WITHIN, trust_env=False) as http:
            first = await _import(http, store.url, _chat(0))
            workers = [await make_node({cap}, seed=store, **TIMERS) for cap in ("validation", "inference")]
            await eventually(lambda: sees_all([model, store, *workers]), 10.0, "the workers joined")
            # The validation worker's first pass (80 statements) runs while the second import extracts.
            second = await _import(http, store.url, _chat(LINES))

            stats: dict[str, Any] = {}

            async def idle() -> bool:
                stats.update((await http.post(f"{store.url}/v1/stats", json={})).json()["result"])
                return not any(stats["backlog"][k] for k in ("extraction", "inference", "validation", "vectors"))

            await until(idle, IDLE_WITHIN, "the workers finished the backlog", step=1.0)
    finally:
        await service.close()
    for report in (first, second):
        assert (report["ok"], report["refused"], report["unreadable"]) == (LINES, 0, 0)
        assert [line["line"] for line in report["lines"] if line["pending"]] == []  # every line extracted inline
    assert stats["vector_index_failures"] == 0
    assert stats["graph"]["Observation"] == 2 * LINES
    failed = {next(iter(w.capabilities)): [s["failed"] for s in w.worker_stats()] for w in workers}
    assert failed == {"validation": [0], "inference": [0]}
