"""/brief in the CLI, against a real store node over its client: the current facts, the ids, one error line."""

from __future__ import annotations

from mnemonet.cli.session import CliSession
from mnemonet.node.peer_node import PeerNode
from mnemonet.settings import Settings


async def test_brief_of_the_team_and_of_a_subject(store_node: PeerNode) -> None:
    out: list[str] = []
    session = CliSession(store_node.client, dict, Settings(), out.append)
    for line in ("I live in Paris", "Now I live in Lisbon", "Dana works at Acme"):
        await session.run_line(line)
    [moved] = [line for line in out if "user lives in Lisbon" in line]
    short = moved.rsplit(", ", 1)[1].split(")")[0]
    out.clear()

    await session.run_line("/brief")
    assert out[0].startswith("What the team's memory holds (as of ") and "Current facts:" in out
    assert any("user lives in Lisbon" in line and short in line for line in out)
    facts = out[out.index("Current facts:"):out.index("Most used concepts:")]
    # No validation worker runs here: the rules find "now" replacing Paris all the same.
    assert any("Dana works at Acme" in line for line in facts) and not any("Paris" in line for line in facts)
    out.clear()

    await session.run_line("/brief Dana")
    assert out[0].startswith("What memory holds about Dana (as of ") and not session.failed
    facts = out[out.index("Current facts:"):out.index("Most used concepts:")]
    assert len(facts) == 2 and facts[1].startswith("  - Dana works at Acme (user; st-")
    out.clear()

    await session.run_line("/brief " + "x" * 201)
    assert session.failed and out == ["error: invalid input: subject: longer than 200 characters"]
