"""End-to-end `observe` latency of two checkouts side by side: this tree and another (e.g. the branch base).

    .venv/bin/python bench/observe_latency.py [--base DIR] [--n 100]

Without --base it times this tree alone. Starts one store+llm+embed node from each checkout
(`DIR/run_node.py` with `DIR/src` first on the path; embedded databases in a temporary directory each,
offline language model, no key, loopback), waits until both serve, then sends the gold table's sentences
to the nodes alternately, one call at a time, so both see the same machine load. Prints p50/p95/mean per
node and the ratio this/base.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

HERE = Path(__file__).resolve().parent.parent
GOLD = HERE / "tests" / "llm" / "gold_offline.yaml"
READY_WITHIN = 300.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(checkout: Path, data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout / "src"), "MNEMONET_LLM": "offline",
           "MNEMONET_CLUSTER_KEY": "", "MNEMONET_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen(
        [sys.executable, str(checkout / "run_node.py"), "--capabilities", "store,llm,embed", "--port", str(port),
         "--log-level", "ERROR"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}"


async def _ready(http: httpx.AsyncClient, url: str) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        try:
            if (await http.post(f"{url}/v1/stats", json={})).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.5)
    raise SystemExit(f"{url} did not serve within {READY_WITHIN:.0f}s")


async def _observe(http: httpx.AsyncClient, url: str, text: str) -> float:
    started = time.perf_counter()
    resp = await http.post(f"{url}/v1/observe", json={"text": text})
    resp.raise_for_status()
    return (time.perf_counter() - started) * 1000


async def _run(base: Path | None, n: int) -> None:
    texts = [c["text"] for c in yaml.safe_load(GOLD.read_text())["cases"]][:n]
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = ([("base", base)] if base is not None else []) + [("this", HERE)]
        nodes = {name: _start(checkout, Path(tmp) / name) for name, checkout in checkouts}
        try:
            async with httpx.AsyncClient(timeout=120.0, trust_env=False) as http:
                await asyncio.gather(*(_ready(http, url) for _, url in nodes.values()))
                for _, url in nodes.values():  # warm up: the first call loads models
                    await _observe(http, url, "I like tea")
                samples: dict[str, list[float]] = {name: [] for name in nodes}
                for text in texts:
                    for name, (_, url) in nodes.items():
                        samples[name].append(await _observe(http, url, text))
        finally:
            for proc, _ in nodes.values():
                proc.terminate()
            for proc, _ in nodes.values():
                proc.wait(60)
    print(f"observe, {len(texts)} gold sentences, one call at a time, alternating between the nodes\n")
    print("| node | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    stats = {}
    for name, values in samples.items():
        p50, p95 = statistics.median(values), statistics.quantiles(values, n=20)[18]
        stats[name] = (p50, p95, statistics.fmean(values))
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {stats[name][2]:.1f} |")
    if "base" in stats:
        this, base_ = stats["this"], stats["base"]
        print(f"\nthis/base: p50 {this[0] / base_[0]:.2f}x, mean {this[2] / base_[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout to compare with (its run_node.py and src/)")
    parser.add_argument("--n", type=int, default=100, help="sentences from the gold table")
    args = parser.parse_args()
    asyncio.run(_run(args.base.resolve() if args.base else None, args.n))


if __name__ == "__main__":
    main()
