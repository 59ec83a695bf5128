"""Import time of the packages a node loads at start: ``python bench/import_time.py [--runs N]``.

Each import runs in a fresh interpreter under ``python -X importtime``; the table gives the median of
the cumulative time of the top-level module over the runs, and whether the Anthropic SDK got loaded.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULES = ("mnemonet.llm", "mnemonet.agents", "mnemonet.node.peer_node", "anthropic")


def _once(module: str) -> tuple[float, bool]:
    probe = f"import sys, {module}; print('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", probe], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(REPO / "src")})
    # stderr lines: "import time: self [us] | cumulative | name"; the top-level module's line carries the total.
    cumulative = next(int(line.split("|")[1]) for line in done.stderr.splitlines()
                      if line.split("|")[-1].strip() == module)
    return cumulative / 1e6, done.stdout.strip() == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"| import ({args.runs} fresh interpreters) | median s | min s | loads the Anthropic SDK |")
    print("|---|---|---|---|")
    for module in MODULES:
        runs = [_once(module) for _ in range(args.runs)]
        seconds = [s for s, _ in runs]
        print(f"| `{module}` | {statistics.median(seconds):.2f} | {min(seconds):.2f} | {runs[0][1]} |")


if __name__ == "__main__":
    main()
