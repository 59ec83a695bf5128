"""Latency of the offline model's extract_observation on the gold table's sentences.

    .venv/bin/python bench/offline_latency.py              # this tree
    .venv/bin/python bench/offline_latency.py --src DIR    # another checkout's src/ (e.g. the branch base)

Prints one table: the first call (which loads the parser, if any), then per
sentence over the rest: mean, p50, p95, sentences per second, and the
process's resident memory before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

import yaml

GOLD = Path(__file__).resolve().parent.parent / "tests" / "llm" / "gold_offline.yaml"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def _run(rounds: int) -> None:
    from mnemonet.llm.offline.model import OfflineLanguageModel
    from mnemonet.settings import Settings

    texts = [c["text"] for c in yaml.safe_load(GOLD.read_text())["cases"]]
    model = OfflineLanguageModel(Settings())
    rss_before = _rss_mb()
    started = time.perf_counter()
    await model.extract_observation("I like tea", "user")
    first_ms = (time.perf_counter() - started) * 1000
    samples = []
    for _ in range(rounds):
        for text in texts:
            t0 = time.perf_counter()
            await model.extract_observation(text, "user")
            samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    mean = statistics.fmean(samples)
    print(f"model from {Path(sys.modules['mnemonet'].__file__ or '').parent}; {len(texts)} sentences x {rounds}")
    print(
        f"{'first call ms':>14} {'mean ms':>8} {'p50 ms':>7} {'p95 ms':>7} {'sent/s':>7}"
        f" {'RSS MB before':>14} {'after':>6}"
    )
    print(
        f"{first_ms:>14.1f} {mean:>8.2f} {samples[len(samples) // 2]:>7.2f} {samples[int(len(samples) * 0.95)]:>7.2f}"
        f" {1000 / mean:>7.0f} {rss_before:>14.0f} {_rss_mb():>6.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="import mnemonet from this src/ directory instead")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, args.src)
    asyncio.run(_run(args.rounds))


if __name__ == "__main__":
    main()
