"""/retract in the CLI: a short id as the CLI printed it, against a real store node over its client."""

from __future__ import annotations

from mnemonet.cli.session import CliSession
from mnemonet.node.peer_node import PeerNode
from mnemonet.settings import Settings


async def test_retract_by_the_short_id_the_cli_printed(store_node: PeerNode) -> None:
    out: list[str] = []
    session = CliSession(store_node.client, dict, Settings(), out.append)
    await session.run_line("I prefer morning meetings")
    await session.run_line("Actually I prefer afternoon meetings")
    [added] = [line for line in out if "user prefers afternoon meetings" in line]
    short = added.rsplit(", ", 1)[1].split(")")[0]  # "  + user prefers ... (0.90, user, st-1a2b3c4d)"
    assert short.startswith("st-") and len(short) == len("st-") + 8
    out.clear()

    await session.run_line(f"/retract {short} said by mistake")
    assert out[0].startswith(f"retracted statement {short} as rtr-") and out[0].endswith(": said by mistake")
    await session.run_line(f"/retract {short} again")
    assert "(already retracted by user)" in out[1]
    await session.run_line("?what are my meeting preferences?")
    assert "morning" in out[2] and "afternoon" not in out[2]
    assert "Retracted:" in out and any(short in line and "said by mistake" in line for line in out)
    await session.run_line("/concept user")
    assert any(short in line and "RETRACTED" in line for line in out)


async def test_bad_retract_lines_are_one_error_line(store_node: PeerNode) -> None:
    out: list[str] = []
    session = CliSession(store_node.client, dict, Settings(), out.append)
    await session.run_line("/retract")
    await session.run_line("/retract st-1a2b3c4d")
    await session.run_line("/retract st-1a2b3c4d no such thing")
    assert out[0] == "error: invalid input: retract: usage /retract ID REASON"
    assert out[1].startswith("error: invalid input: retract: usage /retract ID REASON")
    assert out[2].startswith("error: invalid input: id: no such node: st-1a2b3c4d")
