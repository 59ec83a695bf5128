"""How many scripted conversations with updates get the right current answer first.

    python bench/scenarios.py [--file tests/scenarios/updates.yaml] [--only NAME] [--demo]

Each conversation of the file is played into a fresh memory (one
``MemoryService`` with the configured language model, offline by default, on
embedded FalkorDB and PostgreSQL started here, in its own graph and vector
schema): its lines are observed in order under their sources, the inference,
validation and consolidation workers run until their backlogs are empty, then
the question is asked with ``remember``. It passes when the answer's lead
sentence (first line) contains ``expect`` and none of ``reject``. Prints one
row per conversation and the total. ``tests/scenarios/test_updates.py`` plays
the same file and asserts a floor.

With ``--demo`` the file becomes one CLI script (``demo_script``) run once by
``python run_node.py demo --script FILE`` on a fresh data dir: the real demo
network (store, llm, embed, inference, validation, consolidation and cli
nodes). Each conversation gets a memory space of its own; after its lines the
script waits with ``/settle`` until the workers have nothing left to do, then
asks as ``user``. The answers are read back from the transcript (``demo_leads``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
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
    # An inference worker runs here, as in the demo: with the default (auto) each extraction infers the
    # claims in the same call, as a store node that sees an inference node does.
    service.inference_runs = lambda: True
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


# The demo's consolidation waits this long for quiet instead of its default 30 s, so /settle after a
# conversation returns in seconds: the summaries are still written, only sooner.
DEMO_ENV = {"MNEMONET_CONSOLIDATION_QUIET_PERIOD": "1", "MNEMONET_LOG_LEVEL": "WARNING"}
DEMO_SETTLE_SECONDS = 120  # per conversation; a timeout is printed in the transcript and counted


def _space(n: int) -> str:
    return f"scenario_{n}"


def demo_script(scenarios: list[Scenario]) -> str:
    """One CLI script playing every conversation in its own space, settling before each question."""
    out, speaking = [], "user"  # the CLI's first source
    for n, scenario in enumerate(scenarios, 1):
        out.append(f"/space {_space(n)}")
        for source, text in [*scenario.lines, ("user", "")]:  # the question is asked as user, as play() does
            if source != speaking:
                out.append(f"/source {source}")
                speaking = source
            if text:
                out.append(f"/observe {text}")
        out += [f"/settle {DEMO_SETTLE_SECONDS}", f"?{scenario.question}"]
    out.append("/quit")
    return "\n".join(out) + "\n"


def demo_leads(scenarios: list[Scenario], transcript: str) -> tuple[list[Outcome], int]:
    """Each conversation judged on the line after its question in the transcript; and how many settles timed out."""
    lines = transcript.splitlines()
    outcomes = []
    for n, scenario in enumerate(scenarios, 1):
        asked = f"{_space(n)}:user> ?{scenario.question}"
        at = lines.index(asked) if asked in lines else -1
        answer = lines[at + 1] if 0 <= at < len(lines) - 1 else "(no answer in the transcript)"
        outcomes.append(judge(scenario, answer))
    return outcomes, sum(line.startswith("not settled") for line in lines)


async def run_demo(scenarios: list[Scenario], data_dir: Path, timeout: float) -> tuple[list[Outcome], int, str]:
    """``run_node.py demo --script`` on a fresh ``data_dir`` (removed after): outcomes, settle timeouts, transcript."""
    script = data_dir.parent / f"{data_dir.name}.script"
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(demo_script(scenarios))
    # The offline model, as a new user without a key meets it.
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "MNEMONET_LLM")}
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "run_node.py"), "demo", "--data-dir", str(data_dir), "--port", "0",
            "--script", str(script), env={**env, **DEMO_ENV, "PYTHONPATH": str(REPO / "src")}, cwd=REPO,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        if proc.returncode:
            raise RuntimeError(f"demo exited {proc.returncode}: {err.decode()[-2000:]}")
        transcript = out.decode()
        outcomes, unsettled = demo_leads(scenarios, transcript)
        return outcomes, unsettled, transcript
    finally:
        script.unlink(missing_ok=True)
        shutil.rmtree(data_dir, ignore_errors=True)


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
    parser.add_argument("--demo", action="store_true", help="play them through run_node.py demo --script")
    args = parser.parse_args()
    scenarios = [s for s in load(args.file) if args.only in s.name]
    if args.demo:
        data_dir = REPO / ".data" / "bench" / f"scenarios-demo-{uuid.uuid4().hex[:6]}"
        outcomes, unsettled, _ = await run_demo(scenarios, data_dir, timeout=DEMO_SETTLE_SECONDS * (len(scenarios) + 5))
        print(f"\nthrough run_node.py demo --script (offline model); /settle timed out {unsettled} times\n")
        print(table(outcomes))
        return
    data = REPO / ".data" / "bench" / f"scenarios-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    pg_url = await pg.start()
    try:
        base = Settings(falkordb_port=falkor.port, falkordb_password=falkor.password or "", database_url=pg_url,
                        log_level="WARNING")
        embedder = make_embedder(base)
        outcomes = [await play_fresh(s, base, embedder) for s in scenarios]
    finally:
        await pg.stop()
        await falkor.stop()
    print(f"\nlanguage model: {make_language_model(base).name}\n")
    print(table(outcomes))


if __name__ == "__main__":
    asyncio.run(main())
