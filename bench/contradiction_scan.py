"""The open-contradictions scan on embedded FalkorDB: two ways to leave superseded statements out.

    python bench/contradiction_scan.py [--contradictions 2000]

``get_unresolved_contradictions`` (and ``remember``, which scans the newest
500 for the statements it recalls) lists CONTRADICTS edges whose two ends
are both current. The graph holds ``contradictions`` observed statements,
each contradicted by a claim; every tenth claim also supersedes another
statement. The query mnemonet runs (``UNRESOLVED_CONTRADICTIONS``: an
optional match for a SUPERSEDES edge into each end) is timed side by side
with the NOT-pattern form it replaced, on one server in this run, and both
must return the same rows.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec  # noqa: E402
from mnemonet.model.records import ClaimRecord, StatementLink  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store import graph_cypher  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.graph import GraphStore  # noqa: E402

DATA_DIR = REPO / ".data" / "bench" / "contradiction_scan"
# The form used before: FalkorDB evaluates each pattern predicate ~5x slower than the optional matches.
NOT_PATTERN = """
MATCH (a:Statement)-[r:CONTRADICTS]->(b:Statement)
WHERE NOT (:Statement)-[:SUPERSEDES]->(a) AND NOT (:Statement)-[:SUPERSEDES]->(b)
RETURN a.id AS a, b.id AS b, r.reason AS reason, r.created_at AS created_at
ORDER BY created_at DESC, a, b
LIMIT $limit""".strip()
ROUNDS = 20
LIMIT = 500


async def load(graph: GraphStore, n: int) -> None:
    observer, worker = SourceSpec(name="bench", kind="system"), SourceSpec(name="worker", kind="agent")
    for i in range(n):
        statement = StatementSpec(id=f"s{i}", subject=f"person {i % 300}", predicate="likes", object=f"thing {i % 50}")
        await graph.write_observation(ObservationRecord(id=f"o{i}", text="t", source=observer, statements=(statement,)))
    for i in range(n):
        supersedes = (StatementLink(target_id=f"s{(i + 1) % n}"),) if i % 10 == 0 else ()
        claim = StatementSpec(id=f"c{i}", subject=f"person {i % 300}", predicate="likes", object=f"other {i % 70}")
        await graph.write_claim(ClaimRecord(
            statement=claim, source=worker, contradicts=(StatementLink(target_id=f"s{i}"),), supersedes=supersedes,
        ))


async def run(n: int) -> None:
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    server = EmbeddedFalkorDB(DATA_DIR, appendfsync="no")  # the load is not what is measured
    await server.start()
    graph = await GraphStore.open(Settings(falkordb_port=server.port, falkordb_password=server.password or "",
                                              graph_name="contradiction_scan"))
    try:
        await load(graph, n)
        queries = {"optional match (mnemonet)": graph_cypher.UNRESOLVED_CONTRADICTIONS, "NOT pattern": NOT_PATTERN}
        times: dict[str, list[float]] = {label: [] for label in queries}
        results = {}
        for _ in range(ROUNDS):  # interleaved, so drift on the machine hits both alike
            for label, cypher in queries.items():
                t0 = time.perf_counter()
                results[label] = await graph.driver.read(cypher, {"limit": LIMIT})
                times[label].append((time.perf_counter() - t0) * 1000)
        if len({str(rows) for rows in results.values()}) != 1:
            raise SystemExit("the two queries returned different rows")
    finally:
        await graph.close()
        await server.stop()
    p50 = {label: statistics.median(values) for label, values in times.items()}
    print(f"\n{n:,} contradictions (every tenth claim also supersedes), newest {LIMIT} open ones, {ROUNDS} rounds\n")
    print("| query | p50 ms | rows |")
    print("|---|---:|---:|")
    for label in queries:
        print(f"| {label} | {p50[label]:.1f} | {len(results[label])} |")
    print(f"\nNOT pattern / optional match: {p50['NOT pattern'] / p50['optional match (mnemonet)']:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contradictions", type=int, default=2000)
    asyncio.run(run(parser.parse_args().contradictions))


if __name__ == "__main__":
    main()
