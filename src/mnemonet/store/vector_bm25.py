"""BM25 keyword ranking over the vector store's full-text column.

PostgreSQL's ``ts_rank_cd`` has no inverse document frequency: in an OR
query of a question's words, a passage matching two common words outranks
one matching the single rare word that names the answer. BM25 weighs each
matched lexeme by its IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))``, with
term-frequency saturation (``bm25_k1``) and length normalisation
(``bm25_b``). N, df and the average length come from the counts a trigger
keeps (``vector_schema.create_keyword_stats``); a text's length is its
number of distinct lexemes, which ``length(tsvector)`` reads without
unpacking it. Rows are still found by the GIN index with the same OR query.
"""

from __future__ import annotations

# $1 query text, $2 limit, $3 k1, $4 b; filters follow from $5.
# The first CTE turns the query into its lexemes with their IDF (one primary-key
# lookup each) and the OR tsquery that finds candidate rows through the GIN index;
# lexemes are quoted for to_tsquery ('' for a quote, \\ for a backslash) and parsed
# with the 'simple' config so already-stemmed lexemes are not stemmed again.
_BM25_SQL = """
WITH terms AS MATERIALIZED (
    SELECT l.lexeme,
           ln(1.0 + (t.docs - coalesce(k.docs, 0) + 0.5) / (coalesce(k.docs, 0) + 0.5)) AS idf,
           greatest(t.lexemes::float8 / greatest(t.docs, 1), 1.0) AS avgdl,
           '''' || replace(replace(l.lexeme, '\\', '\\\\'), '''', '''''') || '''' AS quoted
    FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
    CROSS JOIN {q}.keyword_totals AS t
    LEFT JOIN {q}.keyword_lexemes AS k ON k.lexeme = l.lexeme
), query AS MATERIALIZED (
    SELECT to_tsquery('simple', string_agg(quoted, ' | ')) AS any_term,
           array_agg(lexeme) AS lexemes, array_agg(idf) AS idfs, max(avgdl) AS avgdl
    FROM terms
)
SELECT e.id, e.kind, e.text, e.created_at, e.metadata,
       (SELECT sum(w.idf * u.tf * ($3::float8 + 1) / (u.tf + n.norm))
        FROM (SELECT lexeme, coalesce(cardinality(positions), 1) AS tf FROM unnest(e.tsv)) AS u
        JOIN unnest(query.lexemes, query.idfs) AS w(lexeme, idf) ON w.lexeme = u.lexeme) AS rank
FROM query, {q}.embeddings AS e
CROSS JOIN LATERAL (SELECT $3::float8 * (1 - $4::float8 + $4::float8 * length(e.tsv) / query.avgdl) AS norm) AS n
WHERE e.tsv @@ query.any_term {where}
ORDER BY rank DESC, e.id LIMIT $2
"""


def bm25_sql(q: str, where: str) -> str:
    """The BM25 query for schema ``q`` (already quoted) with extra ``AND ...`` filter text (fixed SQL, from $5)."""
    return _BM25_SQL.format(q=q, where=where)
