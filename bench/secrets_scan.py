"""Secret-filter scan time on adversarial inputs: ``python bench/secrets_scan.py [--runs N]``.

Every text a node stores goes through ``find_secrets`` first, so a shape
that makes one of its patterns backtrack would let one request hold a core.
Each shape below is grown from a quarter of ``MAX_SCAN_CHARS`` to all of it;
the table gives the best of N scans and the ratio to the quarter size (a
linear scan stays near 4x at the full size; backtracking grows far faster).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from mnemonet.model.secrets import MAX_SCAN_CHARS, find_secrets

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = (MAX_SCAN_CHARS // 4, MAX_SCAN_CHARS // 2, MAX_SCAN_CHARS)
    print(f"| shape (best of {args.runs}) | " + " | ".join(f"{n:,} chars s" for n in sizes) + " | full / quarter |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name, make in SHAPES.items():
        seconds = [_best(make(n)[:n], args.runs) for n in sizes]
        print(f"| {name} | " + " | ".join(f"{s:.3f}" for s in seconds) + f" | {seconds[-1] / seconds[0]:.1f}x |")


if __name__ == "__main__":
    main()
