"""Fitting the fitted ranking (``service/fitted_rank.py``): two logistic regressions (numpy) and the trees.

Used by ``retrieval_locomo.py --fit``. A question's pool is its candidates'
feature rows, who is next to whom, each candidate's turn (None: not a turn)
and whether it is evidence. The first model is fitted on every candidate turn of
the training questions, the second on the same rows with the first model's
neighbour support; cross-validation holds out one conversation at a time, so
a held-out figure never saw a weight fitted on its own conversation.

The trees (``fit_trees``, LightGBM's lambdarank, a bench dependency only) are
fitted on the same rows with the first logistic regression's neighbour inputs
(``fitted_rank.tree_inputs``), each question a group, and exported as plain
node tuples that ``fitted_rank.Trees`` evaluates with numpy.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemonet.service.fitted_rank import Node, Trees, neighbour_features, point_scores, tree_inputs

# L2 penalty on the weights (not the bias): keeps a feature that seldom fires from taking a huge weight.
L2 = 1.0
NEWTON_STEPS = 30
# The trees, shallow and few so that scoring ~250 candidates stays cheap at query time; set before any figure was
# seen (bench/README.md "Tree ranker"), never searched on the held-out figures.
TREES: dict[str, Any] = {
    "num_iterations": 200, "learning_rate": 0.05, "num_leaves": 8, "max_depth": 3, "min_data_in_leaf": 200,
    "lambda_l2": 1.0, "num_threads": 2, "seed": 0, "deterministic": True, "force_row_wise": True, "verbosity": -1,
}


@dataclass
class Question:
    """One question's pool, ready to fit on and to score."""

    conversation: str
    category: int
    evidence: set[str]
    features: np.ndarray
    near: list[list[tuple[int, int]]]
    turns: list[str | None]  # each candidate's turn (dia_id), None for what is not a turn
    labels: np.ndarray  # 1.0 where the candidate is an evidence turn

    @property
    def is_turn(self) -> np.ndarray:
        return np.array([t is not None for t in self.turns])


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> np.ndarray:
    """Weights then bias of an L2-regularised logistic regression, by Newton's method."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.r_[np.full(x.shape[1], l2), 0.0]
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -50, 50)))
        gradient = xb.T @ (p - y) + penalty * w
        hessian = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty)
        w -= np.linalg.solve(hessian, gradient)
    return w


def fit_two_stage(questions: Sequence[Question], drop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(point weights, neighbour weights) fitted on ``questions``' turns; ``drop``: a feature left out (weight 0)."""
    def cols(q: Question) -> np.ndarray:
        x = q.features.copy()
        if drop is not None:
            x[:, drop] = 0.0
        return x

    y = np.concatenate([q.labels[q.is_turn] for q in questions])
    point = fit_logistic(np.vstack([cols(q)[q.is_turn] for q in questions]), y)
    if drop is not None:
        point[drop] = 0.0
    second = [neighbour_features(point_scores(cols(q), point), q.near)[q.is_turn] for q in questions]
    neighbour = fit_logistic(np.vstack(second), y)
    return point, neighbour


def recall_of(q: Question, point: np.ndarray, neighbour: np.ndarray, k: int) -> float:
    """Share of ``q``'s evidence turns in the first ``k`` of its pool as the two models rank it."""
    scores = point_scores(neighbour_features(point_scores(q.features, point), q.near), neighbour)
    order = np.argsort(-scores, kind="stable")[:k]
    return len(q.evidence & {q.turns[i] for i in order}) / len(q.evidence)


@dataclass
class Figures:
    """recall@k over questions and recall@10 per category."""

    recall: dict[int, float]
    by_category: dict[int, float]


def figures(scored: Sequence[tuple[Question, np.ndarray, np.ndarray]], ks: Sequence[int]) -> Figures:
    recall = {k: statistics.mean(recall_of(q, p, n, k) for q, p, n in scored) for k in ks}
    per: dict[int, list[float]] = defaultdict(list)
    for q, p, n in scored:
        per[q.category].append(recall_of(q, p, n, 10))
    return Figures(recall, {c: statistics.mean(v) for c, v in sorted(per.items())})


def held_out(questions: Sequence[Question], ks: Sequence[int], drop: int | None = None) -> Figures:
    """Each conversation's questions ranked by weights fitted on the other conversations only."""
    scored = []
    for held in sorted({q.conversation for q in questions}):
        point, neighbour = fit_two_stage([q for q in questions if q.conversation != held], drop)
        scored += [(q, point, neighbour) for q in questions if q.conversation == held]
    return figures(scored, ks)


def in_sample(questions: Sequence[Question], ks: Sequence[int]) -> tuple[Figures, np.ndarray, np.ndarray]:
    """Weights fitted on every question, and the figures they give on those same questions."""
    point, neighbour = fit_two_stage(questions)
    return figures([(q, point, neighbour) for q in questions], ks), point, neighbour


@dataclass
class TreeModel:
    """Fitted trees as ``rank_weights`` holds them: the first logistic regression whose neighbour inputs they read,
    their nodes, depth, and (scale, bias) mapping their sum to log-odds."""

    point: np.ndarray
    nodes: list[list[Node]]
    depth: int
    calibration: tuple[float, float]

    def scores(self, q: Question) -> np.ndarray:
        trees = Trees.of(self.nodes, self.depth)
        return trees(tree_inputs(q.features, q.near, self.point)) * self.calibration[0] + self.calibration[1]


def export(booster: Any) -> tuple[list[list[Node]], int]:
    """LightGBM's trees as node tuples (root first, leaves pointing to themselves) and the deepest one's depth."""
    trees, deepest = [], 0
    for info in booster.dump_model()["tree_info"]:
        nodes: list[Node] = []
        deepest = max(deepest, _walk(info["tree_structure"], nodes, 0))
        trees.append(nodes)
    return trees, deepest


def _walk(node: dict[str, Any], nodes: list[Node], level: int) -> int:
    """Append ``node``'s subtree to ``nodes`` (itself first); returns the deepest leaf's level."""
    at = len(nodes)
    if "leaf_value" in node:
        nodes.append((0, 0.0, at, at, float(node["leaf_value"])))
        return level
    if node["decision_type"] != "<=" or node["missing_type"] != "None":
        raise ValueError(f"a split fitted_rank.Trees cannot evaluate: {node['decision_type']}, "
                         f"missing {node['missing_type']}")
    nodes.append((int(node["split_feature"]), float(node["threshold"]), 0, 0, 0.0))
    left = len(nodes)
    deepest = _walk(node["left_child"], nodes, level + 1)
    right = len(nodes)
    deepest = max(deepest, _walk(node["right_child"], nodes, level + 1))
    nodes[at] = (nodes[at][0], nodes[at][1], left, right, 0.0)
    return deepest


def fit_trees(questions: Sequence[Question]) -> TreeModel:
    """Lambdarank trees over ``tree_inputs`` of every candidate turn, each question a group; their sum calibrated
    to log-odds by a one-feature logistic regression on the same rows (the order is the trees')."""
    import lightgbm as lgb

    # Rounded as rank_weights holds them, so that query time reads the very inputs the trees were fitted on.
    point = np.round(fit_two_stage(questions)[0], 4)
    x = np.vstack([tree_inputs(q.features, q.near, point)[q.is_turn] for q in questions])
    y = np.concatenate([q.labels[q.is_turn] for q in questions])
    booster = lgb.train({"objective": "lambdarank", **TREES},
                        lgb.Dataset(x, y.astype(int), group=[int(q.is_turn.sum()) for q in questions]))
    nodes, depth = export(booster)
    raw = Trees.of(nodes, depth)(x)
    if not np.allclose(raw, booster.predict(x, raw_score=True), rtol=0, atol=1e-9):
        raise AssertionError("the exported trees do not score as LightGBM's do")
    scale, bias = fit_logistic(raw[:, None], y, l2=0.0)
    return TreeModel(point, nodes, depth, (float(scale), float(bias)))


def trees_held_out(questions: Sequence[Question], ks: Sequence[int]) -> Figures:
    """Each conversation's questions ranked by trees fitted on the other conversations only."""
    scored = []
    for held in sorted({q.conversation for q in questions}):
        model = fit_trees([q for q in questions if q.conversation != held])
        scored += [(q, model.scores(q)) for q in questions if q.conversation == held]
    return figures_of(scored, ks)


def figures_of(scored: Sequence[tuple[Question, np.ndarray]], ks: Sequence[int]) -> Figures:
    """recall@k and recall@10 per category of questions each with its candidates' scores."""
    def at(q: Question, scores: np.ndarray, k: int) -> float:
        order = np.argsort(-scores, kind="stable")[:k]
        return len(q.evidence & {q.turns[i] for i in order}) / len(q.evidence)

    recall = {k: statistics.mean(at(q, s, k) for q, s in scored) for k in ks}
    per: dict[int, list[float]] = defaultdict(list)
    for q, s in scored:
        per[q.category].append(at(q, s, 10))
    return Figures(recall, {c: statistics.mean(v) for c, v in sorted(per.items())})
