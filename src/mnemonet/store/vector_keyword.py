"""Keyword search over the vector store's full-text column: which rows are ranked, and how.

**Ranking.** PostgreSQL's ``ts_rank_cd`` has no inverse document frequency:
in an OR query of a question's words, a passage matching two common words
outranks one matching the single rare word that names the answer. BM25
weighs each matched lexeme by its IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))``,
with term-frequency saturation (``bm25_k1``) and length normalisation
(``bm25_b``); a text's length is its number of distinct lexemes, which
``length(tsvector)`` reads without unpacking it. ``ts_rank_cd`` stays as a
setting (``keyword_scoring``) for comparison.

**Candidates.** Every row that is ranked costs a heap fetch and a BM25 sum,
so with an OR of all lexemes one common word ("like", a speaker's name)
makes a search rank a large share of the table (20k of 100k rows: 163 ms
p50 against 14 ms bounded, bench/README.md, "Search latency"). Rows are
therefore found by the rare lexemes and by pairs of common ones (in more
than ``keyword_common_rows`` rows); a row matching a single common word and
nothing else would rank at the bottom anyway. Pairs are read the pair
weighing most (IDF) first, and reading stops after ``keyword_pair_rows``
rows: a row holding only a lighter pair scores below every row of a heavier
one (at one occurrence per word), so the rows left unread would not make the
first k. With no common lexeme, or nothing left to select by (one common
word alone), every match is ranked. The rare words and that last case read
at most ``keyword_max_candidates`` rows; every bound reads at least k.

N, every lexeme's df and the total length come from the counts a trigger
keeps on insert (``vector_schema.create_keyword_stats``): one primary-key
lookup per query word, exact, with no ANALYZE needed.
"""

from __future__ import annotations

from typing import Literal

# $1 query text, $2 k, $3 k1, $4 b, $5 keyword_common_rows, $6 keyword_max_candidates, $7 keyword_pair_rows;
# filters follow from $8. Lexemes are quoted for to_tsquery ('' for a quote, \\ for a backslash) and
# parsed with the 'simple' config, so already-stemmed lexemes are not stemmed again.
_KEYWORD_SQL = """
WITH terms AS MATERIALIZED (
    SELECT l.lexeme,
           ln(1.0 + (t.docs - coalesce(k.docs, 0) + 0.5) / (coalesce(k.docs, 0) + 0.5)) AS idf,
           greatest(t.lexemes::float8 / greatest(t.docs, 1), 1.0) AS avgdl,
           $5::int > 0 AND coalesce(k.docs, 0) > $5::int AS common,
           '''' || replace(replace(l.lexeme, '\\', '\\\\'), '''', '''''') || '''' AS quoted
    FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
    CROSS JOIN {q}.keyword_totals AS t
    LEFT JOIN {q}.keyword_lexemes AS k ON k.lexeme = l.lexeme
), query AS MATERIALIZED (
    SELECT to_tsquery('simple', string_agg(quoted, ' | ')) AS any_term,
           to_tsquery('simple', (SELECT string_agg(quoted, ' | ') FROM terms WHERE NOT common)) AS rare,
           array_agg(lexeme) AS lexemes, array_agg(idf) AS idfs, max(avgdl) AS avgdl,
           $3::float8 AS k1, $4::float8 AS b
    FROM terms
), pairs AS MATERIALIZED (
    SELECT to_tsquery('simple', a.quoted || ' & ' || b.quoted) AS words, a.idf + b.idf AS weight
    FROM terms AS a JOIN terms AS b ON a.lexeme < b.lexeme WHERE a.common AND b.common
), found AS (
    (SELECT id, kind, text, created_at, metadata, tsv FROM {q}.embeddings, query
     WHERE tsv @@ query.rare {where} LIMIT greatest($6::int, $2))
    UNION ALL
    -- The heaviest pair first; the nested loop keeps the pairs' order, so the LIMIT stops the reading.
    (SELECT e.* FROM (SELECT words, weight FROM pairs ORDER BY weight DESC) AS p
     CROSS JOIN LATERAL (SELECT id, kind, text, created_at, metadata, tsv FROM {q}.embeddings
                         WHERE tsv @@ p.words {where}) AS e
     ORDER BY p.weight DESC LIMIT greatest($7::int, $2))
    UNION ALL
    (SELECT id, kind, text, created_at, metadata, tsv FROM {q}.embeddings, query
     WHERE query.rare IS NULL AND NOT EXISTS (SELECT FROM pairs) AND tsv @@ query.any_term {where}
     LIMIT greatest($6::int, $2))
)
SELECT e.id, e.kind, e.text, e.created_at, e.metadata, {rank} AS rank
FROM query, (SELECT DISTINCT ON (id) * FROM found) AS e
-- Equal ranks: the older row, then by text; the id last, as it may be random or derive from the space.
ORDER BY rank DESC, e.created_at, e.text, e.id LIMIT $2
"""

_RANKS = {
    # The IDF is looked up by position: joining unnest()ed query terms built a hash table per ranked row.
    "bm25": """(SELECT sum(query.idfs[array_position(query.lexemes, u.lexeme)] * u.tf * (query.k1 + 1)
                    / (u.tf + query.k1 * (1 - query.b + query.b * length(e.tsv) / query.avgdl)))
               FROM (SELECT lexeme, coalesce(cardinality(positions), 1) AS tf FROM unnest(e.tsv)) AS u
               WHERE u.lexeme = ANY(query.lexemes))""",
    "ts_rank_cd": "ts_rank_cd(e.tsv, query.any_term)",
}


def keyword_sql(q: str, where: str, scoring: Literal["bm25", "ts_rank_cd"]) -> str:
    """The keyword query for schema ``q`` (already quoted) with extra ``AND ...`` filter text (fixed SQL, from $8)."""
    return _KEYWORD_SQL.format(q=q, where=where, rank=_RANKS[scoring])
