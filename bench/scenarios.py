"""How many scripted conversations with updates get the right current answer first.

    python bench/scenarios.py [--file tests/scenarios/updates.yaml] [--only NAME]

Each conversation of the file is played into a fresh memory (one
``MemoryService`` with the configured language model, offline by default, on
embedded FalkorDB and PostgreSQL started here, in its own graph and vector
schema): its lines are observed in order under their sources, the inference,
validation and consolidation workers run until their backlogs are empty, then
the question is asked with ``remember``. It passes when the answer's lead
sentence (first line) contains ``expect`` and none of ``reject``. Prints one
row per conversation and the total. ``tests/scenarios/test_updates.py`` plays
the same file and asserts a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.agents import ConsolidationAgent, InferenceAgent, Ownership, ValidationAgent  # noqa: E402
from mnemonet.embed.base import Embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402

SCENARIOS = REPO / "tests" / "scenarios" / "updates.yaml"


@dataclass(frozen=True)
class Scenario:
    """One scripted conversation: (source, text) lines, a question and the expected current answer."""

    name: str
    kind: str
    lines: list[tuple[str, str]]
    question: str
    expect: str
    reject: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    lead: str
    passed: bool


def load(path: Path = SCENARIOS) -> list[Scenario]:
    """The conversations of a scenario file; a malformed entry is a ``ValueError`` naming it."""
    raw: Any = yaml.safe_load(path.read_text())
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of conversations")
    out = []
    for i, item in enumerate(raw):
        try:
            lines = []
            for line in item["lines"]:
                source, sep, text = str(line).partition(": ")
                if not sep or not source.strip() or not text.strip():
                    raise ValueError(f"line {line!r} is not '<source>: <text>'")
                lines.append((source.strip(), text.strip()))
            out.append(Scenario(name=str(item["name"]), kind=str(item["kind"]), lines=lines,
                                question=str(item["question"]), expect=str(item["expect"]),
                                reject=[str(r) for r in item.get("reject") or []]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: conversation {i + 1}: {exc}") from exc
    return out


def judge(scenario: Scenario, answer_text: str) -> Outcome:
    """Pass when the lead sentence names the expected current answer and nothing rejected."""
    lead = answer_text.partition("\n")[0]
    folded = lead.casefold()
    passed = scenario.expect.casefold() in folded and not any(r.casefold() in folded for r in scenario.reject)
    return Outcome(scenario, lead, passed)


async def play(scenario: Scenario, service: MemoryService) -> Outcome:
    """Observe the lines in order, let the workers finish, ask the question."""
    settings = service.settings
    for source, text in scenario.lines:
        await service.observe(text, source=source)
    llm = service.llm
    await InferenceAgent(service, settings, Ownership.solo("scenario")).drain()
    await ValidationAgent(service, settings, Ownership.solo("scenario"), llm).drain()
    await ConsolidationAgent(service, settings, Ownership.solo("scenario"), llm).drain()
    answer = await service.remember(scenario.question)
    return judge(scenario, answer.text)


async def play_fresh(scenario: Scenario, base: Settings, embedder: Embedder) -> Outcome:
    """``play`` into a memory of its own (a new graph and vector schema on the same servers)."""
    name = f"scenario_{uuid.uuid4().hex[:12]}"
    settings = base.model_copy(update={"graph_name": name})
    service = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema=name)
    try:
        return await play(scenario, service)
    finally:
        await service.clear()
        await service.close()


def table(outcomes: list[Outcome]) -> str:
    """A markdown table, one row per conversation, and the total."""
    rows = ["| # | kind | conversation | lead sentence | ok |", "|---|---|---|---|---|"]
    for n, o in enumerate(outcomes, 1):
        lead = o.lead.replace("|", "/")
        rows.append(f"| {n} | {o.scenario.kind} | {o.scenario.name} | {lead} | {'yes' if o.passed else 'NO'} |")
    passed = sum(o.passed for o in outcomes)
    rows.append(f"\n{passed}/{len(outcomes)} lead with the right current answer")
    return "\n".join(rows)


async def main() -> None:
    from mnemonet.embed import make_embedder
    from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
    from mnemonet.store.embedded_postgres import EmbeddedPostgres

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, default=SCENARIOS, help="scenario file (YAML)")
    parser.add_argument("--only", default="", help="play only conversations whose name contains this")
    args = parser.parse_args()
    scenarios = [s for s in load(args.file) if args.only in s.name]
    data = REPO / ".data" / "bench" / f"scenarios-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    pg_url = await pg.start()
    try:
        base = Settings(falkordb_port=falkor.port, database_url=pg_url, log_level="WARNING")
        embedder = make_embedder(base)
        outcomes = [await play_fresh(s, base, embedder) for s in scenarios]
    finally:
        await pg.stop()
        await falkor.stop()
    print(f"\nlanguage model: {make_language_model(base).name}\n")
    print(table(outcomes))


if __name__ == "__main__":
    asyncio.run(main())
