"""Tree ensembles and a pairwise objective against the fitted ranking's logistic regressions, held out by conversation.

    python bench/retrieval_locomo.py locomo-dev.json --reuse --fit --dump-pools /tmp/pools.pkl   # once
    python bench/rank_trees.py /tmp/pools.pkl
    python bench/rank_trees.py /tmp/pools.pkl --baseline /tmp/before.pkl --only written   # pools of two codes

Reads the pools ``retrieval_locomo.py --fit`` fitted on (the same feature
rows, neighbours and evidence labels) and prints, side by side, recall@5/10/20,
recall@10 per category, and the recall@10 and recall@5 gains over today's ranking (paired
bootstrap intervals over questions; how many of the six conversations gain) of
each ranking fitted on five conversations and
scored on the sixth, for each of the six:

- today's two logistic regressions (``rank_fit.fit_two_stage``);
- the same two stages fitted on pairs (an evidence turn against another candidate
  of the same question: a linear RankNet) instead of on single rows;
- gradient-boosted trees (LightGBM) in place of the first logistic regression,
  the second one (neighbours' support) kept and fitted on the trees' scores;
- trees over the 23 features and the second stage's 8 neighbour inputs (from the
  first logistic regression), one model;
- the same two with LightGBM's lambdarank objective (each question a group);
- the last as ``rank_fit.fit_trees`` writes it for query time (``search_ranking`` 'fitted');
- whichever of the first six is best held out inside the five training conversations (nested: the
  choice among rankings made without the held-out conversation).

Tree settings (``rank_fit.TREES``) were fixed before any figure was seen, shallow and few, so
that scoring ~250 candidates stays cheap at query time; none is chosen on the
held-out figures. Needs ``lightgbm`` (bench only, never at run time).

``--baseline FILE``: the gains are measured against the written ranking fitted (held out
the same way) on the pools of FILE, dumped from the same stores and questions by other
code (another candidate pool or other features), instead of against the first row.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from mnemonet.service.fitted_rank import neighbour_features, point_scores  # noqa: E402
from rank_fit import L2, NEWTON_STEPS, TREES, Question, fit_logistic, fit_trees, fit_two_stage  # noqa: E402

KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# A pair is one evidence turn and one other candidate of the same question; this many others per evidence turn
# (the highest-scored by the first logistic regression, where the ranking is decided, and as many at random).
PAIRS_HARD, PAIRS_RANDOM = 30, 30

Scorer = Callable[[Question], np.ndarray]
Fitter = Callable[[Sequence[Question]], Scorer]


def logistic(train: Sequence[Question]) -> Scorer:
    """Today's ranking: two logistic regressions (rank_fit.py)."""
    point, neighbour = fit_two_stage(train)
    return lambda q: point_scores(neighbour_features(point_scores(q.features, point), q.near), neighbour)


def fit_pairwise(diffs: np.ndarray, l2: float = L2) -> np.ndarray:
    """Weights (no bias) of a logistic regression on feature differences, each pair's evidence turn first."""
    w = np.zeros(diffs.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(diffs @ w, -50, 50)))
        gradient = diffs.T @ (p - 1.0) + l2 * w
        hessian = (diffs * (p * (1 - p))[:, None]).T @ diffs + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return w


def pairs(questions: Sequence[Question], rows: Callable[[Question], np.ndarray],
          guide: Callable[[Question], np.ndarray], seed: int = 0) -> np.ndarray:
    """Differences of feature rows: each evidence turn minus hard and random other turns of its question."""
    rng = np.random.default_rng(seed)
    out = []
    for q in questions:
        x, turn = rows(q), q.is_turn
        pos = np.flatnonzero((q.labels > 0) & turn)
        neg = np.flatnonzero((q.labels == 0) & turn)
        if not len(pos) or not len(neg):
            continue
        g = guide(q)
        hard = neg[np.argsort(-g[neg], kind="stable")[:PAIRS_HARD]]
        rand = rng.choice(neg, size=min(PAIRS_RANDOM, len(neg)), replace=False)
        others = np.unique(np.r_[hard, rand])
        for i in pos:
            out.append(x[i] - x[others])
    return np.vstack(out)


def pairwise(train: Sequence[Question]) -> Scorer:
    """Both stages fitted on pairs (linear RankNet), the hard pairs chosen by today's first stage."""
    point0, _ = fit_two_stage(train)
    def first_guide(q: Question) -> np.ndarray:
        return point_scores(q.features, point0)
    w1 = np.r_[fit_pairwise(pairs(train, lambda q: q.features, first_guide)), 0.0]

    def second_rows(q: Question) -> np.ndarray:
        return neighbour_features(point_scores(q.features, w1), q.near)
    w2 = np.r_[fit_pairwise(pairs(train, second_rows, lambda q: point_scores(q.features, w1))), 0.0]
    return lambda q: point_scores(second_rows(q), w2)


def _stacked(q: Question, point: np.ndarray) -> np.ndarray:
    """The 23 features and the second stage's 8 neighbour inputs from the first logistic regression."""
    return np.hstack([q.features, neighbour_features(point_scores(q.features, point), q.near)])


def _booster(objective: str, x: np.ndarray, y: np.ndarray, groups: list[int]) -> Any:
    import lightgbm as lgb

    data = lgb.Dataset(x, y.astype(int), group=groups if objective == "lambdarank" else None)
    return lgb.train({"objective": objective, **TREES}, data)


def trees_then_neighbours(objective: str) -> Fitter:
    """Trees in place of the first logistic regression; the second (neighbours' support) on the trees' scores."""
    def fit(train: Sequence[Question]) -> Scorer:
        x = np.vstack([q.features[q.is_turn] for q in train])
        y = np.concatenate([q.labels[q.is_turn] for q in train])
        booster = _booster(objective, x, y, [int(q.is_turn.sum()) for q in train])

        def first(q: Question) -> np.ndarray:
            return np.asarray(booster.predict(q.features, raw_score=True))
        second = np.vstack([neighbour_features(first(q), q.near)[q.is_turn] for q in train])
        neighbour = fit_logistic(second, y)
        return lambda q: point_scores(neighbour_features(first(q), q.near), neighbour)
    return fit


def trees_stacked(objective: str) -> Fitter:
    """One tree model over the features and the neighbour inputs of today's first stage."""
    def fit(train: Sequence[Question]) -> Scorer:
        point, _ = fit_two_stage(train)
        x = np.vstack([_stacked(q, point)[q.is_turn] for q in train])
        y = np.concatenate([q.labels[q.is_turn] for q in train])
        booster = _booster(objective, x, y, [int(q.is_turn.sum()) for q in train])
        return lambda q: np.asarray(booster.predict(_stacked(q, point), raw_score=True))
    return fit


def shipped(train: Sequence[Question]) -> Scorer:
    """The 'fitted' ranking as rank_weights holds it (rank_fit.fit_trees): the last row above, its first stage's
    weights rounded to 4 places as written, its sum calibrated, evaluated by fitted_rank.Trees."""
    return fit_trees(train).scores


SHIPPED = "the same as written to rank_weights ('fitted')"
CHOSEN = "whichever of the first six is best held out within the training conversations (nested)"
RANKINGS: dict[str, Fitter] = {
    "logistic, two stages (today's)": logistic,
    "pairwise linear (RankNet), two stages": pairwise,
    "trees (binary), then neighbours' logistic": trees_then_neighbours("binary"),
    "trees (lambdarank), then neighbours' logistic": trees_then_neighbours("lambdarank"),
    "trees (binary) over features + neighbour inputs": trees_stacked("binary"),
    "trees (lambdarank) over features + neighbour inputs": trees_stacked("lambdarank"),
    SHIPPED: shipped,
    CHOSEN: lambda train: chosen(train),
}


def chosen(train: Sequence[Question]) -> Scorer:
    """The ranking (of the six above) whose recall@10 is best held out by conversation among ``train`` alone,
    fitted on all of ``train``: choosing a ranking inside the training conversations, as a nested cross-validation,
    so the held-out figure pays for the choice."""
    candidates = [name for name in RANKINGS if name not in (CHOSEN, SHIPPED)]
    inner = {name: statistics.mean(v for values in held_out(train, RANKINGS[name])[1][10].values() for v in values)
             for name in candidates}
    best = max(candidates, key=lambda name: inner[name])
    print(f"  fitted on {', '.join(sorted({q.conversation for q in train}))}: chose {best} "
          f"(inner recall@10 {inner[best]:.3f})", file=sys.stderr, flush=True)
    return RANKINGS[best](train)


def recall(q: Question, scores: np.ndarray, k: int) -> float:
    order = np.argsort(-scores, kind="stable")[:k]
    return len(q.evidence & {q.turns[i] for i in order}) / len(q.evidence)


PerQuestion = dict[int, dict[str, list[float]]]


def held_out(questions: Sequence[Question], fit: Fitter) -> tuple[dict[str, float], PerQuestion]:
    """recall@k and recall@10 per category, each conversation scored by a model fitted on the others only; and
    for each k, each conversation's recall@k per question (in the questions' order within it)."""
    per_conv: PerQuestion = {k: defaultdict(list) for k in KS}
    per_k: dict[int, list[float]] = defaultdict(list)
    per_cat: dict[int, list[float]] = defaultdict(list)
    for held in sorted({q.conversation for q in questions}):
        score = fit([q for q in questions if q.conversation != held])
        for q in questions:
            if q.conversation == held:
                s = score(q)
                for k in KS:
                    per_k[k].append(recall(q, s, k))
                    per_conv[k][held].append(recall(q, s, k))
                per_cat[q.category].append(recall(q, s, 10))
    out = {f"r@{k}": statistics.mean(v) for k, v in per_k.items()}
    out.update({f"c{c}": statistics.mean(v) for c, v in per_cat.items()})
    return out, per_conv


def gain(base: PerQuestion, new: PerQuestion, draws: int = 2000) -> str:
    """Gains over ``base``: recall@10's 95% interval of a paired bootstrap over questions, the conversations
    whose recall@10 rose and fell, and recall@5's interval."""
    def interval(k: int) -> str:
        diff = np.concatenate([np.subtract(new[k][c], base[k][c]) for c in sorted(base[k])])
        rng = np.random.default_rng(0)
        means = diff[rng.integers(0, len(diff), size=(draws, len(diff)))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        return f"{diff.mean():+.3f} [{low:+.3f}, {high:+.3f}]"

    up = sum(statistics.mean(new[10][c]) > statistics.mean(base[10][c]) for c in base[10])
    down = sum(statistics.mean(new[10][c]) < statistics.mean(base[10][c]) for c in base[10])
    return f"{interval(10)} | {up} up, {down} down | {interval(5)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pools", type=Path, help="pools pickled by retrieval_locomo.py --fit --dump-pools")
    parser.add_argument("--only", action="append", metavar="WORDS", help="only the rankings whose name has WORDS")
    parser.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                        help="gains against the written ranking on FILE's pools (the same questions, other code)")
    args = parser.parse_args()
    with args.pools.open("rb") as f:
        questions: list[Question] = pickle.load(f)
    print(f"{len(questions)} questions, {len({q.conversation for q in questions})} conversations, "
          f"{sum(int(q.is_turn.sum()) for q in questions)} candidate turns; held out by conversation\n")
    names = " | ".join(f"{c} {name}" for c, name in CATEGORIES.items())
    print(f"| ranking | recall@5 | recall@10 | recall@20 | {names} | r@10 gain [95%] | conversations | "
          "r@5 gain [95%] | fit s |")
    print("|---|---:|---:|---:|" + "---:|" * len(CATEGORIES) + "---:|---|---:|---:|")
    base: PerQuestion | None = None
    if args.baseline is not None:
        with args.baseline.open("rb") as f:
            before: list[Question] = pickle.load(f)
        if [(q.conversation, q.evidence) for q in before] != [(q.conversation, q.evidence) for q in questions]:
            raise SystemExit(f"{args.baseline}: not the same questions in the same order")
        was, base = held_out(before, shipped)
        cells = " | ".join(f"{was[f'r@{k}']:.3f}" for k in KS)
        cats = " | ".join(f"{was.get(f'c{c}', float('nan')):.3f}" for c in CATEGORIES)
        print(f"| {SHIPPED}, on {args.baseline.name} (the baseline) | {cells} | {cats} | | | | |", flush=True)
    for name, fit in RANKINGS.items():
        if args.only and not any(w in name for w in args.only):
            continue
        t0 = time.perf_counter()
        f, per_conv = held_out(questions, fit)
        base = base or per_conv
        cells = " | ".join(f"{f[f'r@{k}']:.3f}" for k in KS)
        cats = " | ".join(f"{f.get(f'c{c}', float('nan')):.3f}" for c in CATEGORIES)
        print(f"| {name} | {cells} | {cats} | {gain(base, per_conv)} | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
