"""CPU and wall time per chat turn of the offline model's parse, alone and inside ``extract_observation``,
for 1, 8 and 32 concurrent callers.

    .venv/bin/python bench/offline_parse.py                            # this tree
    .venv/bin/python bench/offline_parse.py --src BASE/src --src src   # a base checkout beside this one
    .venv/bin/python bench/offline_parse.py --wait 0 --wait 0.002      # offline_parse_batch_wait values
    .venv/bin/python bench/offline_parse.py --callers 1 --pause 0.02   # a lone writer with other work between turns
    .venv/bin/python bench/offline_parse.py --components               # each pipeline component's share
    .venv/bin/python bench/offline_parse.py --identical --turns 99999  # batched == one at a time, every turn

Texts: the first ``--turns`` chat turns of the LoCoMo dev file
(``../shared/data/locomo-dev.json`` or ``--data``), each caller taking the
next turn until all are done. Each variant (a ``--src`` checkout, and for a
checkout that has the setting each ``--wait``) runs in its own process, which
first reads every turn once (the pipeline's load and its word caches are not
measured); the variants then take turns cell by cell, ``--rounds`` times, and
the table shows each cell's median. "parse" is the parse as that checkout's
model calls it (this tree: ``nlp.parse``, batched on the pipeline's thread;
before it: ``nlp.parse`` behind a lock, on ``asyncio.to_thread``); "extract"
is ``OfflineLanguageModel.extract_observation`` (parse, rules, concepts).
CPU is the variant process's, every thread included, per turn; wall is the
cell's elapsed time per turn; p50 is one call's latency; batch is the mean
number of texts per ``nlp.pipe`` call (- where the checkout does not batch).
With ``--pause`` each caller idles that long between its calls (not timed),
as a writer does that has other work between observations: back to back, a
lone caller measures the hand-over between threads on a busy machine too.

``--components`` instead times each component of the pipeline (this tree's
``nlp.pipeline()``) over the same turns, one text at a time and in batches of
64: CPU ms per turn, median of ``--rounds``. ``--identical`` runs the turns
through this tree's ``extract_observation`` one at a time (batches of one)
and then from 32 concurrent callers, and counts the turns whose extraction
(statements, concepts, topics, inferred claims) differs.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent.parent
# ../shared/data next to the checkout, or next to the folder of worktrees that holds it.
DEFAULT_DATA = next((p / "shared" / "data" for p in HERE.parents if (p / "shared" / "data").is_dir()),
                    HERE.parent / "shared" / "data")
MODES = ("parse", "extract")


def load_turns(data: Path, n: int) -> list[tuple[str, str]]:
    """The first ``n`` (text, speaker) turns of the LoCoMo dev file, in order."""
    out = []
    for sample in json.loads((data / "locomo-dev.json").read_text()):
        conv = sample["conversation"]
        sessions = sorted((int(m.group(1)), v) for k, v in conv.items()
                          if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list))
        out += [(t["text"], t["speaker"]) for _, session in sessions for t in session]
    return out[:n]


# -- one variant's process -----------------------------------------------------


class Variant:
    """The offline model of one checkout, driven by C concurrent callers."""

    def __init__(self, turns: list[tuple[str, str]], wait: float | None) -> None:
        from mnemonet.llm.offline import nlp
        from mnemonet.llm.offline.model import OfflineLanguageModel
        from mnemonet.settings import Settings

        settings = Settings() if wait is None else Settings(offline_parse_batch_wait=wait)
        self.turns = turns
        self.nlp: Any = nlp  # the module of whichever checkout this process runs: its API varies
        self.settings = settings
        self.model = OfflineLanguageModel(settings)
        self.batched = inspect.iscoroutinefunction(nlp.parse)

    async def _parse(self, text: str) -> None:
        if self.batched:
            await self.nlp.parse(text, self.settings)
        else:  # the checkout before batching: a lock around nlp(text), on the default executor
            await asyncio.to_thread(self.nlp.parse, text)

    async def _extract(self, text: str, speaker: str) -> None:
        await self.model.extract_observation(text, speaker)

    async def run(self, mode: str, callers: int, pause: float = 0.0) -> dict[str, Any]:
        """Every turn through ``mode`` by ``callers`` concurrent callers, each idling ``pause`` seconds
        between its calls: CPU, wall and latency per turn."""
        pending = iter(self.turns)
        latencies: list[float] = []

        async def caller() -> None:
            for text, speaker in pending:
                t0 = time.perf_counter()
                await (self._parse(text) if mode == "parse" else self._extract(text, speaker))
                latencies.append(time.perf_counter() - t0)
                if pause:
                    await asyncio.sleep(pause)

        before = self.nlp.stats() if self.batched else (0, 0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(callers)))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        after = self.nlp.stats() if self.batched else (0, 0)
        n = len(self.turns)
        batches = after[0] - before[0]
        return {"cpu_ms": cpu / n * 1000, "wall_ms": wall / n * 1000,
                "p50_ms": statistics.median(latencies) * 1000,
                "batch": (after[1] - before[1]) / batches if batches else None}


async def _serve(src: str, wait: float | None, turns: list[tuple[str, str]]) -> None:
    sys.path.insert(0, src)
    variant = Variant(turns, wait)
    await variant.run("extract", 8)  # load the pipeline and fill its caches with every turn's words
    print(json.dumps({"ready": str(Path(sys.modules["mnemonet"].__file__ or "").parent)}), flush=True)
    for line in sys.stdin:
        mode, callers, pause = line.split()
        print(json.dumps(await variant.run(mode, int(callers), float(pause))), flush=True)


# -- the pipeline's components ----------------------------------------------------


def components(args: argparse.Namespace) -> None:
    """CPU per turn of each pipeline component, one text at a time and in batches of 64."""
    sys.path.insert(0, str(HERE / "src"))
    from mnemonet.llm.offline import nlp

    texts = [t for t, _ in load_turns(args.data, args.turns)]
    pipeline = nlp.pipeline()
    list(pipeline.pipe(texts))  # the word caches filled, as in the variants' processes
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for batch in (1, 64):
            docs = [pipeline.make_doc(t) for t in texts]
            # Every component of this pipeline has pipe(); the type says only that it is callable.
            for name, component in cast(list[tuple[str, Any]], pipeline.pipeline):
                t0 = time.process_time()
                docs = [component(d) for d in docs] if batch == 1 else list(component.pipe(docs, batch_size=batch))
                times.setdefault((name, batch), []).append((time.process_time() - t0) / len(texts) * 1000)
    print(f"load average: {_load()}; {len(texts)} LoCoMo turns, median of {args.rounds} rounds")
    print(f"{'component':<16} {'one at a time ms':>16} {'batches of 64 ms':>16}")
    for name in [*pipeline.pipe_names, "all"]:
        row = [statistics.median(times[(name, b)]) if name != "all" else
               sum(statistics.median(times[(n, b)]) for n in pipeline.pipe_names) for b in (1, 64)]
        print(f"{name:<16} {row[0]:>16.2f} {row[1]:>16.2f}")


async def identical(args: argparse.Namespace) -> None:
    """Every turn extracted one at a time and from 32 concurrent callers: the turns that differ."""
    sys.path.insert(0, str(HERE / "src"))
    from mnemonet.llm.offline import nlp
    from mnemonet.llm.offline.model import OfflineLanguageModel
    from mnemonet.settings import Settings

    turns = load_turns(args.data, args.turns)
    day = date(2026, 11, 23)  # relative dates read from one fixed day in both runs
    alone = OfflineLanguageModel(Settings(offline_parse_batch_max=1), today=lambda: day)
    together = OfflineLanguageModel(Settings(), today=lambda: day)
    expected = [await alone.extract_observation(t, s, infer=True) for t, s in turns]
    pending = iter(enumerate(turns))
    got: list[Any] = [None] * len(turns)

    async def caller() -> None:
        for i, (text, speaker) in pending:
            got[i] = await together.extract_observation(text, speaker, infer=True)

    batches, texts = nlp.stats()
    await asyncio.gather(*(caller() for _ in range(32)))
    batches, texts = nlp.stats()[0] - batches, nlp.stats()[1] - texts
    differ = sum(e != g for e, g in zip(expected, got, strict=True))
    print(f"load average: {_load()}; {len(turns)} LoCoMo turns, {sum(len(e.statements) for e in expected)} "
          f"statements one at a time; 32 callers: {texts / batches:.1f} texts a batch; turns that differ: {differ}")


# -- the driver ----------------------------------------------------------------


def _has_wait_setting(src: str) -> bool:
    return "offline_parse_batch_wait" in (Path(src) / "mnemonet" / "settings.py").read_text()


def _start(src: str, wait: float | None, args: argparse.Namespace) -> subprocess.Popen[str]:
    cmd = [sys.executable, __file__, "--worker", src, "--turns", str(args.turns), "--data", str(args.data)]
    if wait is not None:
        cmd += ["--worker-wait", str(wait)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _ask(proc: subprocess.Popen[str], line: str | None) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    if line is not None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
    reply = proc.stdout.readline()
    if not reply:
        raise SystemExit(f"a variant's process ended (exit {proc.wait()})")
    result: dict[str, Any] = json.loads(reply)
    return result


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def drive(args: argparse.Namespace) -> None:
    srcs = args.src or [str(HERE / "src")]
    variants: list[tuple[str, subprocess.Popen[str]]] = []
    for src in srcs:
        for wait in args.wait if _has_wait_setting(src) else [None]:
            label = src if wait is None else f"{src} wait={wait:g}"
            variants.append((label, _start(src, wait, args)))
    for label, proc in variants:  # started together, loaded one after the other: wait for each
        print(f"{label}: model from {_ask(proc, None)['ready']}")
    print(f"load average before: {_load()}; {args.turns} LoCoMo turns a cell, median of {args.rounds} rounds"
          + (f", {args.pause:g} s idle between a caller's calls" if args.pause else ""))
    cells = [(mode, c) for mode in MODES for c in args.callers]
    results: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for mode, callers in cells:
            for label, proc in variants:  # side by side: each cell of each variant in turn
                results.setdefault((mode, callers, label), []).append(_ask(proc, f"{mode} {callers} {args.pause}"))
    for _, proc in variants:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    print(f"load average after: {_load()}")
    first = variants[0][0]

    def median(mode: str, callers: int, label: str, key: str) -> float:
        return statistics.median(r[key] for r in results[(mode, callers, label)])

    width = max(len(label) for label, _ in variants)
    print(f"{'mode':<8} {'callers':>7}  {'variant':<{width}} {'CPU ms/turn':>11} {'wall ms/turn':>12} {'p50 ms':>8}"
          f" {'batch':>6} {'CPU x':>6} {'wall x':>6}")
    for mode, callers in cells:
        for label, _ in variants:
            cpu, wall = median(mode, callers, label, "cpu_ms"), median(mode, callers, label, "wall_ms")
            batches = [r["batch"] for r in results[(mode, callers, label)] if r["batch"] is not None]
            batch = f"{statistics.median(batches):.1f}" if batches else "-"
            print(f"{mode:<8} {callers:>7}  {label:<{width}} {cpu:>11.2f} {wall:>12.2f}"
                  f" {median(mode, callers, label, 'p50_ms'):>8.2f} {batch:>6}"
                  f" {cpu / median(mode, callers, first, 'cpu_ms'):>6.2f}"
                  f" {wall / median(mode, callers, first, 'wall_ms'):>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", help="a checkout's src/ directory (repeat; default: this tree)")
    parser.add_argument("--wait", action="append", type=float, help="offline_parse_batch_wait values (default 0)")
    parser.add_argument("--callers", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--turns", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds each caller idles between its calls")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    parser.add_argument("--components", action="store_true", help="time each pipeline component instead")
    parser.add_argument("--identical", action="store_true", help="check batched extractions equal lone ones")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-wait", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.wait = args.wait or [0.0]
    if args.worker:
        asyncio.run(_serve(args.worker, args.worker_wait, load_turns(args.data, args.turns)))
    elif args.components:
        components(args)
    elif args.identical:
        asyncio.run(identical(args))
    else:
        drive(args)


if __name__ == "__main__":
    main()
