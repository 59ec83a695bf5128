"""Lexical read-only guard for raw Cypher.

It is the first of two fences: the engine's own read-only execution
(FalkorDB ``GRAPH.RO_QUERY``, Neo4j READ access mode) is the second. The
guard blanks out comments, string literals and quoted identifiers (so words
inside them are harmless), then refuses write keywords, ``CALL`` of any
procedure not on a read-only whitelist, and more than one statement.
"""

from __future__ import annotations

import re

from mnemonet.store.graph_errors import ReadOnlyViolation

WRITE_KEYWORDS: frozenset[str] = frozenset(
    {"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH", "LOAD", "INSERT", "ALTER",
     "GRANT", "DENY", "REVOKE", "TERMINATE"}
)
READ_PROCEDURES: frozenset[str] = frozenset(
    {"db.labels", "db.relationshiptypes", "db.propertykeys", "db.indexes", "db.constraints",
     "db.schema.visualization", "db.schema.nodetypeproperties", "db.schema.reltypeproperties",
     "db.idx.fulltext.querynodes", "db.idx.fulltext.queryrelationships", "db.idx.vector.querynodes",
     "db.index.fulltext.querynodes", "db.index.vector.querynodes"}
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"\bCALL\s*(\{|\(|[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)", re.IGNORECASE)


def _blank(cypher: str) -> str:
    """Replace comments, strings and backticked names by spaces, keeping everything else."""
    out: list[str] = []
    i, n = 0, len(cypher)
    while i < n:
        ch = cypher[i]
        if cypher.startswith("//", i):
            end = cypher.find("\n", i)
            i = n if end < 0 else end
            out.append(" ")
        elif cypher.startswith("/*", i):
            end = cypher.find("*/", i + 2)
            if end < 0:
                raise ReadOnlyViolation("cypher: unterminated /* comment")
            i = end + 2
            out.append(" ")
        elif ch in "'\"`":
            j = i + 1
            while j < n and cypher[j] != ch:
                j += 2 if cypher[j] == "\\" and ch != "`" else 1
            if j >= n:
                raise ReadOnlyViolation("cypher: unterminated quoted text")
            i = j + 1
            out.append(" '' " if ch != "`" else " _q ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def check_read_only(cypher: str) -> None:
    """Raise ``ReadOnlyViolation`` unless ``cypher`` is, lexically, a single read-only query."""
    if not isinstance(cypher, str) or not cypher.strip():
        raise ReadOnlyViolation("cypher: must be a non-empty string")
    code = _blank(cypher)
    if ";" in code.rstrip().rstrip(";"):
        raise ReadOnlyViolation("cypher: only one statement is allowed")
    for word in _WORD.findall(code):
        if word.upper() in WRITE_KEYWORDS:
            raise ReadOnlyViolation(f"cypher: {word.upper()} is not allowed in a read-only query")
    for match in _CALL.finditer(code):
        target = re.sub(r"\s+", "", match.group(1)).lower()
        if target in ("{", "("):
            continue  # a subquery; its clauses were checked with the rest of the text
        if target not in READ_PROCEDURES:
            raise ReadOnlyViolation(f"cypher: CALL {target} is not a known read-only procedure")
