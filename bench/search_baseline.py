"""``search`` (hybrid+graph, as served) of this code beside a baseline revision's, on one load, in one run.

    python bench/search_latency.py --sizes 100000              # first: a load (kept in .data/bench/)
    python bench/search_baseline.py --baseline main            # then: both codes on it, ~3 min
    python bench/search_baseline.py --data scale --baseline main --rounds 2   # on what scale.py left
    python bench/search_baseline.py --baseline HEAD --baseline-set embed_single_text_threads=0   # one setting

Starts the two servers on the data ``search_latency.py`` (default) or ``scale.py`` (``--data scale``) loaded,
and one subprocess per code version (``timing_worker.py``): this tree's ``src/`` and the baseline revision's,
checked out as a git worktree under ``.data/bench/`` (``baseline.py``). Each query goes to both in turn, the
order alternating, round after round (a first untimed round warms both), so the machine's load falls on both
alike; the time is taken in the subprocess around ``MemoryService.search`` alone, query embedding included.
Prints p50 / p95 / mean ms per code, their ratios, the load average and CPU steal of the pass, and how many
queries got different hits (ids, order or scores) from the two: a speed-up that changes results says so.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import scale
import search_latency
from baseline import baseline_tree
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.embedded_postgres import EmbeddedPostgres
from search_latency import cpu_ticks, pct, steal_share
from worker_side import WorkerSide, loadavg

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Side(WorkerSide):
    """One code version's worker, and what it answered."""

    ms: list[float] = field(default_factory=list)
    hits: dict[str, list[list[object]]] = field(default_factory=dict)


async def count_rows(url: str, schema: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval(f'SELECT count(*) FROM "{schema}".embeddings'))
    finally:
        await conn.close()


async def run(data: str, baseline: str, rounds: int, n_queries: int, change: dict[str, str]) -> None:
    tree = baseline_tree(baseline)
    if data == "scale":
        data_dir, graph, schema = scale.DATA_DIR, scale.GRAPH, scale.SCHEMA
        extra: dict[str, object] = {"graph_query_timeout": 600.0, "vector_sync_interval": 0.0}
    else:
        data_dir, graph, schema = search_latency.DATA_DIR, "search_latency", "search_latency"
        extra = {}
    if not (data_dir / "postgres").exists():
        sys.exit(f"no data in {data_dir}: run bench/{data}.py first")
    falkor, postgres = EmbeddedFalkorDB(data_dir / "falkordb"), EmbeddedPostgres(data_dir / "postgres")
    await falkor.start()
    url = await postgres.start()
    config: dict[str, object] = {"llm": "offline", "data_dir": str(data_dir), "falkordb_port": falkor.port,
                                 "falkordb_password": falkor.password or "", "database_url": url,
                                 "graph_name": graph, "vector_schema": schema, "vector_command_timeout": 900.0,
                                 **extra}
    changed = "".join(f", {k}={v}" for k, v in change.items())
    sides = [Side("this tree", REPO / "src"), Side(f"baseline {baseline}{changed}", tree / "src", change)]
    try:
        rows = await count_rows(url, schema)
        if data == "scale":
            asked = scale.queries(random.Random(23), n_queries)
        else:  # search_latency.py's queries over its rows (statements only: the count is of them)
            corpus = search_latency.corpus(rows, seed=7)
            rng = random.Random(11)
            asked = [rng.choice([f"what does {s} {p.replace('_', ' ')}?", f"who {p.replace('_', ' ')} the {o}?",
                                 f"{s} and the {o}"]) for s, p, o in rng.sample(corpus, n_queries)]
        for side in sides:
            print(f"{side.label}: {await side.start({'settings': config, 'schema': schema}, data_dir / 'workers.log')}",
                  file=sys.stderr)
        for q in asked[:5]:
            for side in sides:
                await side.send({"call": "search", "query": q})
        at_start, ticks = loadavg(), cpu_ticks()
        for r in range(rounds):
            for n, q in enumerate(asked):
                shift = (r * len(asked) + n) % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    reply = await side.send({"call": "search", "query": q})
                    side.ms.append(float(reply["ms"]))
                    side.hits[q] = reply["hits"]
        steal, at_end = steal_share(ticks, cpu_ticks()), loadavg()
    finally:
        for side in sides:
            await side.stop()
        await postgres.stop()
        await falkor.stop()
    current, base = sides
    differ = [q for q in asked if current.hits[q] != base.hits[q]]
    print(f"\nsearch(k=10, hybrid+graph) over {rows:,} index rows ({data}.py's load), {len(asked)} queries x "
          f"{rounds} rounds a side, interleaved; load average {at_start} at the start, {at_end} at the end; "
          f"CPU stolen {steal}\n")
    print("| code | p50 ms | p95 ms | mean ms |\n|---|---:|---:|---:|")
    for side in sides:
        print(f"| {side.label} | {pct(side.ms, 50):.1f} | {pct(side.ms, 95):.1f} | {statistics.mean(side.ms):.1f} |")
    mean_ratio = statistics.mean(current.ms) / statistics.mean(base.ms)
    print(f"\nthis tree / baseline: p50 {pct(current.ms, 50) / pct(base.ms, 50):.2f}x, "
          f"p95 {pct(current.ms, 95) / pct(base.ms, 95):.2f}x, mean {mean_ratio:.2f}x")
    print(f"queries whose hits differ (ids, order or scores): {len(differ)} of {len(asked)}")
    for q in differ[:5]:
        print(f"  {q}\n    this tree: {current.hits[q][:3]}\n    baseline:  {base.hits[q][:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="main", help="the revision to compare with (git worktree)")
    parser.add_argument("--data", choices=["search_latency", "scale"], default="search_latency",
                        help="whose load to search")
    parser.add_argument("--rounds", type=int, default=1, help="times each query is timed on each side")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline-set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a setting of the baseline side only (repeatable)")
    args = parser.parse_args()
    change = dict(item.split("=", 1) for item in args.baseline_set)
    asyncio.run(run(args.data, args.baseline, args.rounds, args.queries, change))


if __name__ == "__main__":
    main()
