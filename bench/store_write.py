"""Write throughput of the graph store on embedded FalkorDB: batched vs naive.

    python bench/store_write.py [--n 10000] [--per-observation 5] [--writers 16] [--rounds 2]

Writes ``n`` statements (each between 2 concepts) one observation per round
trip (``GraphStore.write_observation``, ``per-observation`` statements each,
group commit off), the same from ``writers`` concurrent writers with group
commit off and on (``graph_group_commit_max``/``_wait`` at their defaults:
concurrent writes share one round trip and one fsync), and the naive way (one
node or edge per round trip), each with the append-only file fsynced on every
write (``always``, the default) and once a second (``everysec``), all on one
freshly started server in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
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


ONE_BY_ONE = Settings(graph_group_commit_max=1)


async def batched(driver: FalkorDriver, records: list[ObservationRecord]) -> None:
    store = GraphStore(driver, ONE_BY_ONE)
    for record in records:
        await store.write_observation(record)


def concurrent(writers: int, settings: Settings) -> Callable[[FalkorDriver, list[ObservationRecord]], Awaitable[None]]:
    """``writers`` tasks writing the records, each the next one not yet taken, through one GraphStore."""
    async def write(driver: FalkorDriver, records: list[ObservationRecord]) -> None:
        store = GraphStore(driver, settings)
        pending = iter(records)

        async def writer() -> None:
            for record in pending:
                await store.write_observation(record)

        await asyncio.gather(*(writer() for _ in range(writers)))
        groups = store.write_groups
        if settings.graph_group_commit_max > 1:
            GROUP_SIZES.append(groups.writes / groups.groups)
    return write


GROUP_SIZES: list[float] = []  # observations per round trip of each group-commit run


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


def _server_cpu(pid: int) -> float:
    """CPU seconds the FalkorDB process has used (user + system): its share of a mode, whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(n: int, per: int, writers: int, rounds: int) -> None:
    data_dir = REPO / ".data" / "bench" / f"store-write-{uuid.uuid4().hex[:8]}"
    server = EmbeddedFalkorDB(data_dir)
    await server.start()
    assert server.process is not None
    admin = server.client()
    records = observations(n, per)
    # (label, fsync) -> [(seconds, server CPU seconds)], one per round
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    modes: list[tuple[str, Callable[[FalkorDriver, list[ObservationRecord]], Awaitable[None]]]] = [
        (f"batched ({per}/observation, 1 round trip)", batched),
        (f"batched, {writers} writers, no group", concurrent(writers, ONE_BY_ONE)),
        (f"group commit, {writers} writers", concurrent(writers, Settings())),
        ("naive (1 node/edge per round trip)", naive),
    ]
    try:
        for fsync in ("always", "everysec"):
            await admin.config_set("appendfsync", fsync)
            # The machine's load drifts: the modes take turns, in another order each round.
            for turn in range(rounds):
                for label, write in modes[turn % len(modes):] + modes[:turn % len(modes)]:
                    driver = FalkorDriver(server.host, server.port, f"bench_{uuid.uuid4().hex[:8]}",
                                          password=server.password)
                    await GraphStore(driver, Settings()).ensure_indexes()
                    cpu = _server_cpu(server.process.pid)
                    began = time.perf_counter()
                    await write(driver, records)
                    elapsed = time.perf_counter() - began
                    cpu = _server_cpu(server.process.pid) - cpu
                    counts = await GraphStore(driver, Settings()).counts()
                    assert counts["Statement"] == n and counts["Concept"] == min(n, 500) + n, counts
                    runs.setdefault((label, fsync), []).append((elapsed, cpu))
                    await driver.drop()
                    await driver.close()
    finally:
        await admin.aclose()
        await server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)

    defaults = Settings()
    print(f"{n} statements per run, {rounds} rounds per mode (modes in turn), mean seconds with the rounds' range; "
          f"group commit: graph_group_commit_max {defaults.graph_group_commit_max}, graph_group_commit_wait "
          f"{defaults.graph_group_commit_wait}s, {statistics.mean(GROUP_SIZES):.1f} observations per round trip")
    print(f"{'mode':<40} {'appendfsync':<12} {'seconds':>9} {'range':>13} {'stmts/s':>9} {'vs naive':>9} "
          f"{'server CPU s':>13}")
    mean = {key: statistics.mean(e for e, _ in values) for key, values in runs.items()}
    for (label, fsync), values in runs.items():
        base = next(m for (lbl, f), m in mean.items() if f == fsync and lbl.startswith("naive"))
        spread = f"{min(e for e, _ in values):.1f}-{max(e for e, _ in values):.1f}"
        print(f"{label:<40} {fsync:<12} {mean[label, fsync]:>9.2f} {spread:>13} {n / mean[label, fsync]:>9.0f} "
              f"{base / mean[label, fsync]:>8.1f}x {statistics.mean(c for _, c in values):>13.2f}")
    for label, _ in modes:
        print(f"fsync 'always' costs {label.split(' (')[0]}: {mean[label, 'always'] / mean[label, 'everysec']:.2f}x "
              "the time of 'everysec'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="statements to write per mode (default 10000)")
    parser.add_argument("--per-observation", type=int, default=5, help="statements per observation (default 5)")
    parser.add_argument("--writers", type=int, default=16, help="concurrent writers of the concurrent modes (16)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode, the modes taking turns (2)")
    args = parser.parse_args()
    if args.n < 1 or not 1 <= args.per_observation <= 200 or args.writers < 1 or args.rounds < 1:
        parser.error("--n, --writers and --rounds must be positive and --per-observation between 1 and 200")
    asyncio.run(run(args.n, args.per_observation, args.writers, args.rounds))
    print(f"load average at the end: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
