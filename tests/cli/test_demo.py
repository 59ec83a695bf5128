"""The one-command demo, as a user runs it: start, observe, ask, /quit; then again on the same data."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import uuid
from pathlib import Path

from mnemonet.p2p.tokens import TokenVerifier

REPO = Path(__file__).resolve().parents[2]
START_AND_STOP_WITHIN = 120.0  # seconds, a generous bound for a cold start on two busy cores


async def _demo(data_dir: Path, commands: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "MNEMONET_LLM")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "run_node.py"), "demo", "--data-dir", str(data_dir), "--port", "0",
        env={**env, "PYTHONPATH": str(REPO / "src")}, cwd=REPO, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(commands.encode()), START_AND_STOP_WITHIN)
    return proc.returncode or 0, out.decode(), err.decode()


def _printed_token(transcript: str) -> str:
    [line] = [line for line in transcript.splitlines() if line.strip().startswith("client token")]
    return line.rsplit(" ", 1)[1]


def _after(transcript: str, command: str) -> list[str]:
    return transcript.split(f"user> {command}\n", 1)[1].splitlines()


async def test_demo_answers_and_keeps_its_data() -> None:
    data_dir = REPO / ".data" / "test" / f"demo-{uuid.uuid4().hex[:8]}"
    try:
        code, out, err = await _demo(data_dir, "I prefer morning meetings\n?what do I prefer\n/peers\n/quit\n")
        assert code == 0, err + out
        assert "language model: offline (rule-based) (no ANTHROPIC_API_KEY set" in out
        assert "starting embedded FalkorDB and PostgreSQL" in out and " done (" in out
        answer = _after(out, "?what do I prefer")
        assert "morning" in answer[0].lower() and answer[1].startswith("  [confidence 0.9")
        peers = _after(out, "/peers")
        assert peers[0] == "5 members (this node: cli):"
        assert {line.split()[0] for line in peers[1:6]} == {"store", "inference", "validation", "consolidation", "cli"}
        assert out.rstrip().endswith(f"stopped; data kept in {data_dir}")
        assert err == ""  # logs went to the data dir's log file
        assert (data_dir / "logs" / "demo.log").stat().st_size > 0
        assert any((data_dir / "falkordb").rglob("*.aof"))
        # A key kept for the owner only, a client token and a dashboard URL carrying it.
        key_file = data_dir / "cluster.key"
        assert key_file.stat().st_mode & 0o777 == 0o600
        token = _printed_token(out)
        assert f"/ui#key={token}" in out
        verified = TokenVerifier(key_file.read_text().strip()).verify(token)
        assert (verified.name, verified.scopes) == ("user", frozenset({"read", "write"}))

        code, out, err = await _demo(data_dir, "/recent\n")  # end of input quits too
        assert code == 0, err + out
        TokenVerifier(key_file.read_text().strip()).verify(token)  # the same key: earlier tokens still work
        assert _printed_token(out) != token
        assert '"I prefer morning meetings"  (user, obs-' in "\n".join(_after(out, "/recent"))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
