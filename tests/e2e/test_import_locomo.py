"""A LoCoMo file imported (``run_node.py import``, ``POST /v1/import``) is as searchable as its turns observed
one by one: every turn keeps its speaker, ``dia_id``, session and session date, and the turns of a session are
recorded in their order, so each is embedded with the turn before it as its context and its neighbours in search
are the turns around it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from netsupport import ADMIN_TOKEN, NodeFactory

from mnemonet.node.import_command import run_import
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.store.vector_types import quote_schema

SESSIONS = 3
TURNS = 6  # per session: more than fit in one round of the import's 8 lines at once


def _locomo() -> list[dict[str, Any]]:
    samples = []
    for sample, (a, b) in (("conv-a", ("Ann", "Bo")), ("conv-b", ("Cy", "Di"))):
        conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for n in range(1, SESSIONS + 1):
            conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
            conversation[f"session_{n}"] = [
                {"speaker": (a, b)[t % 2], "dia_id": f"D{n}:{t + 1}",
                 "text": f"{sample} session {n} turn {t + 1}: I went to the market number {n * 10 + t}"}
                for t in range(TURNS)]
        samples.append({"sample_id": sample, "conversation": conversation, "qa": []})
    return samples


def _expected(samples: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, str]]]:
    """Each turn's text -> (speaker, metadata), as ``bench/retrieval_locomo.py`` observes it."""
    out = {}
    for sample in samples:
        conv = sample["conversation"]
        for n in range(1, SESSIONS + 1):
            for turn in conv[f"session_{n}"]:
                out[turn["text"]] = (turn["speaker"], {
                    "dia_id": turn["dia_id"], "session": f"{sample['sample_id']}:session_{n}",
                    "session_date": conv[f"session_{n}_date_time"]})
    return out


async def _check_as_observed(service: MemoryService, samples: list[dict[str, Any]]) -> None:
    expected = _expected(samples)
    observations = {o.text: o for o in await service.graph.recent_observations(1000)}
    assert set(observations) == set(expected)
    for text, (speaker, metadata) in expected.items():
        assert (observations[text].source, observations[text].metadata) == (speaker, metadata)
    await service.indexer.drained()  # indexed behind the writes (index_in_background)
    async with service.vectors.acquire() as conn:
        rows = await conn.fetch(f"SELECT text, context, created_at, metadata->>'session' AS session "
                                f"FROM {quote_schema(service.vectors.schema)}.embeddings "
                                "WHERE kind = 'observation' ORDER BY created_at")
    assert len(rows) == len(expected)
    for sample in samples:
        for n in range(1, SESSIONS + 1):
            # The vector rows hold the turn as the index keeps it: its speaker before its text.
            turns = [f"{t['speaker']}: {t['text']}" for t in sample["conversation"][f"session_{n}"]]
            session = [r for r in rows if r["session"] == f"{sample['sample_id']}:session_{n}"]
            assert [r["text"] for r in session] == turns  # recorded in the conversation's order
            # Each turn but the first embedded with the one before it (index_context_turns 1).
            assert [r["context"] for r in session] == ["", *turns[:-1]]


async def test_locomo_import_keeps_metadata_and_session_order(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, request_timeout=60.0)
    samples = _locomo()
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(samples))
    settings = Settings(import_concurrency=8, import_progress_interval=60.0)
    tally = await run_import(path, "locomo", node.url, ADMIN_TOKEN, settings, io.StringIO(), io.StringIO())
    assert (tally.new, tally.refused, tally.unreadable) == (2 * SESSIONS * TURNS, 0, 0)
    await _check_as_observed(store_service, samples)


async def test_locomo_import_request_keeps_metadata_and_session_order(store_service: MemoryService) -> None:
    samples = _locomo()
    report = await store_service.import_file(json.dumps(samples), "locomo")  # POST /v1/import's method
    assert report.ok == 2 * SESSIONS * TURNS
    assert [line.line for line in report.lines] == list(range(1, 2 * SESSIONS * TURNS + 1))  # still in line order
    await _check_as_observed(store_service, samples)
