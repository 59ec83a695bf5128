"""Write throughput of the graph store on embedded FalkorDB: batched vs naive.

    python bench/store_write.py [--n 10000] [--per-observation 5]

Writes ``n`` statements (each between 2 concepts) one observation per round
trip (``GraphStore.write_observation``, ``per-observation`` statements each)
and the naive way (one node or edge per round trip), each with the
append-only file fsynced on every write (``always``, the default) and once a
second (``everysec``), all on one freshly started server in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec, derived_id, normalise_name  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store.dialects.falkordb import FalkorDriver  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.graph import GraphStore  # noqa: E402


def observations(n: int, per: int) -> list[ObservationRecord]:
    """``n`` statements in observations of ``per``; subjects repeat (get-or-create hits), objects are new."""
    out = []
    for start in range(0, n, per):
        statements = tuple(
            StatementSpec(id=f"s{i}", subject=f"entity {i % 500}", predicate="relates_to", object=f"value {i}",
                          confidence=0.9)
            for i in range(start, min(start + per, n))
        )
        out.append(ObservationRecord(id=f"o{start}", text=f"observation {start}", source=SourceSpec(name="bench"),
                                     statements=statements))
    return out


async def batched(driver: FalkorDriver, records: list[ObservationRecord]) -> None:
    store = GraphStore(driver, Settings())
    for record in records:
        await store.write_observation(record)


async def naive(driver: FalkorDriver, records: list[ObservationRecord]) -> None:
    """The same graph, one MERGE/CREATE per node or edge, one round trip each."""
    w = driver.write
    await w("MERGE (s:Source {key: $k}) ON CREATE SET s.id = $id, s.name = $name, s.kind = 'user'",
            {"k": "user:bench", "id": derived_id("src", "user:bench"), "name": "bench"})
    for r in records:
        await w("CREATE (:Observation {id: $id, raw_content: $text, created_at: $now})",
                {"id": r.id, "text": r.text, "now": 0})
        await w("MATCH (o:Observation {id: $id}), (s:Source {key: 'user:bench'}) CREATE (o)-[:RECORDED_BY]->(s)",
                {"id": r.id})
        for s in r.statements:
            keys = (normalise_name(s.subject), normalise_name(s.object))
            for name, key in zip((s.subject, s.object), keys, strict=True):
                await w("MERGE (c:Concept {key: $key}) ON CREATE SET c.id = $id, c.name = $name",
                        {"key": key, "id": derived_id("cpt", key), "name": name})
                await w("MATCH (o:Observation {id: $o}), (c:Concept {key: $key}) MERGE (o)-[:MENTIONS]->(c)",
                        {"o": r.id, "key": key})
            await w("CREATE (:Statement {id: $id, predicate: $p, confidence: $c, negated: $neg, created_at: 0})",
                    {"id": s.id, "p": s.predicate, "c": s.confidence, "neg": s.negated})
            for rel, key in (("ABOUT_SUBJECT", keys[0]), ("ABOUT_OBJECT", keys[1])):
                await w(f"MATCH (s:Statement {{id: $id}}), (c:Concept {{key: $key}}) CREATE (s)-[:{rel}]->(c)",
                        {"id": s.id, "key": key})
            await w("MATCH (s:Statement {id: $id}), (o:Observation {id: $o}) CREATE (s)-[:DERIVED_FROM]->(o)",
                    {"id": s.id, "o": r.id})
            await w("MATCH (s:Statement {id: $id}), (x:Source {key: 'user:bench'}) CREATE (s)-[:ASSERTED_BY]->(x)",
                    {"id": s.id})


async def run(n: int, per: int) -> None:
    data_dir = REPO / ".data" / "bench" / f"store-write-{uuid.uuid4().hex[:8]}"
    server = EmbeddedFalkorDB(data_dir)
    await server.start()
    admin = server.client()
    records = observations(n, per)
    rows: list[tuple[str, str, float, int]] = []
    try:
        modes: list[tuple[str, Callable[[FalkorDriver, list[ObservationRecord]], Awaitable[None]]]] = [
            (f"batched ({per}/observation, 1 round trip)", batched), ("naive (1 node/edge per round trip)", naive),
        ]
        for fsync in ("always", "everysec"):
            await admin.config_set("appendfsync", fsync)
            for label, write in modes:
                driver = FalkorDriver(server.host, server.port, f"bench_{uuid.uuid4().hex[:8]}",
                                      password=server.password)
                await GraphStore(driver, Settings()).ensure_indexes()
                began = time.perf_counter()
                await write(driver, records)
                elapsed = time.perf_counter() - began
                counts = await GraphStore(driver, Settings()).counts()
                assert counts["Statement"] == n and counts["Concept"] == min(n, 500) + n, counts
                rows.append((label, fsync, elapsed, counts["Statement"]))
                await driver.close()
    finally:
        await admin.aclose()
        await server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)

    print(f"{'mode':<40} {'appendfsync':<12} {'statements':>10} {'seconds':>9} {'stmts/s':>9} {'vs naive':>9}")
    for label, fsync, elapsed, count in rows:
        base = next(e for lbl, f, e, _ in rows if f == fsync and lbl.startswith("naive"))
        print(f"{label:<40} {fsync:<12} {count:>10} {elapsed:>9.2f} {count / elapsed:>9.0f} {base / elapsed:>8.1f}x")
    always = {lbl: e for lbl, f, e, _ in rows if f == "always"}
    everysec = {lbl: e for lbl, f, e, _ in rows if f == "everysec"}
    for label in always:
        print(f"fsync 'always' costs {label.split(' (')[0]}: {always[label] / everysec[label]:.2f}x the time of "
            "'everysec'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="statements to write per mode (default 10000)")
    parser.add_argument("--per-observation", type=int, default=5, help="statements per observation (default 5)")
    args = parser.parse_args()
    if args.n < 1 or not 1 <= args.per_observation <= 200:
        parser.error("--n must be positive and --per-observation between 1 and 200")
    asyncio.run(run(args.n, args.per_observation))


if __name__ == "__main__":
    main()
