"""How many scripted conversations with updates get the right current answer first.

    python bench/scenarios.py [--corpus bench/data/scenarios.yaml] [--split dev|test|both] [--class NAME]
                              [--only NAME] [--verbose] [--counts]
    python bench/scenarios.py --file tests/scenarios/updates.yaml [--only NAME] [--demo]

Without ``--file`` it plays the evaluation corpus (``bench/data/scenarios.yaml``, issue 32 item 9:
everyday memory updates in 16 classes, written in many voices). Each scenario's lines are observed in
order, its actions (``!retract N``, ``!retract-statements N``, ``!forget SOURCE``) played through the
real ``MemoryService``, the workers drained, and the question asked with ``remember(ask, source=asker)``.
It passes (``judge``) when the answer's lead line contains ``expect``; or, with ``abstain: true``, starts
with ``ABSTAIN_PREFIX``; or, with ``keep``, every kept item is in the lead or the ``Evidence:`` section and
none under ``Changed:``; and in every case the lead contains none of ``reject``. The corpus is split per
class into a ``dev`` and a ``test`` half (``split``, fixed before any tuning): the table gives passed/total
per class and split, the dev-test gap, and ends with one line a script can read:
``scenarios: dev X/Y = a.aa, test X/Y = b.bb, gap c.cc``.

With ``--file`` (the older format: kind, question, expect, reject), as before:

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
script waits with ``/settle`` until the writes' own work is done (consolidation may follow), then
asks as ``user``. The answers are read back from the transcript (``demo_leads``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.agents import ConsolidationAgent, InferenceAgent, Ownership, ValidationAgent  # noqa: E402
from mnemonet.embed.base import Embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model.api import ObserveResult  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402

SCENARIOS = REPO / "tests" / "scenarios" / "updates.yaml"
CORPUS = REPO / "bench" / "data" / "scenarios.yaml"

# The lead sentence the answer composer writes when no fact in memory answers the question.
ABSTAIN_PREFIX = "Nothing in memory answers"

# The dev/test split of the corpus was fixed before any tuning on it (issue 32, item 9): within each class
# the scenarios are sorted by name, shuffled with random.Random(SPLIT_SEED), the first half (rounded up) is
# dev, the rest test. Do not change the seed to move scenarios between the halves; tune on dev only.
SPLIT_SEED = 20261126
SPLITS = ("dev", "test")

CLASSES = (
    "role_change", "job_change", "relocation", "switch", "postponement", "numeric", "promotion", "status",
    "correction", "self_authority", "other_person", "coexistence", "unanswerable", "retraction", "import",
    "multi_speaker",
)
# Yes-or-no questions (scenarios_polar.yaml): the verdict given, and none claimed where nothing settles it.
POLAR_CLASSES = ("polar_yes", "polar_no", "polar_open")
KNOWN_CLASSES = CLASSES + POLAR_CLASSES
ACTIONS = ("retract", "retract-statements", "forget")
_CASE_KEYS = {"name", "class", "lines", "ask", "asker", "expect", "abstain", "keep", "reject"}
# An answer's sections after its lead line: a header line, then its items as "  - ...".
SECTIONS = ("Evidence", "Changed", "In conflict", "Retracted", "Related")
# Cited ids ("[st-23a1022c]", "obs-5f0e...") and the times an answer prints ("Thu 26 Nov 22:15") are left out
# of what is judged: their digits could match or reject a number by chance.
_CITED_ID = re.compile(r"\b[a-z]{2,5}-[0-9a-f]{6,}\b")
_PRINTED_TIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2}(?: \d{4})? \d{1,2}:\d{2}\b")


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
class Action:
    """A step of a corpus scenario that is not an observation: ``retract``/``retract-statements`` line
    ``line``, or ``forget`` everything ``source`` wrote."""

    verb: str
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class Case:
    """One scenario of the evaluation corpus (``bench/data/scenarios.yaml``); ``kind`` is its class."""

    name: str
    kind: str
    lines: list[tuple[str, str] | Action]
    question: str
    asker: str = "user"
    expect: str | None = None
    abstain: bool = False
    keep: list[str] = field(default_factory=list)
    reject: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario | Case
    lead: str
    passed: bool
    answer: str = ""
    notes: tuple[str, ...] = ()


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


def judge(scenario: Scenario | Case, answer_text: str) -> Outcome:
    """Pass when the lead sentence names the expected current answer and nothing rejected.

    A corpus ``Case`` is judged by its own rule (``judge_case``)."""
    if isinstance(scenario, Case):
        return judge_case(scenario, answer_text)
    lead = answer_text.partition("\n")[0]
    folded = lead.casefold()
    passed = scenario.expect.casefold() in folded and not any(r.casefold() in folded for r in scenario.reject)
    return Outcome(scenario, lead, passed)


def _required(item: dict[str, Any], key: str) -> Any:
    if key not in item or item[key] is None:
        raise ValueError(f"missing {key!r}")
    return item[key]


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool) or not str(value).strip():
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    return str(value).strip()


def _texts(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list, not {value!r}")
    return [_text(v, f"an item of {what}") for v in value]


def _step(line: Any, n: int, steps: list[tuple[str, str] | Action]) -> tuple[str, str] | Action:
    """Line ``n`` (1-based) of a scenario, read after ``steps`` (the lines before it)."""
    if not isinstance(line, str):
        raise ValueError(f"line {n} {line!r} is not a string")
    if not line.startswith("!"):
        source, sep, text = line.partition(": ")
        if not sep or not source.strip() or not text.strip():
            raise ValueError(f"line {n} {line!r} is not '<source>: <text>' or an action '!...'")
        return source.strip(), text.strip()
    verb, _, arg = line[1:].strip().partition(" ")
    arg = arg.strip()
    if verb not in ACTIONS or not arg:
        raise ValueError(f"line {n} {line!r} is not an action ({', '.join('!' + a + ' ...' for a in ACTIONS)})")
    if verb == "forget":
        return Action(verb, source=arg)
    if not arg.isdigit() or not 1 <= int(arg) < n or isinstance(steps[int(arg) - 1], Action):
        raise ValueError(f"line {n} {line!r}: {arg} is not the number of an observed line before it")
    return Action(verb, line=int(arg))


def load_corpus(path: Path = CORPUS) -> list[Case]:
    """The scenarios of the evaluation corpus; a malformed entry is a ``ValueError`` naming its place."""
    raw: Any = yaml.safe_load(path.read_text())
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of scenarios")
    out: list[Case] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        where = f"{path}: scenario {i + 1}"
        try:
            if not isinstance(item, dict):
                raise ValueError(f"expected a mapping, not {item!r}")
            if isinstance(item.get("name"), str):
                where += f" ({item['name']!r})"
            unknown = sorted(set(item) - _CASE_KEYS, key=str)
            if unknown:
                raise ValueError(f"unknown keys {unknown}")
            name = _text(_required(item, "name"), "name")
            if name in names:
                raise ValueError(f"the name {name!r} is used twice")
            kind = _text(_required(item, "class"), "class")
            if kind not in KNOWN_CLASSES:
                raise ValueError(f"class {kind!r} is not one of {', '.join(KNOWN_CLASSES)}")
            raw_lines = _required(item, "lines")
            if not isinstance(raw_lines, list) or not raw_lines:
                raise ValueError("lines must be a non-empty list")
            steps: list[tuple[str, str] | Action] = []
            for n, line in enumerate(raw_lines, 1):
                steps.append(_step(line, n, steps))
            if not any(isinstance(s, tuple) for s in steps):
                raise ValueError("no line is observed")
            abstain = item.get("abstain", False)
            if not isinstance(abstain, bool):
                raise ValueError(f"abstain must be true or false, not {abstain!r}")
            expect = _text(item["expect"], "expect") if item.get("expect") is not None else None
            keep = _texts(item.get("keep"), "keep")
            if sum((expect is not None, abstain, bool(keep))) != 1:
                raise ValueError("give exactly one of expect, abstain: true or keep")
            out.append(Case(name=name, kind=kind, lines=steps, question=_text(_required(item, "ask"), "ask"),
                            asker=_text(item.get("asker", "user"), "asker"), expect=expect, abstain=abstain,
                            keep=keep, reject=_texts(item.get("reject"), "reject")))
            names.add(name)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
    return out


def split(cases: list[Case]) -> dict[str, list[Case]]:
    """The dev and test halves: per class, sorted by name, shuffled with ``SPLIT_SEED``, first half (rounded up)
    dev. A scenario's half depends only on the names of its class, not on the order of the file."""
    by_class: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_class[case.kind].append(case)
    halves: dict[str, list[Case]] = {name: [] for name in SPLITS}
    order = {kind: i for i, kind in enumerate(KNOWN_CLASSES)}
    for kind in sorted(by_class, key=lambda k: (order.get(k, len(order)), k)):
        group = sorted(by_class[kind], key=lambda c: c.name)
        random.Random(SPLIT_SEED).shuffle(group)
        half = (len(group) + 1) // 2
        halves["dev"] += group[:half]
        halves["test"] += group[half:]
    return halves


def sections(answer_text: str) -> dict[str, list[str]]:
    """The items of an answer's sections (``Evidence``, ``Changed``, ...) after its lead line."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in answer_text.splitlines()[1:]:
        header = line.strip().rstrip(":")
        if not line.startswith(" ") and line.rstrip().endswith(":") and header in SECTIONS:
            current = out.setdefault(header, [])
        elif line.startswith("  - ") and current is not None:
            current.append(line[4:])
        elif line.strip():
            current = None  # any other line ends a section
    return out


def _judged(text: str) -> str:
    return _PRINTED_TIME.sub("", _CITED_ID.sub("", text)).casefold()


def judge_case(case: Case, answer_text: str) -> Outcome:
    """The corpus rule: ``expect`` in the lead; or the lead abstains; or every ``keep`` item is in the lead or
    the Evidence section and none under Changed. Never any of ``reject`` in the lead."""
    lead = answer_text.partition("\n")[0]
    folded = _judged(lead)
    if any(r.casefold() in folded for r in case.reject):
        passed = False
    elif case.abstain:
        passed = lead.strip().casefold().startswith(ABSTAIN_PREFIX.casefold())
    elif case.keep:
        parts = sections(answer_text)
        shown = "\n".join([folded, *(_judged(item) for item in parts.get("Evidence", []))])
        changed = "\n".join(_judged(item) for item in parts.get("Changed", []))
        passed = all(k.casefold() in shown and k.casefold() not in changed for k in case.keep)
    else:
        passed = case.expect is not None and case.expect.casefold() in folded
    return Outcome(case, lead, passed, answer=answer_text)


def kept_both(outcome: Outcome) -> bool:
    """A coexistence scenario's kept facts were all shown and none was read as changed."""
    return isinstance(outcome.scenario, Case) and bool(outcome.scenario.keep) and judge_case(
        replace(outcome.scenario, reject=[]), outcome.answer).passed


def abstained(outcome: Outcome) -> bool:
    return outcome.lead.strip().casefold().startswith(ABSTAIN_PREFIX.casefold())


async def _act(action: Action, observed: dict[int, tuple[str, ObserveResult]], service: MemoryService) -> list[str]:
    """Play one action; notes on what it did when that is worth reading (nothing to retract)."""
    if action.verb == "forget":
        report = await service.forget(source=action.source)
        return [] if report.tombstone_id else [f"forget {action.source}: nothing erased"]
    source, result = observed[action.line]
    reason = f"taken back (scenario line {action.line})"
    if action.verb == "retract":
        await service.retract(result.observation_id, reason, source=source)
        return []
    ids = [s.id for s in result.statements if s.source == source]
    if not ids:  # the inline result may be empty (a pending extraction): ask the graph
        ids = [s.id for s in await service.graph.statements_from_observation(result.observation_id)
               if s.source == source]
    for statement_id in ids:
        await service.retract(statement_id, reason, source=source)
    return [] if ids else [f"retract-statements {action.line}: no statement of {source} to retract"]


async def play_case(case: Case, service: MemoryService) -> Outcome:
    """Observe the lines and play the actions in order, let the workers finish, ask as the asker."""
    settings = service.settings
    service.inference_runs = lambda: True  # as in play(): claims are inferred with each extraction
    observed: dict[int, tuple[str, ObserveResult]] = {}
    notes: list[str] = []
    for n, step in enumerate(case.lines, 1):
        if isinstance(step, Action):
            notes += await _act(step, observed, service)
        else:
            source, text = step
            observed[n] = (source, await service.observe(text, source=source))
    llm = service.llm
    await InferenceAgent(service, settings, Ownership.solo("scenario")).drain()
    await ValidationAgent(service, settings, Ownership.solo("scenario"), llm).drain()
    await ConsolidationAgent(service, settings, Ownership.solo("scenario"), llm).drain()
    answer = await service.remember(case.question, source=case.asker)
    return replace(judge_case(case, answer.text), notes=tuple(notes))


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


async def play_fresh(scenario: Scenario | Case, base: Settings, embedder: Embedder) -> Outcome:
    """``play`` (``play_case`` for a corpus scenario) into a memory of its own (a new graph and vector
    schema on the same servers)."""
    name = f"scenario_{uuid.uuid4().hex[:12]}"
    settings = base.model_copy(update={"graph_name": name})
    service = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema=name)
    try:
        if isinstance(scenario, Case):
            return await play_case(scenario, service)
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


def _fraction(passed: int, total: int) -> str:
    return f"{passed / total:.2f}" if total else "n/a"


def _classes(cases: list[Case] | list[Outcome]) -> list[str]:
    kinds = {c.scenario.kind if isinstance(c, Outcome) else c.kind for c in cases}
    return [k for k in KNOWN_CLASSES if k in kinds] + sorted(kinds - set(KNOWN_CLASSES))


def counts_table(halves: dict[str, list[Case]]) -> str:
    """How many scenarios of each class are in each half."""
    everything = [c for name in SPLITS for c in halves.get(name, [])]
    rows = ["| class | dev | test | total |", "|---|---|---|---|"]
    for kind in _classes(everything):
        dev, test = (sum(c.kind == kind for c in halves.get(name, [])) for name in SPLITS)
        rows.append(f"| {kind} | {dev} | {test} | {dev + test} |")
    rows.append(f"| total | {len(halves.get('dev', []))} | {len(halves.get('test', []))} | {len(everything)} |")
    return "\n".join(rows)


def _score(outcomes: list[Outcome]) -> tuple[int, int]:
    return sum(o.passed for o in outcomes), len(outcomes)


def split_report(played: dict[str, list[Outcome]], verbose: bool = False) -> str:
    """Per split: passed/total and fraction per class and in all, the checks of coexistence and abstention;
    then the classes side by side with their dev-test gap, and the summary line (``summary_line``)."""
    out = []
    for name, outcomes in played.items():
        rows = [f"### {name}", "", "| class | passed | fraction |", "|---|---|---|"]
        for kind in _classes(outcomes):
            p, t = _score([o for o in outcomes if o.scenario.kind == kind])
            rows.append(f"| {kind} | {p}/{t} | {_fraction(p, t)} |")
        p, t = _score(outcomes)
        rows.append(f"| **total** | {p}/{t} | {_fraction(p, t)} |")
        coexist = [o for o in outcomes if o.scenario.kind == "coexistence"]
        unanswerable = [o for o in outcomes if o.scenario.kind == "unanswerable"]
        kept = sum(kept_both(o) for o in coexist)
        held_back = sum(abstained(o) for o in unanswerable)
        rows += ["",
                 f"{name}: every coexistence scenario kept both facts: {'yes' if kept == len(coexist) else 'no'}"
                 f" ({kept}/{len(coexist)})",
                 f"{name}: every unanswerable scenario abstained: "
                 f"{'yes' if held_back == len(unanswerable) else 'no'} ({held_back}/{len(unanswerable)})"]
        if verbose:
            rows += ["", "| class | scenario | lead sentence | ok | notes |", "|---|---|---|---|---|"]
            for o in outcomes:
                lead = o.lead.replace("|", "/")
                rows.append(f"| {o.scenario.kind} | {o.scenario.name} | {lead} | {'yes' if o.passed else 'NO'} | "
                            f"{'; '.join(o.notes)} |")
        out.append("\n".join(rows))
    if len(played) == 2:
        rows = ["### dev against test", "", "| class | dev | test | gap |", "|---|---|---|---|"]
        dev, test = played["dev"], played["test"]
        for kind in _classes([*dev, *test]):
            dp, dt = _score([o for o in dev if o.scenario.kind == kind])
            tp, tt = _score([o for o in test if o.scenario.kind == kind])
            gap = f"{dp / dt - tp / tt:+.2f}" if dt and tt else "n/a"
            rows.append(f"| {kind} | {dp}/{dt} = {_fraction(dp, dt)} | {tp}/{tt} = {_fraction(tp, tt)} | {gap} |")
        out.append("\n".join(rows))
    out.append(summary_line(played))
    return "\n\n".join(out)


def summary_line(played: dict[str, list[Outcome]]) -> str:
    """``scenarios: dev X/Y = a.aa, test X/Y = b.bb, gap c.cc`` (the halves played; the gap with both)."""
    parts = []
    for name, outcomes in played.items():
        p, t = _score(outcomes)
        parts.append(f"{name} {p}/{t} = {_fraction(p, t)}")
    if set(played) == set(SPLITS) and all(played[n] for n in SPLITS):
        (dp, dt), (tp, tt) = _score(played["dev"]), _score(played["test"])
        parts.append(f"gap {dp / dt - tp / tt:.2f}")
    return "scenarios: " + ", ".join(parts)


async def play_all(items: list[Scenario | Case], progress: bool = False) -> tuple[list[Outcome], str]:
    """Each scenario played into a fresh memory on embedded FalkorDB and PostgreSQL started here; the outcomes
    and the language model's name. A corpus scenario that raises fails with the error as its lead."""
    from mnemonet.embed import make_embedder
    from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
    from mnemonet.store.embedded_postgres import EmbeddedPostgres

    data = REPO / ".data" / "bench" / f"scenarios-{uuid.uuid4().hex[:6]}"
    falkor, pg = EmbeddedFalkorDB(data / "falkordb"), EmbeddedPostgres(data / "postgres")
    await falkor.start()
    pg_url = await pg.start()
    outcomes: list[Outcome] = []
    try:
        base = Settings(falkordb_port=falkor.port, falkordb_password=falkor.password or "", database_url=pg_url,
                        log_level="WARNING")
        embedder = make_embedder(base)
        for n, item in enumerate(items, 1):
            if isinstance(item, Case):
                try:
                    outcome = await play_fresh(item, base, embedder)
                except Exception as exc:  # one broken scenario must not end an hour's run
                    outcome = Outcome(item, f"(error: {type(exc).__name__}: {exc})", False)
            else:
                outcome = await play_fresh(item, base, embedder)
            outcomes.append(outcome)
            if progress:
                print(f"[{n}/{len(items)}] {'ok' if outcome.passed else 'NO'} {item.kind}: {item.name}: "
                      f"{outcome.lead}", file=sys.stderr, flush=True)
        return outcomes, make_language_model(base).name
    finally:
        await pg.stop()
        await falkor.stop()
        shutil.rmtree(data, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the evaluation corpus (YAML)")
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both", help="which half to play")
    parser.add_argument("--class", dest="kind", default="", help="play only this class of the corpus")
    parser.add_argument("--verbose", action="store_true", help="also one row per scenario with its lead")
    parser.add_argument("--counts", action="store_true", help="print the split's per-class counts and exit")
    parser.add_argument("--file", type=Path, default=None,
                        help=f"play a scenario file of the older format instead (e.g. {SCENARIOS.relative_to(REPO)})")
    parser.add_argument("--only", default="", help="play only scenarios whose name contains this")
    parser.add_argument("--demo", action="store_true", help="(--file) play them through run_node.py demo --script")
    args = parser.parse_args()
    if args.file is None and not args.demo:
        await main_corpus(args)
        return
    scenarios = [s for s in load(args.file or SCENARIOS) if args.only in s.name]
    if args.demo:
        data_dir = REPO / ".data" / "bench" / f"scenarios-demo-{uuid.uuid4().hex[:6]}"
        outcomes, unsettled, _ = await run_demo(scenarios, data_dir, timeout=DEMO_SETTLE_SECONDS * (len(scenarios) + 5))
        print(f"\nthrough run_node.py demo --script (offline model); /settle timed out {unsettled} times\n")
        print(table(outcomes))
        return
    outcomes, model = await play_all(list(scenarios))
    print(f"\nlanguage model: {model}\n")
    print(table(outcomes))


async def main_corpus(args: argparse.Namespace) -> None:
    """Play the corpus's chosen halves (split on the whole file first, then filtered) and print the report."""
    halves = split(load_corpus(args.corpus))
    print(f"corpus {args.corpus}: split with seed {SPLIT_SEED}\n")
    print(counts_table(halves))
    if args.kind and args.kind not in KNOWN_CLASSES:
        raise SystemExit(f"--class: {args.kind!r} is not one of {', '.join(KNOWN_CLASSES)}")
    if args.counts:
        return
    chosen = SPLITS if args.split == "both" else (args.split,)
    picked = {name: [c for c in halves[name] if args.only in c.name and args.kind in ("", c.kind)]
              for name in chosen}
    everything: list[Scenario | Case] = [c for name in chosen for c in picked[name]]
    outcomes, model = await play_all(everything, progress=True)
    played, at = {}, 0
    for name in chosen:
        played[name] = outcomes[at:at + len(picked[name])]
        at += len(picked[name])
    print(f"\nlanguage model: {model}\n")
    print(split_report(played, verbose=args.verbose))


if __name__ == "__main__":
    asyncio.run(main())
