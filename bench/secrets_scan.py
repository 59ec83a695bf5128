"""Secret-filter scan time on adversarial inputs: ``python bench/secrets_scan.py [--runs N]``.

Every text a node stores goes through ``find_secrets`` first, so a shape
that makes one of its patterns backtrack would let one request hold a core.
Each shape below is grown from a quarter of ``MAX_SCAN_CHARS`` to all of it;
the table gives the best of N scans and the ratio to the quarter size (a
linear scan stays near 4x at the full size; backtracking grows far faster).

Then what it catches and what it wrongly refuses: ``bench/data/secret_phrasings.yaml`` (credentials in
sentences punctuated and abbreviated as people type them, in several languages, and ordinary sentences that
mention passwords, pins, tokens and keys; a dev half the patterns were written against and a test half
that was not looked at), and every text of the LoCoMo dev conversations (turns, questions, answers,
summaries and observations; ordinary speech with no credential in it), read from ``../shared/data``.
``--quality`` prints only these; ``--timing`` only the scan times.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from mnemonet.model.secrets import MAX_SCAN_CHARS, find_secrets

HERE = Path(__file__).resolve().parent
PHRASINGS = HERE / "data" / "secret_phrasings.yaml"
# ../shared/data next to the checkout, or next to the folder of worktrees that holds it.
DEFAULT_DATA = next((p / "shared" / "data" for p in HERE.parents if (p / "shared" / "data").is_dir()),
                    HERE.parent.parent / "shared" / "data")

# Shapes aimed at the patterns: long identifier runs (tokens, entropy), long runs of '=' (assignments),
# dashes between letters (PEM and key prefixes), and plain prose.
SHAPES: dict[str, Callable[[int], str]] = {
    "identifiers": lambda n: ("word_" * 40 + " ") * (n // 201 + 1),
    "equals signs": lambda n: "=" * n,
    "a-a-a- dashes": lambda n: "a-" * (n // 2 + 1),
    "key=value pairs": lambda n: "password=x " * (n // 11 + 1),
    "prose": lambda n: "The quick brown fox jumps over the lazy dog. " * (n // 45 + 1),
}


def _best(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        find_secrets(text)
        best = min(best, time.perf_counter() - start)
    return best


def _locomo_texts(data: Path) -> list[str]:
    """Every sentence-like string of the LoCoMo dev file: turns, questions, answers, summaries, observations."""
    texts: list[str] = []
    skip = {"dia_id", "evidence", "sample_id", "speaker", "img_url", "blip_caption", "query", "category"}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in skip and not key.endswith("date_time"):
                    walk(item)

    walk(json.loads((data / "locomo-dev.json").read_text()))
    return [t for t in texts if len(t.split()) >= 3]


def quality(data: Path) -> None:
    """Caught credentials and wrongly refused ordinary sentences, per half of the phrasing set, and LoCoMo."""
    sets = yaml.safe_load(PHRASINGS.read_text())
    print("| set | credentials caught | ordinary sentences refused |")
    print("|---|---:|---:|")
    missed: list[str] = []
    refused: list[str] = []
    for half in ("dev", "test"):
        secrets = [text for text, _ in sets[half]["secrets"]]
        ordinary = sets[half]["ordinary"]
        caught = [t for t in secrets if find_secrets(t)]
        wrong = [t for t in ordinary if find_secrets(t)]
        missed += [f"{half}: {t}" for t in secrets if t not in caught]
        refused += [f"{half}: {t}" for t in wrong]
        print(f"| {half} | {len(caught)} / {len(secrets)} | {len(wrong)} / {len(ordinary)} |")
    if (data / "locomo-dev.json").is_file():
        texts = _locomo_texts(data)
        wrong = [t for t in texts if find_secrets(t)]
        refused += [f"locomo: {t[:100]}" for t in wrong]
        print(f"| LoCoMo dev texts | - | {len(wrong)} / {len(texts)} |")
    else:
        print(f"| LoCoMo dev texts | - | (no {data / 'locomo-dev.json'}) |")
    for title, lines in (("missed", missed), ("refused", refused)):
        if lines:
            print(f"\n{title}:\n" + "\n".join(f"- {line}" for line in lines))


def timing(runs: int) -> None:
    """Scan time of each adversarial shape at a quarter, half and all of ``MAX_SCAN_CHARS``."""
    sizes = (MAX_SCAN_CHARS // 4, MAX_SCAN_CHARS // 2, MAX_SCAN_CHARS)
    print(f"| shape (best of {runs}) | " + " | ".join(f"{n:,} chars s" for n in sizes) + " | full / quarter |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name, make in SHAPES.items():
        seconds = [_best(make(n)[:n], runs) for n in sizes]
        print(f"| {name} | " + " | ".join(f"{s:.3f}" for s in seconds) + f" | {seconds[-1] / seconds[0]:.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--quality", action="store_true", help="only what is caught and wrongly refused")
    only.add_argument("--timing", action="store_true", help="only the scan times")
    args = parser.parse_args()
    if not args.timing:
        quality(args.data)
    if not args.quality:
        print()
        timing(args.runs)


if __name__ == "__main__":
    main()
