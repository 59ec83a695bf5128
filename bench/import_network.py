"""``run_node.py import`` through a network whose language model and embedder run on their own node.

    python bench/import_network.py [--n 1500] [--data DIR]

Starts five ``run_node.py`` processes of one cluster (loopback, a key made for the run, offline language
model, packaged embedder): a ``store`` node (embedded databases in a temporary directory), a ``llm,embed``
node, and one ``inference``, one ``validation`` and one ``consolidation`` node. Imports the first N LoCoMo
dev turns as a ``chat`` file (``Speaker: text`` a line) with the real ``run_node.py import`` (extraction
inline, no ``--defer-extraction``), then waits until the workers are idle (the store's extraction,
inference and validation backlogs at zero, or unchanged for ``--idle`` seconds).

Every call between these nodes crosses a peer link: the store asks the model node for each extraction and
every embedding, the workers ask it for theirs. Issue 31 row 9: on the branch base a 1,500-line import
left 342 lines "extraction pending" with the model node up, 75 failed index writes ("more than 64
envelopes in flight on this link") and 126 failed validation batches ("Busy"). Prints lines/s of the
import, the lines it left "extraction pending" (their inline extraction failed), how long the workers
then took to be idle (and lines/s from the import's start to then), what is still pending once they are
idle, the store's ``vector_index_failures``, each worker's failed items, and the warnings each node
logged from the import on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from ingest import DEFAULT_DATA, HERE, _free_port, client_token, load_turns, wait_ready

NODES = (("store", "store"), ("model", "llm,embed"), ("inference", "inference"), ("validation", "validation"),
         ("consolidation", "consolidation"))
JOINED_WITHIN = 120.0


def _warnings_since(path: Path, since: str) -> list[str]:
    """The warning and error lines a node logged at or after ``since`` (an ISO time as the log writes it)."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            out.append(line)  # not the node's JSON log: a traceback or a crash, counted
            continue
        if entry.get("ts", "") >= since and entry.get("level") in ("warning", "error", "critical"):
            out.append(entry.get("msg", line))
    return out


def _start(name: str, capabilities: str, data_dir: Path, key_file: Path, bootstrap: str,
           log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE / "src"), "MNEMONET_LLM": "offline",
           "MNEMONET_DATA_DIR": str(data_dir / name)}
    flags = ["--bootstrap", bootstrap] if bootstrap else []
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "run_node.py"), "--capabilities", capabilities, "--port", str(port),
             "--cluster-key-file", str(key_file), "--log-level", "WARNING", *flags],
            env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


async def _joined(http: httpx.AsyncClient, urls: list[str]) -> None:
    deadline = time.monotonic() + JOINED_WITHIN
    while time.monotonic() < deadline:
        views = [(await http.get(f"{url}/health")).json() for url in urls]
        if all(sum(m["state"] == "alive" for m in v.get("members", [])) >= len(urls) for v in views):
            return
        await asyncio.sleep(0.5)
    raise SystemExit(f"the {len(urls)} nodes did not all see each other within {JOINED_WITHIN:.0f}s")


async def _idle(http: httpx.AsyncClient, url: str, quiet: float) -> tuple[dict[str, Any], float]:
    """The store's stats once the workers' backlogs are empty or have not moved for ``quiet`` seconds."""
    started = time.monotonic()
    last: tuple[int, ...] | None = None
    since = time.monotonic()
    while True:
        answer = await http.post(f"{url}/v1/stats", json={})
        if answer.status_code != 200:  # a saturated store may answer its client busy: ask again
            await asyncio.sleep(1.0)
            continue
        stats = answer.json()["result"]
        backlog = stats["backlog"]
        now = (backlog["extraction"], backlog["inference"], backlog["validation"], backlog["vectors"])
        if not any(now):
            return stats, time.monotonic() - started
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > quiet:
            return stats, time.monotonic() - started
        await asyncio.sleep(1.0)


async def bench(args: argparse.Namespace) -> None:
    turns = load_turns(args.data)[:args.n]
    key = secrets.token_hex(32)
    token = client_token(key)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp_name:
        tmp = Path(tmp_name)
        key_file = tmp / "cluster.key"
        key_file.write_text(key)
        key_file.chmod(0o600)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        urls: dict[str, str] = {}
        try:
            for name, caps in NODES:
                procs[name], urls[name] = _start(name, caps, tmp, key_file, urls.get("store", ""),
                                                 tmp / f"{name}.log")
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(timeout=300.0, trust_env=False, headers=headers) as http:
                await wait_ready(http, urls["store"])
                await _joined(http, list(urls.values()))
                await http.post(f"{urls['store']}/v1/observe", json={"text": "warm-up", "source": "bench"})
                path = tmp / "turns.txt"
                path.write_text("".join(f"{t['speaker']}: {t['text']}".replace("\n", " ").rstrip() + "\n"
                                        for t in turns))
                load = os.getloadavg()[0]
                since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
                started = time.monotonic()
                importer = await asyncio.create_subprocess_exec(
                    sys.executable, str(HERE / "run_node.py"), "import", str(path), "--format", "chat",
                    "--url", urls["store"], "--token", token, env={**os.environ, "PYTHONPATH": str(HERE / "src")},
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                out, err = (part.decode(errors="replace") for part in await importer.communicate())
                seconds = time.monotonic() - started
                summary = next((line for line in out.splitlines() if line.startswith("imported ")),
                               out[-300:] + err[-300:])
                # Lines whose inline extraction failed: written, their extraction left to the inference worker.
                left = next((int(m.group(1)) for line in out.splitlines()
                             if (m := re.match(r"(\d+) with extraction pending", line))), 0)
                stats, waited = await _idle(http, urls["store"], args.idle)
                workers = {}
                for name in ("inference", "validation", "consolidation"):
                    health = (await http.get(f"{urls[name]}/health")).json()
                    workers[name] = sum(w.get("failed", 0) for w in health.get("workers", []))
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
        # From the import on: joining and the workers' first passes before the store serves warn as they should.
        logged = {name: _warnings_since(tmp / f"{name}.log", since) for name, _ in NODES}
        warnings = {name: len(lines) for name, lines in logged.items()}
        # Each kind of warning once, with how often each node logged it ("store vector.read_unsettled" x20).
        kinds: Counter[str] = Counter()
        first: dict[str, str] = {}
        for name, said in logged.items():
            for line in said:
                kind = f"{name} {line.split(' ', 1)[0]}"
                kinds[kind] += 1
                first.setdefault(kind, f"{name}: {line}")
    written = re.match(r"imported (\d+)", summary)
    lines = int(written.group(1)) if written else 0
    backlog = stats["backlog"]
    print(f"run_node.py import of {args.n} LoCoMo dev turns (chat format, extraction inline), store node + "
          "llm,embed node + inference, validation, consolidation nodes; offline model, packaged embedder\n")
    print(f"import: {summary}")
    print("| lines | import s (incl. CLI start) | lines/s | left pending by the import | then idle after s | "
          "lines/s to idle | extraction pending | "
          "inference pending | validation pending | vector_index_failures | failed items (inf/val/cons) | "
          "warnings logged from the import on (store/model/inf/val/cons) | load avg before |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    print(f"| {lines} | {seconds:.1f} | {lines / seconds:.1f} | {left} | {waited:.0f} | "
          f"{lines / (seconds + waited):.2f} | {backlog['extraction']} | "
          f"{backlog['inference']} | {backlog['validation']} | {stats['vector_index_failures']} | "
          f"{workers['inference']}/{workers['validation']}/{workers['consolidation']} | "
          f"{'/'.join(str(warnings[name]) for name, _ in NODES)} | {load:.1f} |")
    for kind, count in kinds.most_common():
        print(f"\nwarning x{count}, the first: {first[kind][:400]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1500, help="turns to import")
    parser.add_argument("--idle", type=float, default=60.0,
                        help="seconds without progress after which the workers count as idle")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
