"""``run_node.py import`` against a real store node over HTTP: killed midway and resumed, no duplicate, no gap."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from netsupport import ADMIN_TOKEN, NodeFactory

from mnemonet.model.ids import keyed_id
from mnemonet.node.import_sources import Item, Unreadable, file_identity, read_items
from mnemonet.service import MemoryService

REPO = Path(__file__).resolve().parents[2]
LINES = 24
SECRET_LINE, LONG_LINE = 5, 11


def _chat_file(path: Path) -> Path:
    lines = []
    for i in range(1, LINES + 1):
        if i == SECRET_LINE:
            lines.append("alice: my key is sk-ant-" + "a1B2c3D4" * 5)
        elif i == LONG_LINE:
            lines.append("bob: " + "word " * 5000)  # over max_text_chars
        else:
            lines.append(f"{'alice' if i % 2 else 'bob'}: day {i} I walked to the bakery number {i}")
    path.write_text("\n".join(lines) + "\n")
    return path


async def _run_import(path: Path, url: str, *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "import", str(path), "--format", "chat", "--url", url,
        "--token", ADMIN_TOKEN, "--concurrency", "2", "--progress-interval", "0.2", *extra,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _observation_ids(service: MemoryService) -> list[str]:
    rows = await service.graph.read_query("MATCH (o:Observation) RETURN o.id AS id", {})
    return [r["id"] for r in rows]


async def test_import_killed_midway_resumes_without_duplicate_or_gap(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, request_timeout=60.0)
    path = _chat_file(tmp_path / "chat.txt")
    identity = file_identity(path)
    expected = {keyed_id("obs", f"import:{identity}:{n}", "admin") for n in range(1, LINES + 1)
                if n not in (SECRET_LINE, LONG_LINE)}

    first = await _run_import(path, node.url)

    async def some_written() -> None:
        while len(await _observation_ids(store_service)) < 6:  # noqa: ASYNC110 - polling the graph, no event
            await asyncio.sleep(0.05)

    await asyncio.wait_for(some_written(), 120.0)  # the first run wrote some lines
    first.kill()  # SIGKILL: no chance to tidy up
    await first.communicate()
    assert first.returncode == -signal.SIGKILL
    partial = await _observation_ids(store_service)
    assert 6 <= len(partial) < len(expected), "killed midway"

    second = await _run_import(path, node.url)
    out, err = await asyncio.wait_for(second.communicate(), 300.0)
    assert second.returncode == 0, err.decode()
    ids = await _observation_ids(store_service)
    assert len(ids) == len(set(ids)) == len(expected) and set(ids) == expected  # no duplicate, no gap
    report = err.decode()
    assert f"line {SECRET_LINE}: refused:" in report and "secret" in report.lower()
    assert f"line {LONG_LINE}: refused:" in report and "longer than" in report
    summary = out.decode().strip().splitlines()[-1]
    assert f"imported {len(expected)} of {LINES} lines" in summary and "2 refused" in summary
    counts = re.search(r"\((\d+) new, (\d+) already there\)", summary)
    assert counts is not None, summary
    new, already = int(counts.group(1)), int(counts.group(2))
    # A line in flight when the importer died may land after `partial` was read: at least those were there.
    assert new + already == len(expected) and already >= len(partial) and new > 0


def test_readers_number_lines_and_report_what_they_cannot_read(tmp_path: Path) -> None:
    jsonl = tmp_path / "notes.jsonl"
    jsonl.write_text('{"text": "first", "who": "ann"}\n\nnot json\n{"body": "no text"}\n{"text": "last"}\n')
    got = list(read_items(jsonl, "jsonl", source_field="who"))
    assert got == [Item(1, "first", "ann"), Unreadable(3, "not JSON: Expecting value"),
                   Unreadable(4, "no string field 'text'"), Item(5, "last", "import")]
    chat = tmp_path / "chat.txt"
    chat.write_text("Ann: hello there\njust a line\n")
    assert list(read_items(chat, "chat")) == [Item(1, "hello there", "Ann"), Item(2, "just a line", "import")]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": {"session_1": [{"text": "hi"}]}}]')
    with pytest.raises(ValueError, match="not a LoCoMo file"):
        list(read_items(bad, "locomo"))
    # The same bytes elsewhere give the same identity (and so the same keys); other bytes, another.
    copy = tmp_path / "copy.txt"
    copy.write_bytes(chat.read_bytes())
    assert file_identity(copy) == file_identity(chat)
    chat.write_text("Ann: hello there!\n")
    assert file_identity(copy) != file_identity(chat)
