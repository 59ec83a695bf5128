"""Fitting the fitted ranking's two logistic regressions (``service/fitted_rank.py``), with numpy alone.

Used by ``retrieval_locomo.py --fit``. A question's pool is its candidates'
feature rows, who is next to whom, each candidate's turn (None: not a turn)
and whether it is evidence. The first model is fitted on every candidate turn of
the training questions, the second on the same rows with the first model's
neighbour support; cross-validation holds out one conversation at a time, so
a held-out figure never saw a weight fitted on its own conversation.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemonet.service.fitted_rank import neighbour_features, point_scores

# L2 penalty on the weights (not the bias): keeps a feature that seldom fires from taking a huge weight.
L2 = 1.0
NEWTON_STEPS = 30


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
