"""The fitted ranking of hybrid+graph search: candidates that connect turns, scored by one explained model.

**Candidates.** The k-NN and keyword lists (each ``search_candidates`` x
``hybrid_candidate_factor`` long, unfused); statements found by keyword fold
into the observation they were extracted from; the session window of each
of the ``search_window_seeds`` strongest (``search_window_turns`` turns on
each side, ``session_windows``) joins with each row's similarity to the query; items sharing a non-hub
concept with the top hits (the graph's MENTIONS and ABOUT edges) join.

**Features** (``FEATURES``), per candidate: its dense similarity and rank,
its own and its statements' BM25 and rank, whether its speaker is named in
the question (or another speaker is), its neighbours' similarity and BM25
(one and two turns away), how many of the strongest hits share its session,
how close its day is to a date the question names (``rank_time``), whether
it states a time (and whether the question asks when), its length,
whether the concept step reached it, and its similarity to the query
without the names of the sources it names (the query's own if it names none).

**Model** (``search_ranking``). 'logistic': two logistic regressions; the
first scores each candidate alone, the second adds support from its
neighbours' first scores (1, 2 and 3 turns away), so a reply next to a strong
hit rises. 'fitted' (the default): a small ensemble of shallow regression
trees (lambdarank: each question's candidates ranked against each other) over
the features and the second regression's neighbour inputs, its sum mapped to
a probability by a one-feature logistic regression; evaluated here with
numpy from plain arrays. Everything is fitted across LoCoMo conversations by
``bench/retrieval_locomo.py --fit`` (held out by conversation;
``rank_weights``), never by hand.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import overload

import numpy as np

import mnemonet.service.rank_time as rank_time
from mnemonet.model.views import ObservationView, SearchHit
from mnemonet.service.graph_rank import Ranking
from mnemonet.service.rank_weights import (
    NEIGHBOUR_WEIGHTS,
    POINT_WEIGHTS,
    TREE_CALIBRATION,
    TREE_DEPTH,
    TREE_NODES,
)
from mnemonet.settings import Settings
from mnemonet.store.graph import GraphStore
from mnemonet.store.vector_context import WindowRow, session_windows
from mnemonet.store.vector_types import VectorHit, tie_order
from mnemonet.store.vectors import VectorStore

_SINGLE: tuple[str, ...] = (
    "dense", "dense_rank", "keyword", "statement_keyword", "keyword_rank", "speaker_named", "other_speaker_named",
    "neighbour_dense_1", "neighbour_dense_2", "neighbour_keyword_1", "neighbour_keyword_2", "session_support",
    "date_match", "states_time", "asks_when_states_time", "length", "concept_hop", "unnamed_dense",
)
# Every product of two of these, squares too: a curve where one weight gave a line. Held out by conversation
# recall@10 rose 0.767 -> 0.781, nearly all of it from keyword squared (a strong BM25 match counts for more
# than its share), session support squared (its value levels off) and their product; the dense products
# changed nothing measurable (bench/README.md, "Products of features").
_CROSSED: tuple[str, ...] = ("dense", "keyword", "session_support")
_PRODUCTS: tuple[tuple[int, int], ...] = tuple(
    (_SINGLE.index(a), _SINGLE.index(b)) for n, a in enumerate(_CROSSED) for b in _CROSSED[n:])
FEATURES: tuple[str, ...] = _SINGLE + tuple(f"{_SINGLE[a]}_x_{_SINGLE[b]}" for a, b in _PRODUCTS)
NEIGHBOUR_FEATURES: tuple[str, ...] = (
    "own", "best_1_away", "best_2_away", "best_3_away",
    "own_exp", "best_1_away_exp", "best_2_away_exp", "best_3_away_exp",
)
# Rank features are 1/(_RANK_K + rank), as reciprocal rank fusion weighs ranks (rrf_k's default).
_RANK_K = 10
# How many of the strongest hits (by fused rank) vote for their sessions (session_support).
_SUPPORT_HITS = 10
# Days over which date_match falls to 1/e of its value inside the date the question names.
_DATE_SCALE_DAYS = 14.0
# A log-odds below the best one by more than this counts as no support at all.
_FLOOR = -20.0
_WORD = re.compile(r"\w+")


# Statement id -> the observation it was extracted from, or None (a claim or an inference).
Origins = dict[str, ObservationView | None]


def named_sources(query: str, rows: Iterable[VectorHit]) -> set[str]:
    """The sources of ``rows`` whose every word is a word of ``query`` (a speaker the question names)."""
    words = set(_WORD.findall(query.lower()))
    return {src for src in {_source(r) for r in rows} if src and set(_WORD.findall(src.lower())) <= words}


def without_names(query: str, names: Iterable[str]) -> str | None:
    """``query`` with every word of ``names`` (and a possessive 's) taken out; None if nothing, or nothing
    else, is left to embed. Every turn is embedded under its speaker's name, so a name in the query pulls
    the vector towards every turn by or to that person: on LoCoMo's questions the k-NN list of the query
    without the names holds the evidence turns far more often (vector recall@10 0.548 -> 0.638, nothing
    fitted; bench/README.md "Round 16")."""
    words = sorted({w for name in names for w in _WORD.findall(name)}, key=len, reverse=True)
    if not words:
        return None
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")(?:['’]s)?\b", re.IGNORECASE)
    stripped = " ".join(pattern.sub(" ", query).split())
    return stripped if stripped != " ".join(query.split()) and _WORD.search(stripped) else None


@dataclass
class _Item:
    """One candidate while the pool is built."""

    row: VectorHit
    dense_rank: int | None = None
    keyword_rank: int | None = None
    similarity: float | None = None
    unnamed_similarity: float | None = None  # to the query without the sources it names (pool's ``unnamed``)
    keyword: float = 0.0
    statement_keyword: float = 0.0
    statement_rank: int | None = None  # the best keyword rank of the statements folded into it
    concept_hop: bool = False
    path: str | None = None


@dataclass
class Pool:
    """The candidates of one query, their feature rows (``FEATURES`` order) and who is next to whom."""

    items: list[_Item]
    features: np.ndarray
    # Per candidate index: (other index, turns apart) for candidates 1-3 turns away in one session.
    near: list[list[tuple[int, int]]]
    folded: list[SearchHit] = field(default_factory=list)

    def ids(self) -> list[str]:
        """The candidates' ids, in pool order."""
        return [it.row.id for it in self.items]


def point_scores(features: np.ndarray, weights: Sequence[float] | np.ndarray) -> np.ndarray:
    """The first model's log-odds per candidate: ``weights`` are one per feature, then the bias."""
    w = np.asarray(weights, dtype=np.float64)
    return features @ w[:-1] + w[-1]


def neighbour_features(first: np.ndarray, near: list[list[tuple[int, int]]]) -> np.ndarray:
    """The second model's inputs: each candidate's first score and its best neighbour's at 1, 2 and 3 turns,
    as log-odds below the pool's best (floored), and the same as odds ratios."""
    top = float(first.max()) if len(first) else 0.0
    rows = np.full((len(first), 4), _FLOOR)
    rows[:, 0] = first - top
    for i, pairs in enumerate(near):
        for j, apart in pairs:
            rows[i, apart] = max(rows[i, apart], first[j] - top)
    rows = np.maximum(rows, _FLOOR)
    return np.hstack([rows, np.exp(rows)])


def final_scores(pool: Pool, point: Sequence[float] | np.ndarray = POINT_WEIGHTS,
                 neighbour: Sequence[float] | np.ndarray = NEIGHBOUR_WEIGHTS) -> np.ndarray:
    """The two logistic regressions' log-odds that each candidate is what the question asks for."""
    first = point_scores(pool.features, point)
    return point_scores(neighbour_features(first, pool.near), neighbour)


def tree_inputs(features: np.ndarray, near: list[list[tuple[int, int]]],
                point: Sequence[float] | np.ndarray = POINT_WEIGHTS) -> np.ndarray:
    """The trees' input rows: ``FEATURES``, then ``NEIGHBOUR_FEATURES`` of the first logistic regression."""
    return np.hstack([features, neighbour_features(point_scores(features, point), near)])


# One node of a regression tree: (feature, threshold, left, right, value). A row goes left when its feature is at
# most the threshold; a leaf points to itself on both sides and holds the value (its feature and threshold unused).
Node = tuple[int, float, int, int, float]


@dataclass(frozen=True)
class Trees:
    """A sum of regression trees as flat node arrays (tree after tree, children as indices into them), evaluated
    for all rows and trees at once: ``depth`` steps of one-dimensional ``take`` (3x faster than indexing
    trees x nodes arrays: ~1 ms for 200 trees over 250 candidates)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int

    @classmethod
    def of(cls, trees: Sequence[Sequence[Node]], depth: int) -> Trees:
        """From one tuple of nodes per tree (the root first, children numbered within the tree), as
        ``rank_weights`` holds them."""
        starts = np.cumsum([0, *(len(t) for t in trees)])[:-1].astype(np.intp)
        nodes = [(f, th, a + start, b + start, v) for t, start in zip(trees, starts.tolist(), strict=True)
                 for f, th, a, b, v in t]
        columns = [np.array([node[c] for node in nodes]) for c in range(5)]
        return cls(columns[0].astype(np.intp), columns[1].astype(np.float64), columns[2].astype(np.intp),
                   columns[3].astype(np.intp), columns[4].astype(np.float64), starts, depth)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Each row's sum over the trees."""
        n, width = x.shape
        if n == 0 or not len(self.roots):
            return np.zeros(n)
        at = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        cells = (np.arange(n, dtype=np.intp) * width)[:, None]
        flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
        for _ in range(self.depth):
            left = flat.take(cells + self.feature.take(at)) <= self.threshold.take(at)
            at = np.where(left, self.left.take(at), self.right.take(at))
        return np.asarray(self.value.take(at).sum(axis=1))


TREES = Trees.of(TREE_NODES, TREE_DEPTH)


def tree_scores(pool: Pool, trees: Trees = TREES,
                calibration: Sequence[float] = TREE_CALIBRATION) -> np.ndarray:
    """The trees' log-odds that each candidate is what the question asks for (their sum, calibrated)."""
    raw = trees(tree_inputs(pool.features, pool.near))
    return raw * calibration[0] + calibration[1]


class FittedRanker:
    """Builds the candidate pool of a query and ranks it with the fitted model (module docstring)."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, settings: Settings) -> None:
        self.graph = graph
        self.vectors = vectors
        self.settings = settings

    def rank(self, pool: Pool) -> Ranking:
        """Hits best first (scores in (0, 1)), and the statements folded into their observations after them.

        Scored by the trees, or by the two logistic regressions when ``search_ranking`` is 'logistic'.
        """
        if not pool.items:
            return Ranking([], pool.folded)
        logistic = self.settings.search_ranking == "logistic"
        scores = (final_scores(pool) if logistic else tree_scores(pool)).tolist()
        items = pool.items
        order = sorted(range(len(items)), key=lambda i: (-scores[i], *tie_order(
            items[i].dense_rank, items[i].keyword_rank, items[i].row.created_at, items[i].row.id)))
        return Ranking(_RankedHits(items, scores, order), pool.folded)

    async def pool(
        self, query: str, vector: Sequence[float], dense: list[VectorHit], lexical: list[VectorHit],
        kinds: Sequence[str] | None, since: int | None, origins: Origins | None = None,
        unnamed: Sequence[float] | None = None,
    ) -> Pool:
        """The candidates with their features (what ``rank`` scores; the bench fits the model on it).

        ``origins``: what ``origins`` returned for some of the hits, read already (the rest are read here).
        ``unnamed``: the query without the sources it names (``without_names``), embedded: every candidate's
        similarity to it is a feature (without it, the similarity to the query stands in).
        """
        s = self.settings
        items: dict[str, _Item] = {}
        for rank, hit in enumerate(dense, 1):
            items[hit.id] = _Item(hit, dense_rank=rank, similarity=float(hit.score))
        for rank, hit in enumerate(lexical, 1):
            item = items.setdefault(hit.id, _Item(hit))
            item.keyword_rank, item.keyword = rank, float(hit.score)
        observations_allowed = kinds is None or "observation" in kinds
        folded = await self._lift(items, origins or {}) if observations_allowed else []
        # Every step below takes a prefix of one order: the candidates added after this have no rank.
        strongest = _strongest(items.values(), max(s.search_expansion_seeds, s.search_window_seeds, _SUPPORT_HITS))
        seeds = strongest[:s.search_expansion_seeds]
        window_seeds = [it.row.id for it in strongest[:s.search_window_seeds]]
        windows, reached = await asyncio.gather(
            session_windows(self.vectors, list(items), window_seeds, s.search_session_key,
                            s.search_window_turns if observations_allowed else 0,
                            int(s.search_session_span * 1000), vector, unnamed),
            self._concept_hop(seeds, kinds, since, set(items) | {h.id for h in folded}),
        )
        near_pairs = self._join_windows(items, windows, since)
        for row, vec, path in reached:
            if row.id not in items:
                items[row.id] = _Item(row, similarity=_cosine(vec, vector), path=path,
                                      unnamed_similarity=None if unnamed is None else _cosine(vec, unnamed))
            items[row.id].concept_hop = True
        listed = list(items.values())
        if unnamed is None:
            for it in listed:
                it.unnamed_similarity = it.similarity
        index = {it.row.id: i for i, it in enumerate(listed)}
        near: list[list[tuple[int, int]]] = [[] for _ in listed]
        for (a, b), apart in near_pairs.items():
            if a in index and b in index:
                near[index[a]].append((index[b], apart))
        features = self._features(query, listed, near, strongest[:_SUPPORT_HITS])
        return Pool(listed, features, near, folded)

    async def origins(self, hits: Sequence[VectorHit]) -> Origins:
        """For each statement among ``hits``, the observation it was extracted from (None: a claim or an
        inference), as folding reads them: search reads the keyword list's while the query is embedded."""
        ids = [h.id for h in hits if h.kind == "statement"]
        found = await self.graph.extracted_from(ids) if ids else {}
        return {i: found.get(i) for i in ids}

    async def _lift(self, items: dict[str, _Item], known: Origins) -> list[SearchHit]:
        """Fold statements into the observation they were extracted from; returns the folded statements.

        The observation takes the statement's keyword score as ``statement_keyword`` (its best one).
        ``known``: the origins of some statements, read already.
        """
        statements = [it for it in items.values() if it.row.kind == "statement"]
        if not statements:
            return []
        missing = [it.row for it in statements if it.row.id not in known]
        origins = {**known, **await self.origins(missing)} if missing else known
        folded: list[SearchHit] = []
        for it in statements:
            obs = origins.get(it.row.id)
            if obs is None:  # a claim or an inference: a hit of its own
                continue
            path = f"{it.row.id} -DERIVED_FROM-> {obs.id}"
            target = items.get(obs.id)
            if target is None:
                text = f"{obs.source}: {obs.text}" if obs.source else obs.text  # as observations are indexed
                row = VectorHit(id=obs.id, kind="observation", text=text, score=0.0, vector_rank=None,
                                keyword_rank=None, created_at=obs.created_at,
                                metadata={"source": obs.source or "", **obs.metadata})
                target = items[obs.id] = _Item(row, path=path)
            target.statement_keyword = max(target.statement_keyword, it.keyword)
            if it.keyword_rank is not None:
                target.statement_rank = min(target.statement_rank or it.keyword_rank, it.keyword_rank)
            del items[it.row.id]
            # Behind every hit (resolution keeps tiers apart), in the keyword list's order among themselves.
            folded.append(_hit(it, 1.0 / (_RANK_K + (it.keyword_rank or 10**6)), path))
        return folded

    def _join_windows(
        self, items: dict[str, _Item], windows: list[WindowRow], since: int | None
    ) -> dict[tuple[str, str], int]:
        """Set each candidate's similarity, add window rows as candidates, return who is 1-3 turns from whom."""
        by_seed: dict[str, list[WindowRow]] = defaultdict(list)
        for w in windows:
            if w.offset == 0:
                items[w.seed].similarity = w.similarity
                items[w.seed].unnamed_similarity = w.unnamed_similarity
            elif since is None or w.row.created_at >= since:
                by_seed[w.seed].append(w)
        near: dict[tuple[str, str], int] = {}
        for seed, rows in by_seed.items():
            placed = [(0, seed), *((w.offset, w.row.id) for w in rows)]
            for w in rows:
                if w.row.id not in items:
                    items[w.row.id] = _Item(w.row, similarity=w.similarity, unnamed_similarity=w.unnamed_similarity,
                                            path=f"{seed} -NEXT_IN_SESSION- {w.row.id}")
            for offset_a, a in placed:
                for offset_b, b in placed:
                    apart = abs(offset_a - offset_b)
                    if 1 <= apart <= 3:
                        near[(a, b)] = min(apart, near.get((a, b), apart))
        return near

    async def _concept_hop(
        self, seeds: list[_Item], kinds: Sequence[str] | None, since: int | None, skip: set[str]
    ) -> list[tuple[VectorHit, np.ndarray | None, str]]:
        """Items sharing a non-hub concept with a seed: (row, its vector, graph path from the seed)."""
        s = self.settings
        if s.search_concept_expansion <= 0 or not seeds:
            return []
        rows = await self.graph.shared_concept_neighbours(
            [it.row.id for it in seeds], s.search_hub_degree, s.search_concept_expansion, s.search_seed_concepts
        )
        rows = [r for r in rows if (kinds is None or r["kind"] in kinds) and r["id"] not in skip]
        if not rows:
            return []
        stored = {v.id: v for v in await self.vectors.get(sorted({r["id"] for r in rows}))}
        out = []
        for r in rows:
            item = stored.get(r["id"])
            if item is None or (since is not None and item.created_at < since):
                continue
            row = VectorHit(id=item.id, kind=item.kind, text=item.text, score=0.0, vector_rank=None,
                            keyword_rank=None, created_at=item.created_at, metadata=item.metadata)
            rel = "MENTIONS" if r["kind"] == "observation" else "ABOUT"
            vec = None if item.vector is None else np.asarray(item.vector, dtype=np.float64)
            out.append((row, vec, f"{r['seed']} -> ({r['concept']}) <-{rel}- {r['id']}"))
        return out

    def _features(
        self, query: str, items: list[_Item], near: list[list[tuple[int, int]]], strongest: list[_Item]
    ) -> np.ndarray:
        """One row of ``FEATURES`` per candidate; ``strongest`` are the ``_SUPPORT_HITS`` strongest of them.

        Built column by column in Python lists and copied into the array once: writing the array element by
        element took most of this step's time (bench/README.md "Search latency, round 14").
        """
        s = self.settings
        n = len(items)
        if n == 0:
            return np.zeros((0, len(FEATURES)))
        dense = _relative([it.similarity for it in items])
        best_kw = max([it.keyword for it in items] + [it.statement_keyword for it in items] + [1e-9])
        keyword = [it.keyword / best_kw for it in items]
        sources = [_source(it.row) for it in items]
        named = named_sources(query, (it.row for it in items))
        key = s.search_session_key
        sessions = [(it.row.metadata or {}).get(key) for it in items]
        support: dict[object, int] = defaultdict(int)
        for it in strongest:
            session = (it.row.metadata or {}).get(key)
            if session is not None:
                support[session] += 1
        span = rank_time.question_span(query, date.today())
        asks_when = rank_time.asks_when(query)
        columns: list[list[float]] = [dense, [], keyword, *([] for _ in range(len(_SINGLE) - 3))]
        (_, dense_rank, _, statement_keyword, keyword_rank, speaker_named, other_named, dense_1, dense_2,
         keyword_1, keyword_2, session_support, date_match, states_time, asks_when_told, length,
         concept_hop, unnamed_dense) = columns
        unnamed_dense += _relative([it.unnamed_similarity for it in items])
        for i, it in enumerate(items):
            dense_rank.append(1.0 / (_RANK_K + it.dense_rank) if it.dense_rank else 0.0)
            statement_keyword.append(it.statement_keyword / best_kw)
            keyword_rank.append(1.0 / (_RANK_K + it.keyword_rank) if it.keyword_rank else 0.0)
            is_named = sources[i] in named
            speaker_named.append(float(is_named))
            other_named.append(float(bool(named) and not is_named))
            # The best neighbour 1 turn away, and 1 or 2 turns away (None: none).
            d1 = d2 = k1 = k2 = None
            for j, apart in near[i]:
                if apart == 1:
                    d1 = dense[j] if d1 is None else max(d1, dense[j])
                    k1 = keyword[j] if k1 is None else max(k1, keyword[j])
                if apart <= 2:
                    d2 = dense[j] if d2 is None else max(d2, dense[j])
                    k2 = keyword[j] if k2 is None else max(k2, keyword[j])
            dense_1.append(-1.0 if d1 is None else d1)
            dense_2.append(-1.0 if d2 is None else d2)
            keyword_1.append(0.0 if k1 is None else k1)
            keyword_2.append(0.0 if k2 is None else k2)
            session_support.append(support[sessions[i]] / _SUPPORT_HITS if sessions[i] is not None else 0.0)
            date_match.append(0.0 if span is None else
                              math.exp(-rank_time.days_apart(self._day(it.row), span) / _DATE_SCALE_DAYS))
            told = rank_time.states_time(it.row.text)
            states_time.append(float(told))
            asks_when_told.append(float(told and asks_when))
            length.append(math.log(max(len(it.row.text), 1)) / 6.0)
            concept_hop.append(float(it.concept_hop))
        x = np.zeros((n, len(FEATURES)))
        x[:, :len(_SINGLE)] = np.array(columns).T
        for k, (a, b) in enumerate(_PRODUCTS, len(_SINGLE)):
            x[:, k] = x[:, a] * x[:, b]
        return x

    def _day(self, row: VectorHit) -> date:
        """When a candidate was said: its metadata date under ``search_time_key``, else when it was recorded."""
        key = self.settings.search_time_key
        value = (row.metadata or {}).get(key) if key else None
        said = rank_time.said_on(value) if isinstance(value, str) and value else None
        return said or rank_time.recorded_on(row.created_at)


class _RankedHits(Sequence[SearchHit]):
    """The ranked candidates as hits, each made when read: resolution reads about k of a pool of hundreds, and
    making them all was most of the ranking's time (bench/README.md "Search latency, round 14")."""

    def __init__(self, items: list[_Item], scores: list[float], order: list[int]) -> None:
        self._items, self._scores, self._order = items, scores, order

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, at: int) -> SearchHit: ...

    @overload
    def __getitem__(self, at: slice) -> _RankedHits: ...

    def __getitem__(self, at: int | slice) -> SearchHit | _RankedHits:
        if isinstance(at, slice):
            return _RankedHits(self._items, self._scores, self._order[at])
        i = self._order[at]
        return _hit(self._items[i], _probability(self._scores[i]))


def _strongest(items: Iterable[_Item], n: int) -> list[_Item]:
    """The ``n`` candidates the two lists rank highest together (reciprocal rank fusion)."""
    def fused(it: _Item) -> float:
        return sum(1.0 / (_RANK_K + r) for r in (it.dense_rank, it.keyword_rank, it.statement_rank) if r)

    listed = [it for it in items if fused(it) > 0]
    return sorted(listed, key=lambda it: (-fused(it), *tie_order(
        it.dense_rank, it.keyword_rank, it.row.created_at, it.row.id)))[:n]


def _relative(similarities: list[float | None]) -> list[float]:
    """Each similarity less the pool's best (none: the pool's worst), as the dense features are."""
    known = [v for v in similarities if v is not None]
    best, worst = (max(known), min(known)) if known else (0.0, 0.0)
    return [(v if v is not None else worst) - best for v in similarities]


def _cosine(vec: np.ndarray | None, query: Sequence[float]) -> float | None:
    if vec is None:
        return None
    q = np.asarray(query, dtype=np.float64)
    return float(np.dot(vec, q) / (np.linalg.norm(vec) * np.linalg.norm(q) or 1.0))


def _source(row: VectorHit) -> str | None:
    value = (row.metadata or {}).get("source")
    return value if isinstance(value, str) and value else None


def _probability(log_odds: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(log_odds, 700.0), -700.0)))


def _hit(item: _Item, score: float, path: str | None = None) -> SearchHit:
    return SearchHit(id=item.row.id, kind=item.row.kind, text=item.row.text, score=score,
                     vector_rank=item.dense_rank, keyword_rank=item.keyword_rank, graph_path=path or item.path)
