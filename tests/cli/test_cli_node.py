"""The CLI node driven as a user would: run_node.py --capabilities cli against a running store node.

The store node runs in this process (real MemoryService, embedded FalkorDB and PostgreSQL, offline
language model); the CLI node is a real process joined over real sockets, fed a script, piped stdin,
or keystrokes in a pseudo-terminal.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

import pexpect
from netsupport import CLUSTER_KEY, NodeFactory, node_factory

from mnemonet.cli.app import attach_cli
from mnemonet.cli.commands import QUESTION_NOTE
from mnemonet.node.peer_node import PeerNode
from mnemonet.profiles import PROFILES

TEST = PROFILES["test"]
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0
MEETING = [
    "I prefer morning meetings",
    "actually I hate mornings, afternoon is better",
    "/claim user prefers afternoon contradicts user prefers morning meetings",
    "?what are my meeting preferences?",
    "/contradictions",
    "/concept user",
    "/source alice",
    "/peers",
    # A refused secret is a failed command: the script stops there, exit 1, /quit never read.
    "my api_key = sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    "/quit",
]
SECRET = MEETING[-2]


def _cli_args(store: PeerNode, *extra: str) -> list[str]:
    fast = ["--probe-interval", str(TEST["probe_interval"]), "--probe-timeout", str(TEST["probe_timeout"]),
            "--gossip-interval", str(TEST["gossip_interval"]),
            "--shutdown-timeout", str(TEST["shutdown_timeout"])]
    return [str(REPO / "run_node.py"), "--capabilities", "cli", "--port", "0", "--bootstrap", store.url,
            "--cluster-key", CLUSTER_KEY, "--node-id", "cli", *fast, *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "MNEMONET_LLM": "offline"}


async def _run_cli(store: PeerNode, *extra: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *_cli_args(store, *extra), env=_env(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT)
    return proc.returncode or 0, out.decode(), err.decode()


def blocks(transcript: str) -> dict[str, list[str]]:
    """Output lines of each command, keyed by the command line as echoed after its prompt."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in transcript.splitlines():
        head, sep, command = line.partition("> ")
        if sep and head in ("user", "alice") and command in MEETING:
            current = out.setdefault(command, [])
        elif current is not None:
            current.append(line)
    return out


def check_meeting_transcript(transcript: str) -> None:
    out = blocks(transcript)
    assert out["I prefer morning meetings"][0].startswith("observed obs-")
    assert "user prefers morning meetings" in out["I prefer morning meetings"][1]
    assert out[MEETING[2]][0].startswith("recorded contradiction between st-")
    answer = out["?what are my meeting preferences?"]
    assert "you prefer afternoon" in answer[0].lower()  # the CLI asks as its source: the answer says "you"
    assert answer[1].startswith("  [confidence 0.") and "offline (rule-based)" in answer[1]
    # One speaker's contradiction reads as a change, the newer statement current.
    changed = answer[answer.index("Changed:") + 1:]
    assert any("morning" in line and "-> user prefers afternoon" in line for line in changed)
    conflicts = out["/contradictions"]
    assert conflicts[0] == "1 open contradiction:"
    assert "user prefers afternoon" in conflicts[1] and "user prefers morning meetings" in conflicts[2]
    assert any("SUPERSEDED" in line or "contradicted by" in line for line in out["/concept user"])
    refused, stopped = out[SECRET]
    assert refused.startswith("error: refused, nothing stored") and "sk-ant" not in refused
    assert stopped == f"script stopped at line {len(MEETING) - 1}: the command failed"
    assert "/quit" not in out
    assert out["/source alice"] == ["now speaking as 'alice'"]
    assert any(line.strip().startswith("store ") and "alive" in line for line in out["/peers"])
    assert "Traceback" not in transcript


async def test_script_file_runs_the_meeting_scenario(store_node: PeerNode, tmp_path: Path) -> None:
    script = tmp_path / "meeting.txt"
    script.write_text("\n".join(MEETING) + "\n")
    code, out, err = await _run_cli(store_node, "--script", str(script))
    assert code == 1, err  # the script stopped at the refused secret
    check_meeting_transcript(out)
    assert "Traceback" not in err
    recent = await store_node.client.get_recent_observations(10)
    assert [o.text for o in recent] == MEETING[1::-1]  # the refused secret was never stored


async def test_piped_stdin_reads_like_a_script(store_node: PeerNode) -> None:
    code, out, err = await _run_cli(store_node, stdin=b"I prefer morning meetings\n?what do I prefer\n")
    assert code == 0, err  # end of input leaves like /quit
    answer = out.split("user> ?what do I prefer\n", 1)[1].splitlines()
    assert "morning" in answer[0].lower() and "confidence" in answer[1]


async def test_missing_script_is_one_clear_error(store_node: PeerNode, tmp_path: Path) -> None:
    code, out, err = await _run_cli(store_node, "--script", str(tmp_path / "nope.txt"))
    assert code == 2 and "--script: no such file" in err and "Traceback" not in err


def _drive_terminal(args: list[str], data_dir: Path) -> str:
    """Type at the prompt in a pseudo-terminal (blocking: run it in a thread)."""
    child = pexpect.spawn(sys.executable, [*args, "--data-dir", str(data_dir)], env={**_env(), "TERM": "dumb"},
                          encoding="utf-8", timeout=TIMEOUT, dimensions=(40, 200))
    log = io.StringIO()
    child.logfile_read = log
    try:
        child.expect_exact("user> ")
        child.sendline("I prefer morning meetings")
        child.expect_exact("user prefers morning meetings")
        child.expect_exact("user> ")
        child.sendline("?what do I prefer")
        child.expect(r"confidence 0\.\d\d")
        child.expect_exact("user> ")
        child.send("\x1b[A")  # up arrow: readline brings back the last line from history
        child.sendline("")
        child.expect(r"confidence 0\.\d\d")
        child.expect_exact("user> ")
        child.sendline("/nonsense")
        child.expect_exact("error: invalid input: command: unknown /nonsense")
        child.expect_exact("user> ")
        child.sendeof()  # Ctrl-D leaves like /quit
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, log.getvalue()
    return log.getvalue()


async def test_interactive_terminal_with_history(store_node: PeerNode, tmp_path: Path) -> None:
    data_dir = tmp_path / "cli-data"
    transcript = await asyncio.to_thread(_drive_terminal, _cli_args(store_node), data_dir)
    assert transcript.count("confidence 0.") == 2  # the question, then the same one recalled from history
    assert "Traceback" not in transcript
    history = (data_dir / "cli_history").read_text()
    assert "?what do I prefer" in history and "I prefer morning meetings" in history
    assert '"msg"' not in transcript  # log lines went to the log file, not through the prompt
    assert (data_dir / "logs" / "cli-node.log").stat().st_size > 0


async def test_without_a_store_peer_each_error_is_one_line() -> None:
    # Each script stops at its failed command (line number given), and attach_cli returns False: the process
    # exits non-zero. What follows the failed line is never run.
    scripts = [("hello there\n?anyone\n", 1, "error: no capable peer yet (observe:"),
               ("/peers\n?anyone\nnever run\n", 2, "error: no capable peer yet (remember:"),
               ("x" * 20_001 + "\n/quit\nnever run\n", 1, "error: invalid input: line: longer than 20000 characters")]
    async with node_factory() as make:
        make_node: NodeFactory = make
        cli = await make_node({"cli"}, node_id="lonely", cli_store_wait=0.3)
        for text, failing, error in scripts:
            out = io.StringIO()
            ok = await asyncio.wait_for(attach_cli(cli, asyncio.Event(), stdin=io.StringIO(text), out=out), TIMEOUT)
            lines = out.getvalue().splitlines()
            assert not ok
            assert lines[0] == "waiting up to 0.3s for a store peer to join ..."
            assert lines[1] == "no store peer yet: commands will fail until one joins"
            [line] = [line for line in lines if line.startswith("error:")]
            assert line.startswith(error), lines
            echoed = [line for line in lines if line.startswith("user> ")]
            assert len(echoed) == failing and "user> never run" not in lines
            assert lines[-1] == f"script stopped at line {failing}: the command failed"
            assert ("1 member (this node: lonely):" in lines) == text.startswith("/peers")  # a command before it ran


async def test_a_line_that_reads_as_a_question_is_asked_not_stored(store_node: PeerNode) -> None:
    """Issue 21: "what is ..." typed without '?' was stored for good; it is asked, and /observe stores it anyway.

    The script's output is the conversation only: the node's info log stays off both streams.
    """
    before = {o.id for o in await store_node.client.get_recent_observations(50)}
    code, out, err = await _run_cli(
        store_node, stdin=b"what is the deploy day\n/observe where does the team meet on Fridays\n")
    assert code == 0, err
    asked = out.split("user> what is the deploy day\n", 1)[1].splitlines()
    assert asked[0] == QUESTION_NOTE
    assert "confidence" in asked[2]
    assert out.split("user> /observe where does the team meet on Fridays\n", 1)[1].startswith("observed obs-")
    stored = [o.text for o in await store_node.client.get_recent_observations(50) if o.id not in before]
    assert stored == ["where does the team meet on Fridays"]
    assert '"level"' not in out + err and "node cli ready" not in err
