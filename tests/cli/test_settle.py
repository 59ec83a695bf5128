"""``/settle [SECONDS]`` waits until the workers have done everything in the session's space, bounded."""

from __future__ import annotations

import asyncio

from mnemonet.agents import ConsolidationAgent, InferenceAgent, Ownership, ValidationAgent
from mnemonet.cli.commands import Command, parse_line
from mnemonet.cli.session import CliSession
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


def test_settle_takes_an_optional_number_of_seconds() -> None:
    assert parse_line("/settle", 100, 20) == Command("settle")
    assert parse_line("/settle 2.5", 100, 20) == Command("settle", "2.5")


async def test_settle_waits_for_the_workers_of_its_space_and_says_what_is_left_on_timeout(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
) -> None:
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url, cli_settle_poll_interval=0.05)
    llm = make_language_model(settings)
    memory = SpacedMemory(await build_memory_service(settings, llm, make_embedder(settings),
                                                     vector_schema=unique_name))
    out: list[str] = []
    session = CliSession(memory, dict, settings, out.append)  # type: ignore[arg-type]
    try:
        await session.run_line("/space settling")
        await session.run_line("I live in Paris")
        await session.run_line("I moved to Lisbon")
        # No worker runs yet: the wait ends at its bound and names the backlog.
        await session.run_line("/settle 0.2")
        # (vectors=N too while the statements' and concepts' vectors linger, index_background_wait)
        assert out[-1].startswith("not settled after 0.2s: still pending ")
        assert "inference=2, validation=" in out[-1]

        for bad in ("abc", "0", "-1", "nan", "inf", "99999", "1 2"):
            await session.run_line(f"/settle {bad}")
            assert out[-1] == "error: invalid input: settle: SECONDS must be a number above 0 and at most 3600"

        # The workers catch up while /settle waits; it returns as soon as the backlog is empty.
        waiting = asyncio.ensure_future(session.run_line("/settle 60"))
        owner = Ownership.solo("settle-test")
        await InferenceAgent(memory, settings, owner).drain()
        await ValidationAgent(memory, settings, owner, llm).drain()
        await ConsolidationAgent(memory, settings, owner, llm).drain()
        await asyncio.wait_for(waiting, 60)
        assert out[-1].startswith("settled: the workers have nothing left to do (")
        stats = await memory.stats(space="settling")
        assert stats["backlog"] == {"vectors": 0, "extraction": 0, "inference": 0, "validation": 0, "consolidation": 0}
        assert stats["graph"]  # the space's own store answered, not the default space's
        assert (await memory.stats())["backlog"]["inference"] == 0  # nothing was written to the default space
    finally:
        await memory.close()


async def test_settle_means_the_writes_own_work_is_done_and_consolidation_may_follow(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
) -> None:
    # The README's first demo lines: /settle answers once extraction, inference and validation are done,
    # not after the consolidation worker's quiet period (30 s by default), and the answer then shows the change.
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url, cli_settle_poll_interval=0.05, consolidation_min_new_statements=1)
    llm = make_language_model(settings)
    memory = SpacedMemory(await build_memory_service(settings, llm, make_embedder(settings),
                                                     vector_schema=unique_name))
    out: list[str] = []
    session = CliSession(memory, dict, settings, out.append)  # type: ignore[arg-type]
    try:
        await session.run_line("I prefer morning meetings")
        await session.run_line("actually I hate mornings, afternoon is better")
        waiting = asyncio.ensure_future(session.run_line("/settle 600"))
        owner = Ownership.solo("settle-test")
        await InferenceAgent(memory, settings, owner).drain()
        await ValidationAgent(memory, settings, owner, llm).drain()
        await asyncio.wait_for(waiting, 600)  # no consolidation worker ever runs here
        assert (await memory.stats())["backlog"]["consolidation"] > 0
        assert out[-1].startswith("settled: the writes' work is done ("), out[-1]
        assert out[-1].endswith("; consolidation follows (1 concept due a summary)") or out[-1].endswith(
            " concepts due a summary)"), out[-1]
        out.clear()
        await session.run_line("?what are my meeting preferences?")
        assert "Changed:" in out, out
    finally:
        await memory.close()
