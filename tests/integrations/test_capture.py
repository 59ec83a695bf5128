"""``mnemonet capture`` with a recorded Claude Code Stop payload and transcript, against a real node.

The fixtures in ``data/`` follow Claude Code's transcript format: a summary line, user turns (a string, or
text blocks), assistant turns (text and tool_use blocks), a tool_result carried as a user line, a meta
line (a slash command), a sidechain (subagent) line, and a turn holding an AWS key.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import socket
from pathlib import Path

from netsupport import client_token

from mnemonet.integrations.capture import SPOOL
from mnemonet.integrations.capture import main as capture_main
from mnemonet.node.cli_entry import main as entry_main
from mnemonet.node.peer_node import PeerNode
from mnemonet.service import SpacedMemory

DATA = Path(__file__).resolve().parent / "data"
TOKEN = client_token("read,write,speak-for", name="claude-code")
FIRST = [("user", "The checkout total is wrong when a coupon is applied. We use Postgres 16 for the shop."),
         ("claude-code", "I'll look at how the coupon is applied in cart.py."),
         ("claude-code", "The coupon was applied after tax; it must be applied before tax. Fixed in cart.py.")]
MORE = [("claude-code", "I won't use credentials pasted in chat; the deploy reads them from the vault."),
        ("user", "Thanks. Our release day is Thursday.")]


def _payload(transcript: Path) -> str:
    payload = json.loads((DATA / "claude_code_stop_payload.json").read_text())
    return json.dumps({**payload, "transcript_path": str(transcript)})


async def _capture(url: str, transcript: Path, state: Path, *, entry: bool = False) -> tuple[int, str]:
    notes = io.StringIO()
    argv = ["--url", url, "--token", TOKEN, "--state-dir", str(state)]
    if entry:  # `mnemonet capture` / `run_node.py capture`: the same main behind the node's command line
        import sys
        old = sys.stdin, sys.stderr
        sys.stdin, sys.stderr = io.StringIO(_payload(transcript)), notes
        try:
            code = await asyncio.to_thread(entry_main, ["capture", *argv])
        finally:
            sys.stdin, sys.stderr = old
    else:
        code = await asyncio.to_thread(capture_main, argv, io.StringIO(_payload(transcript)), notes)
    return code, notes.getvalue()


async def _said(memory: SpacedMemory) -> list[tuple[str | None, str]]:
    return sorted((o.source, o.text) for o in await memory.get_recent_observations(50))


async def test_captured_twice_each_turn_is_observed_once_by_its_speaker(
    store_node: PeerNode, memory: SpacedMemory, tmp_path: Path
) -> None:
    transcript = tmp_path / "session.jsonl"
    shutil.copy(DATA / "claude_code_transcript.jsonl", transcript)
    state = tmp_path / "state"
    code, notes = await _capture(store_node.url, transcript, state, entry=True)
    assert code == 0, notes
    assert await _said(memory) == sorted(FIRST)
    assert "skipped a user turn of session" in notes and "aws_access_key" in notes
    assert "AKIA" not in notes
    observation = next(o for o in await memory.get_recent_observations(50) if o.source == "user")
    assert observation.metadata["session"] == "5f0c6f2e-8a51-4d7e-9b1a-3c2d7e9f0a11"
    assert observation.metadata["role"] == "user" and observation.metadata["turn"] == "u1"

    code, notes = await _capture(store_node.url, transcript, state)  # the same hook again: nothing new
    assert code == 0 and "0 turns observed" in notes, notes
    assert await _said(memory) == sorted(FIRST)

    with transcript.open("a") as f:  # the session goes on
        f.write((DATA / "claude_code_transcript_more.jsonl").read_text())
    code, notes = await _capture(store_node.url, transcript, state)
    assert code == 0 and "2 turns observed" in notes, notes
    assert await _said(memory) == sorted(FIRST + MORE)

    shutil.rmtree(state)  # the offsets lost: everything is read again, and the keys write nothing twice
    code, notes = await _capture(store_node.url, transcript, state)
    assert code == 0, notes
    assert await _said(memory) == sorted(FIRST + MORE)
    assert not any("AKIA" in p.read_text() for p in state.iterdir() if p.is_file())


async def test_with_the_node_down_the_turns_are_spooled_then_sent_on_the_next_call(
    store_node: PeerNode, memory: SpacedMemory, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    transcript = tmp_path / "session.jsonl"
    shutil.copy(DATA / "claude_code_transcript.jsonl", transcript)
    state = tmp_path / "state"
    code, notes = await _capture(down, transcript, state)
    assert code == 0, notes  # a hook never blocks the agent
    assert "3 turns spooled" in notes and f"no node answered at {down}" in notes, notes
    spooled = (state / SPOOL).read_text().splitlines()
    assert len(spooled) == 3 and "AKIA" not in "".join(spooled)  # a secret never reaches the disk
    assert await _said(memory) == []

    with transcript.open("a") as f:
        f.write((DATA / "claude_code_transcript_more.jsonl").read_text())
    code, notes = await _capture(store_node.url, transcript, state)  # the node is back
    assert code == 0 and "5 turns observed, 0 spooled" in notes, notes
    assert await _said(memory) == sorted(FIRST + MORE)
    assert (state / SPOOL).read_text() == ""


async def test_a_payload_that_is_not_a_hooks_is_one_line_and_exit_1(tmp_path: Path) -> None:
    for bad in ("", "not json", "[1, 2]", '{"session_id": "x"}'):
        notes = io.StringIO()
        code = await asyncio.to_thread(capture_main, ["--state-dir", str(tmp_path)], io.StringIO(bad), notes)
        assert code == 1 and notes.getvalue().startswith("mnemonet capture: bad hook payload on stdin:"), bad
        assert len(notes.getvalue().splitlines()) == 1
