"""``run_node.py import --defer-extraction`` against real nodes: lines are recorded with their extraction pending
(no model call inline), and the inference worker extracts each exactly once afterwards."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import httpx
from netsupport import ADMIN_TOKEN, NodeFactory, eventually, sees_all

from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.service import MemoryService

REPO = Path(__file__).resolve().parents[2]
LINES = 8
TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.05, extraction_grace=0.5,
              request_timeout=60.0)


# A short grace, so the inference worker takes pending extractions within the test.
STORE_SETTINGS = dict(extraction_grace=0.5)


async def _ledger(service: MemoryService) -> dict[str, tuple[int, int]]:
    """Per observation: extraction done-markers, and statements derived from it."""
    rows = await service.graph.read_query(
        "MATCH (o:Observation) "
        "OPTIONAL MATCH (o)<-[m:PROCESSED]-(:Source {name: 'extractor'}) "
        "WITH o, count(m) AS marks "
        "OPTIONAL MATCH (o)<-[:DERIVED_FROM]-(s:Statement) "
        "RETURN o.id AS id, marks, count(s) AS statements", {})
    return {r["id"]: (r["marks"], r["statements"]) for r in rows}


async def test_import_with_deferred_extraction_is_extracted_once_by_the_worker(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **TIMERS)
    path = tmp_path / "chat.txt"
    path.write_text("".join(f"alice: I visited city number {i} in spring\n" for i in range(1, LINES + 1)))

    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "import", str(path), "--format", "chat", "--url", store.url,
        "--token", ADMIN_TOKEN, "--concurrency", "2", "--defer-extraction",
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300.0)
    assert proc.returncode == 0, err.decode()
    assert f"imported {LINES} of {LINES} lines ({LINES} new" in out.decode()
    assert f"{LINES} with extraction pending" in out.decode()
    # No inference node yet: every line is recorded, none extracted (the import did not wait for the model).
    ledger = await _ledger(store_service)
    assert len(ledger) == LINES and set(ledger.values()) == {(0, 0)}
    assert (await store_service.stats())["extractions_pending"] == LINES

    inference = await make_node({"inference"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, inference]), 10.0, "the inference node joined")
    deadline = time.monotonic() + 120.0
    while (await store_service.stats())["extractions_pending"]:
        assert time.monotonic() < deadline, "the worker did not extract the deferred lines within 120 s"
        await asyncio.sleep(0.1)
    ledger = await _ledger(store_service)
    assert set(ledger.values()) == {(1, 1)}  # each extracted exactly once, one statement each


async def test_defer_extraction_over_http_is_strict(make_node: NodeFactory, store_service: MemoryService) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **TIMERS)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with httpx.AsyncClient(headers=headers, timeout=60.0, trust_env=False) as http:
        body = {"text": "Dana works at Initech", "idempotency_key": "strict-1"}
        bad = await http.post(f"{store.url}/v1/observe", json={**body, "defer_extraction": "yes"})
        assert bad.status_code == 400 and "defer_extraction" in bad.text
        ok = await http.post(f"{store.url}/v1/observe", json={**body, "defer_extraction": True})
        assert ok.status_code == 200, ok.text
        result = ok.json()["result"]
        assert result["pending"] is True and result["statements"] == []
    async with HttpMemoryClient(store.url, ADMIN_TOKEN) as client:  # the client passes it through
        deferred = await client.observe("Erin lives in Oslo", defer_extraction=True)
        assert deferred.created and deferred.pending and deferred.statements == []
        inline = await client.observe("Frank likes jazz")
        assert not inline.pending and inline.statements
