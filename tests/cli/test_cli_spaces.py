"""``/space NAME`` moves a CLI session into a memory space (made if new); ``/spaces`` lists them."""

from __future__ import annotations

from mnemonet.cli.session import CliSession
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import SpacedMemory, build_memory_service
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB


async def test_a_session_switches_spaces_and_sees_only_the_current_one(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str,
) -> None:
    settings = Settings(llm="offline", falkordb_port=falkordb_server.port, graph_name=unique_name,
                        database_url=postgres_url)
    memory = SpacedMemory(await build_memory_service(settings, make_language_model(settings), make_embedder(settings),
                                                     vector_schema=unique_name))
    out: list[str] = []
    session = CliSession(memory, dict, settings, out.append)  # type: ignore[arg-type]
    try:
        await session.run_line("the default team deploys on mondays")
        await session.run_line("/space alpha")
        assert out[-1] == "created space 'alpha'" and session.prompt == "alpha:user> "
        await session.run_line("the alpha team deploys on fridays")
        out.clear()
        await session.run_line("/recent")
        assert any("fridays" in line for line in out) and not any("mondays" in line for line in out)
        await session.run_line("/space default")
        assert out[-1] == "now in space 'default'" and session.prompt == "user> "
        out.clear()
        await session.run_line("/recent")
        assert any("mondays" in line for line in out) and not any("fridays" in line for line in out)
        out.clear()
        await session.run_line("/spaces")
        assert out == ["* default", "  alpha"]
        await session.run_line("/space Not-A-Space")
        assert out[-1].startswith("error: invalid input: space:")
        await session.run_line("/space alpha")
        await session.run_line("Dana works at Globex")
        await session.run_line("/space default")
        await session.run_line("/share alpha")  # default reads alpha from now on
        assert out[-1] == "space 'default' reads alpha"
        out.clear()
        await session.run_line("where does Dana work?")
        assert "Globex" in out[1] and any("in space alpha" in line for line in out)
        out.clear()
        await session.run_line("/spaces")
        assert out == ["* default (reads alpha)", "  alpha"]
        await session.run_line("/unshare alpha")
        assert out[-1] == "space 'default' reads no other space"
    finally:
        await memory.close()
