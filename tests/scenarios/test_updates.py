"""The scenario file of conversations with updates, played with the offline model and the workers.

Each conversation runs in a fresh memory on the session's embedded databases
(``bench/scenarios.py`` is the player; ``python bench/scenarios.py`` prints the
table). The target is 18 of the file's conversations leading with the right
current answer; the floor below is what the offline model holds (all of them).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mnemonet.embed import make_embedder
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_scenarios", REPO / "bench" / "scenarios.py")
assert _spec is not None and _spec.loader is not None
scenarios = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = scenarios  # its dataclasses look their module up while being defined
_spec.loader.exec_module(scenarios)

# Measured: 28 of 28 with the offline model (bench/README.md); the run is deterministic. Target: >= 18 (issue 15).
FLOOR = 28


def test_the_file_has_twenty_conversations_of_every_kind() -> None:
    loaded = scenarios.load()
    assert len(loaded) >= 20
    assert {s.kind for s in loaded} == {"move", "job", "rename", "preference", "agents"}
    assert all(s.lines and s.question and s.expect for s in loaded)
    assert len({s.name for s in loaded}) == len(loaded)


def test_a_malformed_line_is_refused_with_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: x, kind: move, lines: ['no source here'], question: q, expect: e}\n")
    with pytest.raises(ValueError, match="conversation 1: line 'no source here' is not"):
        scenarios.load(bad)


def test_the_lead_sentence_alone_is_judged() -> None:
    [scenario] = [s for s in scenarios.load() if s.name == "move, first person"]
    assert scenarios.judge(scenario, "User lives in Lisbon.\nChanged:\n  - user lives in Paris -> ...").passed
    assert not scenarios.judge(scenario, "Unresolved: user lives in Paris; user lives in Lisbon.").passed
    assert not scenarios.judge(scenario, "Nothing in memory answers that.").passed


async def test_conversations_with_updates_lead_with_the_current_answer(
    falkordb_server: EmbeddedFalkorDB, postgres_url: str
) -> None:
    base = Settings(llm="offline", falkordb_port=falkordb_server.port, database_url=postgres_url)
    embedder = make_embedder(base)
    outcomes = [await scenarios.play_fresh(s, base, embedder) for s in scenarios.load()]
    print(scenarios.table(outcomes))
    assert sum(o.passed for o in outcomes) >= FLOOR, scenarios.table(outcomes)
