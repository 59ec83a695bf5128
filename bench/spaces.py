"""Vector search in one memory space of many, against a store holding one space: latency and recall.

    python bench/spaces.py                      # 20,000 rows, 50 spaces, ~3 min
    python bench/spaces.py --n 100000           # the issue's size (loading takes most of the time)

Three layouts of the same N rows (synthetic 384-dimensional vectors in 200
clusters, texts "<adjective> <noun> <n>"), each in the embedded PostgreSQL the
bench starts under ``.data/bench/spaces``:

- ``one space``: all N rows in one ``VectorStore`` (the baseline: a store of one team);
- ``schema per space`` (what mnemonet does): N/S rows in each of S spaces, each its own schema,
  table, HNSW index and keyword statistics, made by ``VectorStore.for_space``; a query searches one;
- ``space column``: all N rows in one table with a ``space`` column, one HNSW index over all rows,
  and the query filters ``WHERE space = $1`` inside the scan (pgvector's iterative scan, the
  session default of the store's pool), the layout a shared index would need.

Rows are loaded by COPY and the HNSW index built after (as ``vector_reembed`` does). Every
query runs in every layout, interleaved; recall@10 is against the exact top 10 of the queried
space (numpy, brute force). The ``knn`` rows time ``VectorStore.knn``; ``hybrid`` rows time
``VectorStore.hybrid`` (k-NN and BM25 keyword search fused), what ``search`` runs per query.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from pgvector import Vector

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402
from mnemonet.store.vectors import VectorStore  # noqa: E402

DATA_DIR = REPO / ".data" / "bench" / "spaces"
DIM = 384
MODEL = "bench-synthetic"
ADJECTIVES = ["red", "quiet", "old", "busy", "tiny", "green", "coastal", "modern", "rural", "famous"]
NOUNS = ["bicycle", "harbour", "library", "bakery", "garden", "museum", "violin", "chess", "tea", "jazz",
         "mountain", "lighthouse", "market", "studio", "theatre", "vineyard", "canal", "orchard", "piano", "kayak"]


def data(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(200, DIM)).astype(np.float32)
    vectors = centers[rng.integers(0, 200, n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"{ADJECTIVES[i % 10]} {NOUNS[(i // 10) % 20]} {i}" for i in range(n)]
    return vectors, texts


async def load(store: VectorStore, ids: list[str], vectors: np.ndarray, texts: list[str]) -> None:
    """COPY rows in, then fix the model, dimension and HNSW index (built after the load)."""
    async with store.acquire() as conn:
        await conn.copy_records_to_table(
            "embeddings", schema_name=store.schema, columns=["id", "kind", "text", "model", "embedding", "created_at"],
            records=[(i, "statement", t, MODEL, Vector(v), 0) for i, t, v in zip(ids, texts, vectors, strict=True)])
    await store.ensure_model(MODEL, DIM)
    async with store.acquire() as conn:
        await conn.execute(f'VACUUM ANALYZE "{store.schema}".embeddings')


async def load_shared(store: VectorStore, spaces: list[str], vectors: np.ndarray, settings: Settings) -> None:
    async with store.acquire() as conn:
        await conn.execute("DROP SCHEMA IF EXISTS bench_shared CASCADE; CREATE SCHEMA bench_shared")
        await conn.execute(f"CREATE TABLE bench_shared.rows (id text PRIMARY KEY, space text NOT NULL, "
                           f"embedding vector({DIM}) NOT NULL)")
        await conn.copy_records_to_table("rows", schema_name="bench_shared", records=[
            (f"r{i}", spaces[i], Vector(v)) for i, v in enumerate(vectors)])
        await conn.execute(
            f"CREATE INDEX ON bench_shared.rows USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(settings.hnsw_m)}, ef_construction = {int(settings.hnsw_ef_construction)})")
        await conn.execute("CREATE INDEX ON bench_shared.rows (space)")
        await conn.execute("VACUUM ANALYZE bench_shared.rows")


def exact_top(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, k: int = 10) -> set[int]:
    scores = vectors[rows] @ query
    return {int(rows[i]) for i in np.argsort(-scores)[:k]}


def row(name: str, times: list[float], recalls: list[float], base: float | None) -> str:
    ms = sorted(t * 1000 for t in times)
    p50, p95 = statistics.median(ms), ms[int(len(ms) * 0.95) - 1]
    ratio = f"{p50 / base:.2f}x" if base else "1.00x"
    recall = f"{statistics.mean(recalls):.3f}" if recalls else "-"
    return f"| {name} | {p50:.2f} | {p95:.2f} | {ratio} | {recall} |"


async def main(n: int, n_spaces: int, queries: int, seed: int) -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    server = EmbeddedPostgres(DATA_DIR / "postgres")
    url = await server.start()
    # Building HNSW over 100k rows outlasts the default command timeout on a shared 2-core machine.
    settings = Settings(database_url=url, data_dir=DATA_DIR, vector_command_timeout=3600.0)
    try:
        vectors, texts = data(n, seed)
        names = [f"s{i}" for i in range(n_spaces)]
        space_of = [names[i % n_spaces] for i in range(n)]
        started = time.monotonic()
        one = await VectorStore.open(settings, schema="bench_one")
        await one.clear()
        await load(one, [f"r{i}" for i in range(n)], vectors, texts)
        spaced: dict[str, VectorStore] = {}
        base = await VectorStore.open(settings, schema="bench_base")
        for name in names:
            store = await base.for_space(f"bench_base__{name}")
            await store.clear()
            rows = [i for i in range(n) if space_of[i] == name]
            await load(store, [f"r{i}" for i in rows], vectors[rows], [texts[i] for i in rows])
            spaced[name] = store
        await load_shared(one, space_of, vectors, settings)
        print(f"loaded {n} rows x 3 layouts in {time.monotonic() - started:.0f}s", file=sys.stderr)

        rng = np.random.default_rng(seed + 1)
        members = {name: np.array([i for i in range(n) if space_of[i] == name]) for name in names}
        timing: dict[str, list[float]] = {k: [] for k in ("one_knn", "per_knn", "col_knn", "one_hyb", "per_hyb")}
        recall: dict[str, list[float]] = {k: [] for k in ("one_knn", "per_knn", "col_knn")}
        for q in range(queries):
            name = names[int(rng.integers(0, n_spaces))]
            target = int(rng.choice(members[name]))
            query = vectors[target] + 0.2 * rng.normal(size=DIM).astype(np.float32)
            query /= np.linalg.norm(query)
            text = f"{ADJECTIVES[q % 10]} {NOUNS[(q * 7) % 20]}"
            truth_all = exact_top(vectors, np.arange(n), query)
            truth_space = exact_top(vectors, members[name], query)

            t = time.perf_counter()
            hits = await one.knn(query, 10)
            timing["one_knn"].append(time.perf_counter() - t)
            recall["one_knn"].append(len({int(h.id[1:]) for h in hits} & truth_all) / 10)

            t = time.perf_counter()
            hits = await spaced[name].knn(query, 10)
            timing["per_knn"].append(time.perf_counter() - t)
            recall["per_knn"].append(len({int(h.id[1:]) for h in hits} & truth_space) / 10)

            t = time.perf_counter()
            async with one.acquire() as conn:
                found = await conn.fetch("SELECT id FROM bench_shared.rows WHERE space = $1 "
                                         "ORDER BY embedding <=> $2 LIMIT 10", name, Vector(query))
            timing["col_knn"].append(time.perf_counter() - t)
            recall["col_knn"].append(len({int(r["id"][1:]) for r in found} & truth_space) / 10)

            t = time.perf_counter()
            await one.hybrid(text, query, 10)
            timing["one_hyb"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await spaced[name].hybrid(text, query, 10)
            timing["per_hyb"].append(time.perf_counter() - t)

        one_knn = statistics.median(timing["one_knn"]) * 1000
        one_hyb = statistics.median(timing["one_hyb"]) * 1000
        print(f"\n{n} rows; {n_spaces} spaces of {n // n_spaces}; {queries} queries; hnsw m={settings.hnsw_m} "
              f"ef_construction={settings.hnsw_ef_construction} ef_search={settings.hnsw_ef_search}\n")
        print("| layout | p50 ms | p95 ms | p50 vs one space | recall@10 |")
        print("|---|---:|---:|---:|---:|")
        print(row("knn, one space", timing["one_knn"], recall["one_knn"], None))
        print(row("knn, schema per space (mnemonet)", timing["per_knn"], recall["per_knn"], one_knn))
        print(row("knn, space column filtered in the scan", timing["col_knn"], recall["col_knn"], one_knn))
        print(row("hybrid, one space", timing["one_hyb"], [], None))
        print(row("hybrid, schema per space (mnemonet)", timing["per_hyb"], [], one_hyb))
        await base.close()
        await one.close()
    finally:
        await server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="rows in all (default 20000)")
    parser.add_argument("--spaces", type=int, default=50, help="spaces the rows are spread over (default 50)")
    parser.add_argument("--queries", type=int, default=300, help="queries per layout (default 300)")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.spaces, args.queries, args.seed))
