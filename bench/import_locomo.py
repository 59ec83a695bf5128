"""``run_node.py import`` of the LoCoMo dev file, then LoCoMo recall on what it imported beside the same turns observed.

    .venv/bin/python bench/import_locomo.py                     # the whole file (3,435 turns), ~85 min under load
    .venv/bin/python bench/import_locomo.py --conversations 1   # the first conversation only
    .venv/bin/python bench/import_locomo.py --conversations 3 --ef-search 1000 [--keep DIR]

1. Starts one keyless store+llm+embed node (``run_node.py``, offline language model, packaged embedder,
   embedded databases in a temporary directory: the node start of ``bench/ingest.py``) and imports the
   LoCoMo dev file with the real ``run_node.py import FILE --format locomo`` at its default concurrency into
   the node's default space (``--conversations N``: the first N conversations, cut into a file of their
   own). Reports wall time (the importer's start included), observations/s and refused lines.
2. Stops the node and opens its databases in this process. Beside the imported graph, in another graph and
   vector schema of the same databases, the same conversations are ingested the way
   ``bench/retrieval_locomo.py`` ingests them (its ``ingest``: ``MemoryService.observe``, one turn after
   another, key ``<sample>:<dia_id>``, the same speaker and metadata).
3. Checks that each imported observation has the text, speaker and metadata (``dia_id``, session
   ``<sample>:session_<n>``, session date) its observed twin has, and counts on each side the turns
   embedded with a context turn (the turn before, which search's vectors depend on).
4. Asks every category 1-4 question of both with ``retrieval_locomo.evaluate`` (its hit counting, its
   search modes) and prints recall@5/10/20 side by side; ``--ef-search N`` scores both again with the vector
   index searched at ``hnsw_ef_search`` N (nearer exact k-NN: the default's approximation differs between two
   indexes of the same rows built in a different order).

Both sides hold every conversation in one store, as a user importing the file gets it: a question searches
all conversations' turns, and a hit on another conversation's turn counts for no evidence. Recall is
therefore lower than ``retrieval_locomo.py``'s (a store per conversation); the two columns are the comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ingest import DEFAULT_DATA, HERE, start_node, wait_drained, wait_ready
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.model.ids import keyed_id
from mnemonet.model.views import ObservationView
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.service.import_formats import Item, content_identity, import_key, parse_items
from mnemonet.service.retrieval import SEARCH_MODES
from mnemonet.settings import Settings
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.embedded_postgres import EmbeddedPostgres
from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore
from retrieval_locomo import KS, Conversation, Scores, evaluate, ingest, load, mode_rows, print_categories

OBSERVED = "locomo_observed"  # graph and vector schema of the turns observed one by one
READ_BATCH = 500  # observation ids per graph read
_SUMMARY = re.compile(r"imported (\d+) of (\d+) lines .*?, (\d+) refused, (\d+) unreadable, in ([\d.]+)s")


@dataclass
class Ingest:
    """One way in: what it wrote, how long it took, and the machine's load when it began."""

    label: str
    written: int
    refused: int
    seconds: float
    load: float


def run_import(path: Path, url: str) -> tuple[Ingest, str]:
    """The real ``run_node.py import`` of ``path``, timed from outside; the row and its refused-line report."""
    load = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(HERE / "run_node.py"), "import", str(path), "--format", "locomo",
                           "--url", url], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(HERE / "src")})
    seconds = time.monotonic() - started
    summary = next((m for line in done.stdout.splitlines() if (m := _SUMMARY.search(line))), None)
    if done.returncode != 0 or summary is None:
        raise SystemExit(f"run_node.py import failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-2000:]}")
    written, refused = int(summary.group(1)), int(summary.group(3)) + int(summary.group(4))
    return Ingest("run_node.py import (concurrency 8)", written, refused, seconds, load), done.stderr


async def observations(svc: MemoryService, ids: list[str]) -> dict[str, ObservationView]:
    """The observations with these ids, read in batches."""
    out: dict[str, ObservationView] = {}
    for i in range(0, len(ids), READ_BATCH):
        out |= {o.id: o for o in await svc.graph.get_observations(ids[i:i + READ_BATCH])}
    return out


async def with_context(svc: MemoryService) -> tuple[int, int]:
    """(observations embedded with a context turn, observations embedded) in ``svc``'s vector index."""
    async with svc.vectors.acquire() as conn:
        row = await conn.fetchrow(f"SELECT count(*) FILTER (WHERE context <> '') AS ctx, count(*) AS n "
                                  f"FROM {quote_schema(svc.vectors.schema)}.embeddings WHERE kind = 'observation'")
    return int(row["ctx"]), int(row["n"])


def imported_ids(items: list[Item], identity: str, convs: list[Conversation]) -> dict[str, dict[str, str]]:
    """Per conversation, the imported observation id of each turn -> its dia_id (the keys the import gives)."""
    by_conv: dict[str, dict[str, str]] = {c.id: {} for c in convs}
    for item in items:
        sample = item.metadata["session"].rsplit(":", 1)[0]
        by_conv[sample][keyed_id("obs", import_key(identity, item.line), item.source)] = item.metadata["dia_id"]
    return by_conv


async def compare_records(imported: MemoryService, observed: MemoryService, convs: list[Conversation],
                          mapping: dict[str, dict[str, str]]) -> tuple[int, int, int]:
    """(turns imported, turns missing from the import, turns whose text, speaker or metadata differ)."""
    found = missing = differ = 0
    for conv in convs:
        mine = await observations(imported, list(mapping[conv.id]))
        twins = await observations(observed, list(conv.obs_to_dia))
        twin_of = {dia: twins[obs_id] for obs_id, dia in conv.obs_to_dia.items() if obs_id in twins}
        for obs_id, dia in mapping[conv.id].items():
            got, want = mine.get(obs_id), twin_of.get(dia)
            if got is None:
                missing += 1
                continue
            found += 1
            differ += want is None or (got.text, got.source, got.metadata) != (want.text, want.source, want.metadata)
    return found, missing, differ


async def score(svc: MemoryService, convs: list[Conversation], mapping: dict[str, dict[str, str]] | None) -> Scores:
    """retrieval_locomo's scores of ``svc`` in every search mode; ``mapping``: the import's ids instead of the
    observe path's (``conv.obs_to_dia``)."""
    scores = Scores(list(SEARCH_MODES))
    for conv in convs:
        asked = conv if mapping is None else Conversation(conv.id, conv.turns, conv.questions, mapping[conv.id])
        await evaluate(svc, asked, mode_rows(svc), scores)
        print(f"  {conv.id}: {len(conv.questions)} questions asked", file=sys.stderr)
    return scores


async def bench(args: argparse.Namespace) -> None:
    data = args.data / "locomo-dev.json"
    convs = load(data, args.conversations)
    with contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory(
            dir=os.environ.get("TMPDIR")) as tmp:
        path = data
        if args.conversations is not None:  # the first N conversations, as a file of their own
            path = Path(tmp) / f"locomo-{args.conversations}.json"
            path.write_text(json.dumps(json.loads(data.read_text())[:args.conversations]))
        items = [i for i in parse_items(path.read_text(), "locomo") if isinstance(i, Item)]
        mapping = imported_ids(items, content_identity(path.read_bytes()), convs)
        node_dir = Path(tmp) / "node"
        node_dir.mkdir()
        proc, url = start_node(node_dir, None, {})
        try:
            async with httpx.AsyncClient(timeout=300.0, trust_env=False) as http:
                await wait_ready(http, url)
                await http.post(f"{url}/v1/search", json={"query": "warm up"})  # loads the embedder, writes nothing
                imported, refusals = run_import(path, url)
                await wait_drained(http, url)
        finally:
            proc.terminate()
            proc.wait(120)
        if refusals.strip():
            print(refusals.strip(), file=sys.stderr)

        falkor, postgres = EmbeddedFalkorDB(node_dir / "falkordb"), EmbeddedPostgres(node_dir / "postgres")
        await falkor.start()
        db_url = await postgres.start()
        try:
            base = Settings(llm="offline", data_dir=node_dir, falkordb_port=falkor.port,
                            falkordb_password=falkor.password or "", database_url=db_url)
            llm, embedder = make_language_model(base), make_embedder(base)
            svc_import = await build_memory_service(base, llm, embedder)  # the node's default space
            svc_observe = await build_memory_service(base.model_copy(update={"graph_name": OBSERVED}), llm,
                                                     embedder, vector_schema=OBSERVED)
            try:
                load0, written, seconds, refused = os.getloadavg()[0], 0, 0.0, 0
                for conv in convs:
                    n, s, bad = await ingest(svc_observe, conv)
                    written, seconds, refused = written + n, seconds + s, refused + bad
                observed = Ingest("MemoryService.observe, one turn after another (retrieval_locomo.py)",
                                  written, refused, seconds, load0)
                found, missing, differ = await compare_records(svc_import, svc_observe, convs, mapping)
                contexts = {label: await with_context(svc) for label, svc in
                            (("imported", svc_import), ("observed", svc_observe))}
                scores = {"imported": await score(svc_import, convs, mapping),
                          "observed": await score(svc_observe, convs, None)}
                if args.ef_search:  # both again, with the HNSW search nearer exact
                    for label, svc, mapped in (("imported", svc_import, mapping), ("observed", svc_observe, None)):
                        wider = svc.settings.model_copy(update={"hnsw_ef_search": args.ef_search})
                        vectors = await VectorStore.open(wider, schema=svc.vectors.schema)
                        try:
                            again = MemoryService(svc.graph, vectors, llm, embedder, wider)
                            scores[f"{label}, ef_search {args.ef_search}"] = await score(again, convs, mapped)
                        finally:
                            await vectors.close()
            finally:
                await svc_import.close()
                await svc_observe.close()
        finally:
            await postgres.stop()
            await falkor.stop()

    report(convs, [imported, observed], (found, missing, differ), contexts, scores)


def report(convs: list[Conversation], ingests: list[Ingest], records: tuple[int, int, int],
           contexts: dict[str, tuple[int, int]], scores: dict[str, Scores]) -> None:
    turns = sum(len(c.turns) for c in convs)
    questions = sum(len(c.questions) for c in convs)
    print(f"\nLoCoMo dev: {len(convs)} conversations, {turns} turns, {questions} questions (categories 1-4), "
          "every conversation in one store on both sides\n")
    print("| way in | observations | refused | wall s | observations/s | load avg at start |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in ingests:
        print(f"| {row.label} | {row.written} | {row.refused} | {row.seconds:.0f} | {row.written / row.seconds:.1f} "
              f"| {row.load:.1f} |")
    found, missing, differ = records
    print(f"\nimported turns with the text, speaker and metadata (dia_id, session, session date) of their observed "
          f"twin: {found - differ} of {turns} ({missing} missing, {differ} differing)")
    for label, (ctx, n) in contexts.items():
        print(f"{label}: {ctx} of {n} turns embedded with a context turn")
    for imported, observed in zip(list(scores)[::2], list(scores)[1::2], strict=True):
        print("\n| search mode | " + " | ".join(f"recall@{k} {imported} | {observed} | diff" for k in KS) + " |")
        print("|---|" + "---:|---:|---:|" * len(KS))
        for mode in SEARCH_MODES:
            a, b = scores[imported], scores[observed]
            cells = " | ".join(f"{a.mean(mode, k):.3f} | {b.mean(mode, k):.3f} "
                               f"| {a.mean(mode, k) - b.mean(mode, k):+.3f}" for k in KS)
            print(f"| {mode} | {cells} |")
    for label, s in scores.items():
        print(f"\n{label}:", end="")
        print_categories(s.labels, s.by_category)
    worst = max(abs(scores["imported"].mean(m, k) - scores["observed"].mean(m, k)) for m in SEARCH_MODES for k in KS)
    print(f"\nlargest recall difference, imported - observed, over every mode and k: {worst:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding locomo-dev.json")
    parser.add_argument("--ef-search", type=int, default=0, metavar="N", help="score both sides again with the "
                        "vector index searched at hnsw_ef_search N (at most 1000): nearer exact k-NN")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep the databases in DIR "
                        "(new or empty) instead of a temporary directory")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
