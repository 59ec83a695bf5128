"""``run_node.py import`` on the paths a new user takes: a token that speaks for one speaker only, a wrong
``--url``, the help, and a file of the wrong format (issue 30)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path

from netsupport import NodeFactory, client_token

from mnemonet.node.import_command import build_parser
from mnemonet.service import MemoryService

REPO = Path(__file__).resolve().parents[2]


async def _import(path: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "import", str(path), *args,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300.0)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _observed_texts(service: MemoryService) -> list[str]:
    rows = await service.graph.read_query("MATCH (o:Observation) RETURN o.raw_content AS text", {})
    return sorted(r["text"] for r in rows)


async def test_lines_the_token_may_not_speak_for_are_refused_one_by_one_and_the_import_goes_on(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, request_timeout=60.0)
    path = tmp_path / "chat.txt"
    path.write_text("alice: I planted tulips\nbob: I keep bees\nalice: I sold my bike\nbob: I moved to Oslo\n")
    # alice's token without speak-for: bob's lines are not hers to write.
    code, out, err = await _import(path, "--format", "chat", "--url", node.url,
                                   "--token", client_token("read,write", name="alice"), "--concurrency", "1")
    assert code == 0, err
    assert "imported 2 of 4 lines (2 new, 0 already there), 2 refused" in out, out
    assert "line 2: refused:" in err and "line 4: refused:" in err and "speak-for" in err, err
    assert "run the same command again" not in err
    assert await _observed_texts(store_service) == ["I planted tulips", "I sold my bike"]


async def test_a_wrong_url_fails_at_once_naming_it(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    path = tmp_path / "notes.jsonl"
    path.write_text('{"text": "I keep bees", "source": "bob"}\n')
    started = time.monotonic()
    # Retries that would take a minute (1+2+4+8+16+32 s) are for a node that stops mid-import, not for one
    # that was never there.
    code, _, err = await _import(path, "--url", url, "--max-retries", "5", "--retry-backoff", "1")
    assert code == 1 and f"no node at {url}" in err, err
    assert "run the same command again" not in err
    assert time.monotonic() - started < 30.0


def test_the_help_shows_the_defaults() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "(default: jsonl)" in text and "(default: http://127.0.0.1:9000)" in text


async def test_a_file_with_nothing_importable_exits_non_zero_saying_why(
    make_node: NodeFactory, store_service: MemoryService, tmp_path: Path
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, request_timeout=60.0)
    path = tmp_path / "chat.txt"
    path.write_text("alice: I planted tulips\nbob: I keep bees\n")
    code, _, err = await _import(path, "--url", node.url, "--token", client_token("read,write,speak-for"))  # jsonl
    assert code == 1, err
    assert "nothing imported: none of the 2 lines could be read as jsonl" in err, err
    assert await _observed_texts(store_service) == []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = await _import(empty, "--url", node.url, "--token", client_token("read,write,speak-for"))
    assert code == 1 and "nothing imported: the file has no lines to import" in err, err
