"""Which rows keyword search ranks: candidates from the full-text index, bounded by how common each word is.

Keyword search ranks rows sharing any English lexeme with the query. Every
matching row costs a heap fetch (the rows are wide: they hold the vector), so
with an OR of all lexemes a common word ("like", a speaker's name) makes the
search fetch a large share of the table: 20k of 100k rows, ~150 ms
(bench/README.md, "Search latency"). Ranking treats every query word alike,
so a row matching just one common word ties with thousands of others at the
bottom of the ranking. Candidates therefore come from the rare lexemes alone
and from pairs of common ones; rows matching a single common word and nothing
else are left out. How common a lexeme is comes from PostgreSQL's own
statistics of the ``tsv`` column (``pg_stats.most_common_elems``, kept by
ANALYZE and autovacuum), so no count is kept on the write path; a table
without statistics yet has no common lexemes, and every match is ranked.
"""

from __future__ import annotations

from itertools import combinations

import asyncpg

# The query's lexemes (the same English parsing as the tsv column) with the
# estimated number of rows holding each: frequency in the sampled rows x rows
# in the table. A lexeme absent from the statistics is rarer than every one listed.
_LEXEME_ROWS = """
SELECT l.lexeme, coalesce(s.freq * greatest(c.reltuples, 0), 0)::float8 AS rows
FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
LEFT JOIN (
    SELECT u.elem, u.freq
    FROM pg_stats st, unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS u(elem, freq)
    WHERE st.schemaname = $2 AND st.tablename = 'embeddings' AND st.attname = 'tsv' AND NOT st.inherited
) AS s ON s.elem = l.lexeme
LEFT JOIN (
    SELECT t.reltuples FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = $2 AND t.relname = 'embeddings'
) AS c ON true
ORDER BY l.lexeme"""


async def lexeme_rows(pool: asyncpg.Pool, schema: str, query: str) -> list[tuple[str, float]]:
    """(lexeme, estimated rows holding it) for each distinct English lexeme of ``query``."""
    return [(r["lexeme"], float(r["rows"])) for r in await pool.fetch(_LEXEME_ROWS, query, schema)]


def candidate_tsquery(lexemes: list[tuple[str, float]], common_rows: int) -> str | None:
    """The ``to_tsquery('simple', ...)`` text selecting the rows to rank, or None to rank every match.

    A lexeme in more than ``common_rows`` rows is common: it selects rows only
    together with another common lexeme. With no common lexeme, or nothing
    left to select by (one common lexeme alone), every matching row is ranked.
    """
    common = [lexeme for lexeme, rows in lexemes if common_rows > 0 and rows > common_rows]
    rare = [lexeme for lexeme, rows in lexemes if lexeme not in common]
    terms = [_quote(lexeme) for lexeme in rare]
    terms += [f"{_quote(a)} & {_quote(b)}" for a, b in combinations(common, 2)]
    if not common or not terms:
        return None
    return " | ".join(terms)


def _quote(lexeme: str) -> str:
    # A tsquery operand in quotes: '' for a quote, \\ for a backslash (as vectors._OR_TSQUERY quotes).
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
