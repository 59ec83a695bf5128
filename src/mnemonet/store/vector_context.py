"""Conversational context from the vector rows: the observations recorded just before and after others in a session.

Observations carry their session (any metadata key the caller names) and
their time in the vector rows, so "the turn before and after this one" is an
index walk over ``(kind, created_at)`` bounded by a time span, filtered to
the same session. Search joins adjacent turns (``session_neighbours``) or
reads whole windows around its candidates with their similarity to the
query (``session_windows``); indexing embeds a turn with the turns before it
(``preceding_turns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgvector import Vector

from mnemonet.model.errors import InvalidInput
from mnemonet.store.vector_types import VectorHit, quote_schema
from mnemonet.store.vectors import VectorStore

_MAX_TURNS = 20
_MAX_SEEDS = 100
_MAX_CONTEXT_SEEDS = 10_000
_MAX_WINDOW_SEEDS = 1000


@dataclass(frozen=True)
class WindowRow:
    """A row of a seed's window: ``offset`` turns after the seed (negative: before; 0: the seed itself).

    ``similarity`` is the cosine similarity of the row's vector to the query (None: no vector);
    ``unnamed_similarity`` its similarity to a second query vector, if one was given.
    """

    seed: str
    offset: int
    row: VectorHit
    similarity: float | None
    unnamed_similarity: float | None = None


async def session_neighbours(
    store: VectorStore, ids: Sequence[str], key: str, turns: int, span_ms: int
) -> list[tuple[str, VectorHit]]:
    """(seed id, neighbour) pairs: up to ``turns`` observations on each side of each seed in its session.

    A seed is an observation whose metadata has ``key``; neighbours share
    that value and were recorded within ``span_ms`` of the seed, nearest first.
    """
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) or len(ids) > _MAX_SEEDS:
        raise InvalidInput(f"ids: expected a list of at most {_MAX_SEEDS} ids")
    _check_walk(key, turns, span_ms)
    if not ids or turns == 0:
        return []
    q = quote_schema(store.schema)
    side = """(SELECT x.id, x.kind, x.text, x.created_at, x.metadata FROM {q}.embeddings x
               WHERE x.kind = 'observation' AND x.metadata ->> $2 = s.metadata ->> $2
                 AND x.created_at {op} s.created_at AND x.created_at {bound}
               ORDER BY x.created_at {order}, x.id LIMIT $3)"""
    before = side.format(q=q, op="<", bound=">= s.created_at - $4", order="DESC")
    after = side.format(q=q, op=">", bound="<= s.created_at + $4", order="ASC")
    sql = f"""SELECT s.id AS seed, n.* FROM {q}.embeddings s
              CROSS JOIN LATERAL ({before} UNION ALL {after}) n
              WHERE s.id = ANY($1::text[]) AND s.kind = 'observation' AND s.metadata ? $2"""
    async with store.acquire() as conn:
        rows = await conn.fetch(sql, list(ids), key, turns, span_ms)
    return [
        (
            r["seed"],
            VectorHit(
                id=r["id"], kind=r["kind"], text=r["text"], score=0.0, vector_rank=None, keyword_rank=None,
                created_at=r["created_at"], metadata=r["metadata"],
            ),
        )
        for r in rows
    ]


async def session_windows(
    store: VectorStore, ids: Sequence[str], seeds: Sequence[str], key: str, turns: int, span_ms: int,
    vector: Sequence[float], unnamed: Sequence[float] | None = None,
) -> list[WindowRow]:
    """Each of ``ids`` (offset 0) with its similarity to ``vector``, and up to ``turns`` observations on
    each side of each of ``seeds`` (some of ``ids``) in its session, with theirs: one query for a pool.
    With ``unnamed`` (a second query vector) each row also has its similarity to that.

    Every id known to the store comes back as its own offset-0 row (so a keyword-only candidate gets its
    dense similarity too); only a seed observation whose metadata has ``key`` has neighbours: observations
    with the same value, recorded within ``span_ms`` of it, nearest first. Offsets count turns, so two
    rows of one window are ``abs(a.offset - b.offset)`` turns apart. A neighbour that is one of ``ids``
    comes back without its text and metadata (the caller has them).
    """
    for name, values in (("ids", ids), ("seeds", seeds)):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) > _MAX_WINDOW_SEEDS:
            raise InvalidInput(f"{name}: expected a list of at most {_MAX_WINDOW_SEEDS} ids")
    _check_walk(key, turns, span_ms)
    if not ids:
        return []
    q = quote_schema(store.schema)
    side = """(SELECT x.id, x.kind, x.text, x.created_at, x.metadata, x.embedding, {sign} * row_number() OVER
                      (ORDER BY x.created_at {order}, x.id {order}) AS offset_
               FROM {q}.embeddings x
               WHERE $3 > 0 AND s.id = ANY($6::text[]) AND s.kind = 'observation' AND s.metadata ? $2
                 AND x.kind = 'observation'
                 AND x.metadata ->> $2 = s.metadata ->> $2
                 AND x.created_at {op} s.created_at AND x.created_at {bound}
               ORDER BY x.created_at {order}, x.id {order} LIMIT $3)"""
    before = side.format(q=q, sign="-1", op="<", bound=">= s.created_at - $4", order="DESC")
    after = side.format(q=q, sign="1", op=">", bound="<= s.created_at + $4", order="ASC")
    itself = "(SELECT s.id, s.kind, s.text, s.created_at, s.metadata, s.embedding, 0::bigint AS offset_)"
    known = "n.offset_ <> 0 AND n.id = ANY($1::text[])"
    sql = f"""SELECT s.id AS seed, n.id, n.kind, CASE WHEN {known} THEN '' ELSE n.text END AS text, n.created_at,
                     CASE WHEN {known} THEN NULL ELSE n.metadata END AS metadata, n.offset_,
                     1 - (n.embedding <=> $5) AS similarity, 1 - (n.embedding <=> $7) AS unnamed_similarity
              FROM {q}.embeddings s
              CROSS JOIN LATERAL ({itself} UNION ALL {before} UNION ALL {after}) n
              WHERE s.id = ANY($1::text[])"""
    async with store.acquire() as conn:
        rows = await conn.fetch(sql, list(ids), key, turns, span_ms, Vector(list(vector)), list(seeds),
                                None if unnamed is None else Vector(list(unnamed)))
    return [
        WindowRow(
            r["seed"], int(r["offset_"]),
            VectorHit(id=r["id"], kind=r["kind"], text=r["text"], score=0.0, vector_rank=None, keyword_rank=None,
                      created_at=r["created_at"], metadata=r["metadata"] or {}),
            None if r["similarity"] is None else float(r["similarity"]),
            None if r["unnamed_similarity"] is None else float(r["unnamed_similarity"]),
        )
        for r in rows
    ]


async def preceding_turns(
    store: VectorStore, seeds: Sequence[tuple[str, str, int]], key: str, turns: int, span_ms: int
) -> dict[str, list[tuple[int, str, str]]]:
    """Up to ``turns`` observations recorded before each seed in its session, oldest first: (time, id, text).

    A seed is ``(id, session, created_at)``: the observations returned have
    metadata ``key`` equal to ``session`` and were recorded within ``span_ms``
    before ``created_at``. Seeds with nothing before them are absent.
    """
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or len(seeds) > _MAX_CONTEXT_SEEDS:
        raise InvalidInput(f"seeds: expected a list of at most {_MAX_CONTEXT_SEEDS} (id, session, created_at)")
    _check_walk(key, turns, span_ms)
    if not seeds or turns == 0:
        return {}
    q = quote_schema(store.schema)
    sql = f"""SELECT s.id, array_agg(p.created_at ORDER BY p.created_at, p.id) AS times,
                     array_agg(p.id ORDER BY p.created_at, p.id) AS ids,
                     array_agg(p.text ORDER BY p.created_at, p.id) AS texts
              FROM unnest($1::text[], $2::text[], $3::bigint[]) AS s(id, session, created_at)
              CROSS JOIN LATERAL (
                  SELECT x.id, x.text, x.created_at FROM {q}.embeddings x
                  WHERE x.kind = 'observation' AND x.metadata ->> $4 = s.session
                    AND x.created_at < s.created_at AND x.created_at >= s.created_at - $5
                  ORDER BY x.created_at DESC, x.id DESC LIMIT $6) p
              GROUP BY s.id"""
    ids, sessions, times = (list(column) for column in zip(*seeds, strict=True))
    async with store.acquire() as conn:
        rows = await conn.fetch(sql, ids, sessions, times, key, span_ms, turns)
    return {r["id"]: list(zip(r["times"], r["ids"], r["texts"], strict=True)) for r in rows}


def _check_walk(key: str, turns: int, span_ms: int) -> None:
    """Validate the session walk both queries share: metadata key, turns per seed, time span."""
    if not isinstance(key, str) or not key:
        raise InvalidInput("key: must be a non-empty metadata key")
    if isinstance(turns, bool) or not isinstance(turns, int) or not 0 <= turns <= _MAX_TURNS:
        raise InvalidInput(f"turns: expected an integer from 0 to {_MAX_TURNS}")
    if isinstance(span_ms, bool) or not isinstance(span_ms, int) or span_ms < 0:
        raise InvalidInput("span_ms: expected a non-negative integer")
