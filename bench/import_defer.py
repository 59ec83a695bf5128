"""``run_node.py import`` with and without ``--defer-extraction``: ``python bench/import_defer.py [--n 200]``.

Starts one store+llm+embed node (``run_node.py``, offline language model, embedded databases in a temporary
directory; the node start of ``bench/ingest.py``) and imports N LoCoMo dev turns as a ``chat`` file
(``Speaker: text`` a line) twice with the real ``run_node.py import``: turns 1..N with extraction inline,
then turns N+1..2N with ``--defer-extraction`` (the second run faces the bigger graph, so the comparison
does not favour it). No inference node runs, so deferred extractions stay pending: the table is the import's
own pace, the extraction's cost is paid later by the inference worker. Prints one row per mode.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ingest import DEFAULT_DATA, HERE, load_turns, start_node, wait_ready


def _import(path: Path, url: str, *extra: str) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(HERE / "run_node.py"), "import", str(path), "--format", "chat",
                           "--url", url, *extra], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(HERE / "src")})
    summary = next(line for line in done.stdout.splitlines() if line.startswith("imported "))
    return time.monotonic() - started, summary


async def bench(args: argparse.Namespace) -> None:
    turns = load_turns(args.data)[:2 * args.n]
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        proc, url = start_node(Path(tmp), None, {})
        try:
            async with httpx.AsyncClient(timeout=300.0, trust_env=False) as http:
                await wait_ready(http, url)
                await http.post(f"{url}/v1/observe", json={"text": "warm-up", "source": "bench"})  # load models
                for mode, part, extra in (("inline", turns[:args.n], ()),
                                          ("--defer-extraction", turns[args.n:], ("--defer-extraction",))):
                    path = Path(tmp) / f"{mode.strip('-')}.txt"
                    path.write_text("".join(f"{t['speaker']}: {t['text']}\n".replace("\n", " ").rstrip() + "\n"
                                            for t in part))
                    load = os.getloadavg()[0]
                    seconds, summary = _import(path, url, *extra)
                    stats = (await http.post(f"{url}/v1/stats", json={})).json()["result"]
                    written = int(re.match(r"imported (\d+)", summary).group(1))  # type: ignore[union-attr]
                    rows.append((mode, written, seconds, stats.get("extractions_pending"), load))
        finally:
            proc.terminate()
            proc.wait(60)
    print(f"run_node.py import of {args.n} LoCoMo dev turns (chat format, concurrency 8), one store+llm+embed "
          "node, offline model, packaged embedder\n")
    print("| mode | lines | wall s (incl. CLI start) | lines/s | extractions pending after | load avg before |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, written, seconds, pending, load in rows:
        print(f"| {mode} | {written} | {seconds:.1f} | {written / seconds:.1f} | {pending} | {load:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="turns per import")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
