"""The one body of portable Cypher the graph store runs on Neo4j 5 and FalkorDB.

Only the subset both engines accept is used: no ``EXISTS {}``/``COUNT {}``
subqueries, no ``elementId``, and ``CALL {}`` only where its ``LIMIT`` bounds
the work (a hub's degree is counted to one past the cap, not to the end), in
the importing-``WITH`` form: FalkorDB parses no ``CALL (x) {}``, and Neo4j 5
runs the form it marks deprecated; times are epoch-ms integers passed as ``$now``. Everything is parameterised; the only composition is of
the static fragments below, never of caller data.

A write runs as one statement built from stages. Each stage UNWINDs a list
that the composer only includes when it is non-empty, so the single row of
the head survives to the end; when the head finds the id already written it
yields no row and the whole statement writes nothing (a retry is a no-op).

"Is it there?" is always asked as ``count(x) = 0`` after an OPTIONAL MATCH,
never ``x IS NULL``: FalkorDB 4.16 lets ``WITH x WHERE x IS NULL`` through
when ``x`` was found. An OPTIONAL MATCH is one hop plus a ``WHERE`` pattern:
FalkorDB 4.16 matched ``(s)-[:A]->(x)<-[:B]-()`` as ``(s)-[:A]->(x)`` alone.
"""

from __future__ import annotations

import itertools

from mnemonet.store import graph_params

# -- writes: observation ------------------------------------------------------

_SOURCE_MERGE = """
MERGE (src:Source {key: $source.key})
ON CREATE SET src.id = $source.id, src.name = $source.name, src.kind = $source.kind, src.created_at = $now"""

_OBSERVATION_HEAD = """
OPTIONAL MATCH (existing:Observation {id: $observation.id})
WITH count(existing) AS existing_found WHERE existing_found = 0""" + _SOURCE_MERGE + """
CREATE (w:Observation {id: $observation.id, raw_content: $observation.raw_content,
        topics: $observation.topics, created_at: $now, metadata: $observation.metadata,
        extraction: $observation.extraction})
CREATE (w)-[:RECORDED_BY]->(src)"""

# Concept get-or-create: look each requested key up as a concept key and as an
# alias key, prefer an exact key hit, MERGE on the winner's key (or the new
# key), then append the names the concept does not know yet as aliases.
_CONCEPTS = """
WITH src, w
UNWIND $concepts AS cs
UNWIND cs.keys AS k
OPTIONAL MATCH (byKey:Concept {key: k})
OPTIONAL MATCH (byAlias:Concept) WHERE k IN byAlias.alias_keys
WITH src, w, cs, collect(byKey) + collect(byAlias) AS hits
WITH src, w, cs, head([h IN hits WHERE h.key = cs.key] + hits) AS hit
MERGE (c:Concept {key: coalesce(hit.key, cs.key)})
ON CREATE SET c.id = cs.id, c.name = cs.name, c.kind = cs.kind, c.aliases = cs.aliases,
              c.alias_keys = cs.alias_keys, c.created_at = $now
WITH src, w, cs, c,
     [i IN range(0, size(cs.keys) - 1) WHERE cs.keys[i] <> c.key AND NOT cs.keys[i] IN c.alias_keys] AS fresh
FOREACH (x IN CASE WHEN size(fresh) > 0 THEN [1] ELSE [] END |
  SET c.aliases = c.aliases + [i IN fresh | cs.names[i]],
      c.alias_keys = c.alias_keys + [i IN fresh | cs.keys[i]])"""

_MENTIONS = """
FOREACH (x IN CASE WHEN cs.mention THEN [1] ELSE [] END | MERGE (w)-[:MENTIONS]->(c))"""

_CONCEPTS_DONE = """
WITH src, w, collect(cs.key) AS ks, collect(c) AS cn"""

# ``ks``/``cn`` are parallel lists: requested key -> resolved concept node.
_RELATIONS = """
WITH src, w, ks, cn
UNWIND $relations AS r
WITH src, w, ks, cn, r,
     cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = r.from])] AS a,
     cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = r.to])] AS b
FOREACH (x IN CASE WHEN a <> b THEN [1] ELSE [] END | MERGE (a)-[:RELATED_TO {relation: r.relation}]->(b))"""

_RELATIONS_DONE = """
WITH src, w, head(collect(ks)) AS ks, head(collect(cn)) AS cn"""

# Last stage of an observation: a statement id already in the graph is left
# untouched (statements are never updated), so its row is filtered out here.
_STATEMENTS = """
WITH src, w, ks, cn
UNWIND $statements AS s
OPTIONAL MATCH (dup:Statement {id: s.id})
WITH src, w, ks, cn, s, count(dup) AS dups WHERE dups = 0
WITH src, w, s,
     cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = s.subject])] AS subj,
     cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = s.object])] AS obj
CREATE (st:Statement {id: s.id, predicate: s.predicate, confidence: s.confidence, negated: s.negated,
        tense: s.tense, valid_at: s.valid_at, revision: s.revision, created_at: $now, sentence: s.sentence})
CREATE (st)-[:ABOUT_SUBJECT]->(subj)
CREATE (st)-[:ABOUT_OBJECT]->(obj)
CREATE (st)-[:DERIVED_FROM]->(w)
CREATE (st)-[:ASSERTED_BY]->(src)"""


def observation_write(concepts: bool, relations: bool, statements: bool) -> str:
    """The write statement for an observation with the given non-empty lists."""
    return _with_stages(_OBSERVATION_HEAD, concepts, relations, statements)


# An inference worker's claims about an existing observation, with its done-marker
# (``PROCESSED`` from the worker's source): a second write for the same observation
# and source finds the marker and writes nothing, so racing workers never duplicate.
# The claims carry the observation's time ($now): they hold from when it was said, however late
# the worker drew them, so a claim is never newer than what its speaker said after it.
_INFERENCE_HEAD = """
MATCH (w:Observation {id: $observation.id})
OPTIONAL MATCH (w)<-[done:PROCESSED]-(:Source {key: $source.key})
WITH w, count(done) AS done_found WHERE done_found = 0""" + _SOURCE_MERGE + """
CREATE (src)-[:PROCESSED {created_at: $done_at}]->(w)"""


def inference_write(concepts: bool, relations: bool, statements: bool) -> str:
    """The write statement for an inference result (claims DERIVED_FROM the observation, plus the marker)."""
    return _with_stages(_INFERENCE_HEAD, concepts, relations, statements)


# The extraction of an observation written raw (``extraction: 'pending'``): its concepts and
# statements, asserted by the observation's own source, with the done-marker (``PROCESSED`` from
# the extractor source). The marker makes it exactly once: a second extraction finds it and
# writes nothing. Statements carry the observation's time ($now): they hold from when they were said.
_EXTRACTION_HEAD = """
MATCH (w:Observation {id: $observation.id})-[:RECORDED_BY]->(src:Source)
OPTIONAL MATCH (w)<-[done:PROCESSED]-(:Source {key: $extractor.key})
WITH src, w, count(done) AS done_found WHERE done_found = 0
MERGE (ex:Source {key: $extractor.key})
ON CREATE SET ex.id = $extractor.id, ex.name = $extractor.name, ex.kind = $extractor.kind, ex.created_at = $done_at
CREATE (ex)-[:PROCESSED {created_at: $done_at, topics: $topics, error: $error}]->(w)"""


# The statements an extraction created, as STATEMENTS_FROM_OBSERVATION reads them (``_STATEMENT_VIEW``): its
# caller needs them, and a read of them back costs the engine more than the write (0.4-1.0 ms a query on
# FalkorDB, with the extraction's own 1.4 ms, bench/README.md round 15). Created by this statement, nothing
# supersedes, contradicts or retracts them yet, and they derive from the observation alone.
_STATEMENTS_WRITTEN = """
WITH src, w, st, subj, obj
OPTIONAL MATCH (w)<-[:RETRACTS]-(wr:Retraction)
WITH src, w, st, subj, obj, count(wr) AS basis_retracted
RETURN st.id AS id, subj.name AS subject, st.predicate AS predicate, obj.name AS object,
       st.confidence AS confidence, st.negated AS negated, st.tense AS tense, st.valid_at AS valid_at,
       st.revision AS revision, st.created_at AS created_at, src.name AS source, [w.id] AS derived_from,
       CASE WHEN basis_retracted > 0 THEN [w.id] ELSE [] END AS retracted_basis"""


def extraction_write(concepts: bool, relations: bool, statements: bool) -> str:
    """The write statement for the extraction of a raw observation (statements plus the done-marker); it
    returns a row for each statement it created (``_STATEMENTS_WRITTEN``)."""
    written = _with_stages(_EXTRACTION_HEAD, concepts, relations, statements)
    return written + _STATEMENTS_WRITTEN if concepts and statements else written


def _with_stages(head: str, concepts: bool, relations: bool, statements: bool) -> str:
    parts = [head]
    if concepts:
        parts += [_CONCEPTS, _MENTIONS]
        if relations or statements:
            parts.append(_CONCEPTS_DONE)
        if relations:
            parts.append(_RELATIONS)
            if statements:
                parts.append(_RELATIONS_DONE)
        if statements:
            parts.append(_STATEMENTS)
    return "".join(parts).strip()


# -- writes: claim ------------------------------------------------------------

# Checks first, writes after: a missing basis or target id yields no row, so
# nothing is written; the store then reads back which id was missing.
_CLAIM_HEAD = """
OPTIONAL MATCH (existing:Statement {id: $statement.id})
WITH count(existing) AS existing_found
OPTIONAL MATCH (target:Statement) WHERE target.id IN $targets
WITH existing_found, count(DISTINCT target) AS targets_found
OPTIONAL MATCH (bo:Observation) WHERE bo.id IN $basis
WITH existing_found, targets_found, count(DISTINCT bo) AS observations_found
OPTIONAL MATCH (bs:Statement) WHERE bs.id IN $basis
WITH existing_found, targets_found, observations_found, count(DISTINCT bs) AS statements_found
WHERE existing_found = 0 AND targets_found = size($targets)
  AND observations_found + statements_found = size($basis)""" + _SOURCE_MERGE + """
CREATE (w:Statement {id: $statement.id, predicate: $statement.predicate, confidence: $statement.confidence,
        negated: $statement.negated, tense: $statement.tense, valid_at: $statement.valid_at,
        revision: $statement.revision, created_at: $now,
        sentence: $statement.sentence})
CREATE (w)-[:ASSERTED_BY]->(src)"""

_CLAIM_ENDS = """
WITH src, w, cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = $statement.subject])] AS subj,
     cn[head([i IN range(0, size(ks) - 1) WHERE ks[i] = $statement.object])] AS obj
CREATE (w)-[:ABOUT_SUBJECT]->(subj)
CREATE (w)-[:ABOUT_OBJECT]->(obj)"""

_CLAIM_BASIS = """
WITH src, w
UNWIND $basis AS bid
OPTIONAL MATCH (bo:Observation {id: bid})
OPTIONAL MATCH (bs:Statement {id: bid})
WITH src, w, coalesce(bo, bs) AS b
CREATE (w)-[:DERIVED_FROM]->(b)"""

_CLAIM_SUPERSEDES = """
WITH src, w
UNWIND $supersedes AS l
MATCH (t:Statement {id: l.id})
CREATE (w)-[:SUPERSEDES {reason: l.reason, created_at: $now, source: $source.name}]->(t)"""

_CLAIM_CONTRADICTS = """
WITH src, w
UNWIND $contradicts AS l
MATCH (t:Statement {id: l.id})
CREATE (w)-[:CONTRADICTS {reason: l.reason, created_at: $now, source: $source.name}]->(t)"""

_ROWS_DONE = """
WITH src, w, count(*) AS n"""


def claim_write(relations: bool, basis: bool, supersedes: bool, contradicts: bool) -> str:
    """The write statement for a claim with the given non-empty lists (its concepts are never empty)."""
    parts = [_CLAIM_HEAD, _CONCEPTS, _CONCEPTS_DONE]
    if relations:
        parts += [_RELATIONS, _RELATIONS_DONE]
    parts.append(_CLAIM_ENDS)
    for included, stage in ((basis, _CLAIM_BASIS), (supersedes, _CLAIM_SUPERSEDES), (contradicts, _CLAIM_CONTRADICTS)):
        if included:
            parts += [_ROWS_DONE, stage]
    return "".join(parts).strip()


# -- writes: links between statements ----------------------------------------

LINK_SUPERSEDES = """
MATCH (a:Statement {id: $from_id})
MATCH (b:Statement {id: $to_id})
WHERE NOT (a)-[:SUPERSEDES]->(b)
CREATE (a)-[:SUPERSEDES {reason: $reason, created_at: $now, source: $source}]->(b)""".strip()

# Undirected check: a contradiction between a pair exists once, whichever way.
LINK_CONTRADICTS = """
MATCH (a:Statement {id: $from_id})
MATCH (b:Statement {id: $to_id})
WHERE NOT (a)-[:CONTRADICTS]-(b)
CREATE (a)-[:CONTRADICTS {reason: $reason, created_at: $now, source: $source}]->(b)""".strip()

EXISTING_STATEMENTS = "MATCH (s:Statement) WHERE s.id IN $ids RETURN s.id AS id"
EXISTING_BASIS = """
MATCH (n:Observation) WHERE n.id IN $ids RETURN n.id AS id
UNION
MATCH (n:Statement) WHERE n.id IN $ids RETURN n.id AS id""".strip()
# The items the vector index holds rows of (summaries are statements).
EXISTING_ITEMS = EXISTING_BASIS + """
UNION
MATCH (n:Concept) WHERE n.id IN $ids RETURN n.id AS id"""

# -- reads --------------------------------------------------------------------

# /health's round trip: a real read through the engine's query path, cheap on any graph size.
PING = "MATCH (o:Observation) RETURN o.id AS id LIMIT 1"

# Expects rows binding ``s`` (a Statement); returns one StatementView row each.
_STATEMENT_VIEW = """
MATCH (s)-[:ABOUT_SUBJECT]->(subj:Concept)
MATCH (s)-[:ABOUT_OBJECT]->(obj:Concept)
OPTIONAL MATCH (s)-[:ASSERTED_BY]->(src:Source)
WITH s, subj, obj, src
OPTIONAL MATCH (s)-[:DERIVED_FROM]->(d)
WITH s, subj, obj, src, collect(DISTINCT d.id) AS derived_from
OPTIONAL MATCH (s)-[:DERIVED_FROM]->(rd) WHERE (rd)<-[:RETRACTS]-(:Retraction)
WITH s, subj, obj, src, derived_from, collect(DISTINCT rd.id) AS retracted_basis
OPTIONAL MATCH (later:Statement)-[:SUPERSEDES]->(s) WHERE NOT (later)<-[:RETRACTS]-(:Retraction)
WITH s, subj, obj, src, derived_from, retracted_basis, collect(DISTINCT later.id) AS superseded_by
OPTIONAL MATCH (s)-[:CONTRADICTS]-(other:Statement) WHERE NOT (other)<-[:RETRACTS]-(:Retraction)
WITH s, subj, obj, src, derived_from, retracted_basis, superseded_by, collect(DISTINCT other.id) AS contradicted_by
OPTIONAL MATCH (s)<-[:RETRACTS]-(rt:Retraction)
WITH s, subj, obj, src, derived_from, retracted_basis, superseded_by, contradicted_by,
     collect(DISTINCT rt.id) AS retracted_by
RETURN s.id AS id, subj.name AS subject, s.predicate AS predicate, obj.name AS object,
       s.confidence AS confidence, s.negated AS negated, s.tense AS tense, s.valid_at AS valid_at,
       s.revision AS revision,
       s.created_at AS created_at, src.name AS source,
       derived_from, superseded_by, contradicted_by, s.summary AS summary, retracted_by, retracted_basis"""

_BY_CONFIDENCE = "\nORDER BY confidence DESC, created_at DESC, id"
_BY_AGE = "\nORDER BY created_at, id"
_BY_RECENCY = "\nORDER BY created_at DESC, id DESC"

# A concept by name: its key, or any concept carrying it as an alias key.
_CONCEPT_BY_KEY = """
OPTIONAL MATCH (byKey:Concept {key: $key})
OPTIONAL MATCH (byAlias:Concept) WHERE $key IN byAlias.alias_keys
WITH collect(byKey) + collect(byAlias) AS found
UNWIND found AS c
WITH DISTINCT c"""

STATEMENTS_ABOUT = (_CONCEPT_BY_KEY + """
MATCH (s:Statement)-[:ABOUT_SUBJECT|ABOUT_OBJECT]->(c)
WITH DISTINCT s
OPTIONAL MATCH (s)<-[sup:SUPERSEDES]-(later:Statement) WHERE NOT (later)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (s)<-[ret:RETRACTS]-(:Retraction)
WITH s, count(sup) + count(ret) AS gone
WHERE $include_superseded OR gone = 0
WITH s ORDER BY s.confidence DESC, s.created_at DESC, s.id LIMIT $limit""" + _STATEMENT_VIEW + _BY_CONFIDENCE).strip()

STATEMENTS_FROM_OBSERVATION = ("""
MATCH (s:Statement)-[:DERIVED_FROM]->(:Observation {id: $id})
WITH DISTINCT s""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

STATEMENTS_FROM_STATEMENT = ("""
MATCH (s:Statement)-[:DERIVED_FROM]->(:Statement {id: $id})
WITH DISTINCT s""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

STATEMENTS_BY_SOURCE = ("""
MATCH (src0:Source)<-[:ASSERTED_BY]-(s:Statement)-[:DERIVED_FROM]->(d)
WHERE src0.key IN $source_keys AND d.id IN $ids
WITH DISTINCT s""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

GET_STATEMENTS = ("""
MATCH (s:Statement) WHERE s.id IN $ids
WITH DISTINCT s""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

RECENT_STATEMENTS = ("""
MATCH (s:Statement)
WITH s ORDER BY s.created_at DESC, s.id DESC LIMIT $limit""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

# Statements replaced by a later one that stands, written at or after $since (the brief's changes): the newest
# replacements first. Whether the replacement still stands is the statement view's (superseded_by).
SUPERSEDED_SINCE = ("""
MATCH (later:Statement)-[:SUPERSEDES]->(s:Statement)
WHERE later.created_at >= $since AND later.predicate <> $summary_predicate
WITH s, max(later.created_at) AS replaced_at ORDER BY replaced_at DESC, s.id LIMIT $limit
WITH s""" + _STATEMENT_VIEW + _BY_RECENCY).strip()

# Superseded ends are found by optional matches from a and b: FalkorDB evaluated
# NOT (:Statement)-[:SUPERSEDES]->(a) ~5x slower (2,000 contradictions: 170 vs 35 ms).
_UNRESOLVED = """
OPTIONAL MATCH (a)<-[sa:SUPERSEDES]-(la) WHERE NOT (la)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (b)<-[sb:SUPERSEDES]-(lb) WHERE NOT (lb)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (a)<-[ra:RETRACTS]-(:Retraction)
OPTIONAL MATCH (b)<-[rb:RETRACTS]-(:Retraction)
WITH a, r, b, sa, sb, ra, rb WHERE sa IS NULL AND sb IS NULL AND ra IS NULL AND rb IS NULL
RETURN a.id AS a, b.id AS b, r.reason AS reason, r.created_at AS created_at"""
UNRESOLVED_CONTRADICTIONS = ("MATCH (a:Statement)-[r:CONTRADICTS]->(b:Statement)" + _UNRESOLVED + """
ORDER BY created_at DESC, a, b
LIMIT $limit""").strip()
# Those touching the given statements, each found through the id index from either side (unordered: a
# UNION cannot be sorted here); the whole-graph query above scans every statement (at a million, ~0.7 s).
UNRESOLVED_CONTRADICTIONS_OF = (
    "UNWIND $ids AS sid MATCH (a:Statement {id: sid})-[r:CONTRADICTS]->(b:Statement)" + _UNRESOLVED
    + "\nUNION\n"
    + "UNWIND $ids AS sid MATCH (a:Statement)-[r:CONTRADICTS]->(b:Statement {id: sid})" + _UNRESOLVED).strip()

CONCEPT_DECOMPOSITION = (_CONCEPT_BY_KEY + """
MATCH (c)-[r:RELATED_TO]->(sub:Concept)
RETURN DISTINCT r.relation AS relation, sub.id AS id, sub.name AS name, sub.kind AS kind,
       sub.aliases AS aliases, sub.created_at AS created_at
ORDER BY relation, name""").strip()

# Topics of an observation written raw come with its extraction (on the done-marker, of which
# there is at most one: the extraction write refuses a second).
_OBSERVATION_VIEW = """
OPTIONAL MATCH (o)-[:RECORDED_BY]->(src:Source)
OPTIONAL MATCH (o)<-[ex:PROCESSED]-(:Source {key: '""" + graph_params.EXTRACTOR_KEY + """'})
RETURN o.id AS id, o.raw_content AS text, o.created_at AS created_at, src.name AS source,
       coalesce(ex.topics, o.topics) AS topics, o.metadata AS metadata"""

RECENT_OBSERVATIONS = ("""
MATCH (o:Observation) WHERE o.created_at >= $since
WITH o ORDER BY o.created_at DESC, o.id DESC LIMIT $limit""" + _OBSERVATION_VIEW + _BY_RECENCY).strip()

# The observation a statement was extracted from: written with it, so created at the same time. Search folds
# hits into it and reads no topics: their PROCESSED edge was half of this read (2 of 3.8 ms for 199 statements
# at 100k, bench/README.md "Search latency, round 14").
EXTRACTED_FROM = """
MATCH (s:Statement)-[:DERIVED_FROM]->(o:Observation)
WHERE s.id IN $ids AND o.created_at = s.created_at
WITH s.id AS statement, o
OPTIONAL MATCH (o)-[:RECORDED_BY]->(src:Source)
RETURN o.id AS id, o.raw_content AS text, o.created_at AS created_at, src.name AS source, o.metadata AS metadata,
       statement
ORDER BY statement, id""".strip()

GET_OBSERVATIONS = ("""
MATCH (o:Observation) WHERE o.id IN $ids""" + _OBSERVATION_VIEW + _BY_RECENCY).strip()

# -- worker progress: what a worker source has done, read back from the graph ----

# An observation still waiting for its extraction is not offered to workers yet: its
# concepts (and their aliases) come with the extraction, which workers build on.
PENDING_OBSERVATIONS = ("""
MATCH (o:Observation)
OPTIONAL MATCH (o)<-[done:PROCESSED]-(:Source {key: $source_key})
WITH o, count(done) AS done_found WHERE done_found = 0
OPTIONAL MATCH (o)<-[ex:PROCESSED]-(:Source {key: '""" + graph_params.EXTRACTOR_KEY + """'})
WITH o, count(ex) AS extracted WHERE coalesce(o.extraction, 'none') <> 'pending' OR extracted > 0
WITH o ORDER BY o.created_at, o.id LIMIT $limit""" + _OBSERVATION_VIEW + _BY_AGE).strip()

# Observations written raw whose extraction is not done, recorded at or before $before (so an
# extraction still running inline is left to its caller).
PENDING_EXTRACTIONS = ("""
MATCH (o:Observation {extraction: 'pending'}) WHERE o.created_at <= $before
OPTIONAL MATCH (o)<-[done:PROCESSED]-(:Source {key: $extractor_key})
WITH o, count(done) AS done_found WHERE done_found = 0
WITH o ORDER BY o.created_at, o.id LIMIT $limit""" + _OBSERVATION_VIEW + _BY_AGE).strip()

COUNT_PENDING_EXTRACTIONS = """
MATCH (o:Observation {extraction: 'pending'})
OPTIONAL MATCH (o)<-[done:PROCESSED]-(:Source {key: $extractor_key})
WITH o, count(done) AS done_found WHERE done_found = 0
RETURN count(o) AS n""".strip()

EXTRACTION_STATE = """
MATCH (o:Observation {id: $id})
OPTIONAL MATCH (o)<-[done:PROCESSED]-(:Source {key: $extractor_key})
RETURN o.extraction AS extraction, count(done) AS done, head(collect(done.error)) AS error""".strip()

# A retracted statement is never current, so it is never validated (nor a side of a contradiction).
PENDING_STATEMENTS = ("""
MATCH (s:Statement) WHERE NOT (s)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (s)<-[done:PROCESSED]-(:Source {key: $source_key})
WITH s, count(done) AS done_found WHERE done_found = 0
WITH s ORDER BY s.created_at, s.id LIMIT $limit""" + _STATEMENT_VIEW + _BY_AGE).strip()

MARK_STATEMENTS_PROCESSED = _SOURCE_MERGE.strip() + """
WITH src
UNWIND $ids AS item_id
MATCH (s:Statement {id: item_id})
MERGE (src)-[p:PROCESSED]->(s)
ON CREATE SET p.created_at = $now"""

def _current(carry: str) -> str:
    """Keeps the rows whose statement ``s`` is current, carrying the variables ``carry`` names (e.g. "c, ").

    Current as the statement view decides it: not retracted, not superseded by a statement that stands
    (a retracted one supersedes nothing), and not derived only from retracted items. Each test is one
    hop plus a WHERE pattern (the FalkorDB two-hop bug in the module docstring); several OPTIONAL
    MATCHes multiply rows, so "none" is a count of 0 and bases are counted DISTINCT.
    """
    return f"""
OPTIONAL MATCH (s)<-[sup:SUPERSEDES]-(later:Statement) WHERE NOT (later)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (s)<-[ret:RETRACTS]-(:Retraction)
WITH {carry}s, count(sup) + count(ret) AS gone
WHERE gone = 0
OPTIONAL MATCH (s)-[:DERIVED_FROM]->(base)
OPTIONAL MATCH (s)-[:DERIVED_FROM]->(taken) WHERE (taken)<-[:RETRACTS]-(:Retraction)
WITH {carry}s, count(DISTINCT base) AS bases, count(DISTINCT taken) AS taken_back
WHERE bases = 0 OR taken_back < bases"""


# Concepts due a summary by the source: at least $min_new current statements (summaries,
# superseded and retracted ones aside) that no unretracted summary of its rests on yet (``fresh``), or a current summary
# resting on a statement that was superseded, or contradicted by a current statement of the
# concept, or retracted, after it was written (``changes``): such a summary no longer states what is current.
CONSOLIDATION_CANDIDATES = ("""
MATCH (c:Concept)<-[:ABOUT_SUBJECT|ABOUT_OBJECT]-(s:Statement)
WHERE s.predicate <> $summary_predicate""" + _current("c, ") + """
WITH c, collect(DISTINCT s.id) AS about
OPTIONAL MATCH (c)<-[:ABOUT_SUBJECT]-(sm:Statement {predicate: $summary_predicate})-[:ASSERTED_BY]->(:Source {key: $source_key})
WHERE NOT (sm)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (sm)-[:DERIVED_FROM]->(d:Statement)
WITH c, about, collect(DISTINCT d.id) AS covered
WITH c, [x IN about WHERE NOT x IN covered] AS fresh
OPTIONAL MATCH (c)<-[:ABOUT_SUBJECT]-(cur:Statement {predicate: $summary_predicate})-[:ASSERTED_BY]->(:Source {key: $source_key})
WHERE NOT (:Statement)-[:SUPERSEDES]->(cur)
OPTIONAL MATCH (cur)-[:DERIVED_FROM]->(:Statement)<-[sup:SUPERSEDES]-(:Statement)
WHERE sup.created_at > cur.created_at
WITH c, fresh, cur, count(sup) AS superseded
OPTIONAL MATCH (cur)-[:DERIVED_FROM]->(:Statement)-[con:CONTRADICTS]-(other:Statement)-[:ABOUT_SUBJECT|ABOUT_OBJECT]->(c)
WHERE con.created_at > cur.created_at AND NOT (:Statement)-[:SUPERSEDES]->(other)
  AND NOT (other)<-[:RETRACTS]-(:Retraction)
WITH c, fresh, cur, superseded, count(con) AS contradicted
OPTIONAL MATCH (cur)-[:DERIVED_FROM]->(b:Statement)
OPTIONAL MATCH (b)<-[ret:RETRACTS]-(:Retraction) WHERE ret.created_at > cur.created_at
WITH c, fresh, superseded, contradicted, count(ret) AS retracted
WHERE size(fresh) >= $min_new OR superseded + contradicted + retracted > 0
RETURN c.id AS id, c.name AS name
ORDER BY size(fresh) DESC, name
LIMIT $limit""").strip()

# What a summary of the concept may state: its current statements, newest first up to $limit.
CURRENT_ABOUT_CONCEPT = ("""
MATCH (:Concept {id: $concept_id})<-[:ABOUT_SUBJECT|ABOUT_OBJECT]-(s:Statement)
WHERE s.predicate <> $summary_predicate""" + _current("") + """
WITH DISTINCT s ORDER BY s.created_at DESC, s.id DESC LIMIT $limit""" + _STATEMENT_VIEW + _BY_AGE).strip()

# A summary is a statement about the concept (as subject and object) whose text
# is kept in ``summary``; it is written only if every basis statement exists, and
# it supersedes the source's current summary of the concept, so one summary is current.
SUMMARY_WRITE = """
MATCH (c:Concept {id: $concept_id})
OPTIONAL MATCH (existing:Statement {id: $statement.id})
WITH c, count(existing) AS existing_found WHERE existing_found = 0
OPTIONAL MATCH (b:Statement) WHERE b.id IN $basis
WITH c, collect(DISTINCT b) AS basis WHERE size(basis) = size($basis)""" + _SOURCE_MERGE + """
WITH c, basis, src
OPTIONAL MATCH (c)<-[:ABOUT_SUBJECT]-(old:Statement {predicate: $summary_predicate})-[:ASSERTED_BY]->(src)
WHERE NOT (:Statement)-[:SUPERSEDES]->(old)
WITH c, basis, src, collect(DISTINCT old) AS replaced
CREATE (w:Statement {id: $statement.id, predicate: $summary_predicate, confidence: $statement.confidence,
        negated: false, created_at: $now, sentence: $statement.summary, summary: $statement.summary})
CREATE (w)-[:ABOUT_SUBJECT]->(c)
CREATE (w)-[:ABOUT_OBJECT]->(c)
CREATE (w)-[:ASSERTED_BY]->(src)
WITH w, src, basis, replaced
UNWIND basis AS b
CREATE (w)-[:DERIVED_FROM]->(b)
WITH DISTINCT w, src, replaced
UNWIND replaced AS old
CREATE (w)-[:SUPERSEDES {reason: 'a newer summary of the concept', created_at: $now, source: src.name}]->(old)"""


# How much each concept is used now: its current statements (summaries aside), the newest first among equals.
CONCEPT_USE = ("""
MATCH (c:Concept)<-[:ABOUT_SUBJECT|ABOUT_OBJECT]-(s:Statement)
WHERE s.predicate <> $summary_predicate""" + _current("c, ") + """
WITH c, count(DISTINCT s) AS statements, max(s.created_at) AS last_at
RETURN c.id AS id, c.name AS name, statements, last_at
ORDER BY statements DESC, last_at DESC, id
LIMIT $limit""").strip()

CONCEPTS = """
MATCH (c:Concept)
RETURN c.id AS id, c.name AS name, c.kind AS kind, c.aliases AS aliases, c.created_at AS created_at
ORDER BY name, id
LIMIT $limit""".strip()

GET_CONCEPTS = """
MATCH (c:Concept) WHERE c.id IN $ids
RETURN c.id AS id, c.name AS name, c.kind AS kind, c.aliases AS aliases, c.created_at AS created_at
ORDER BY name, id""".strip()

# Search expansion: items sharing a concept with the seeds (observations by
# MENTIONS, statements by ABOUT_*), through at most $per_seed concepts of each
# seed, skipping hub concepts of more than $max_degree links, and superseded
# statements; rarest concepts first. Both caps bound the work per query.
# The degree is counted in a subquery that stops one link past the cap
# ($degree_cap = $max_degree + 1): counting every link of every hub took 13 of
# a search's ~60 ms at a million statements, the capped count 4-5 ms; a pattern
# comprehension, even sliced, walks all links and is 5-10x slower still
# (bench/README.md, "Search latency"). Superseded statements are dropped by an
# OPTIONAL MATCH from n for the same reason: NOT (:Statement)-[:SUPERSEDES]->(n)
# took 3-4 ms for 257 candidates, the optional match 0.3 ms.
SHARED_CONCEPT_NEIGHBOURS = """
UNWIND $ids AS sid
OPTIONAL MATCH (:Observation {id: sid})-[:MENTIONS]->(c1:Concept)
OPTIONAL MATCH (:Statement {id: sid})-[:ABOUT_SUBJECT|ABOUT_OBJECT]->(c2:Concept)
WITH sid, (collect(DISTINCT c1) + collect(DISTINCT c2))[..$per_seed] AS cs
UNWIND cs AS c
CALL {
  WITH c
  MATCH (c)<-[:MENTIONS|ABOUT_SUBJECT|ABOUT_OBJECT]-(x)
  WITH x LIMIT $degree_cap
  RETURN count(x) AS degree
}
WITH sid, c, degree
WHERE degree <= $max_degree
MATCH (c)<-[:MENTIONS|ABOUT_SUBJECT|ABOUT_OBJECT]-(n)
WHERE (n:Observation OR n:Statement) AND NOT n.id IN $ids
OPTIONAL MATCH (n)<-[sup:SUPERSEDES]-(later) WHERE NOT (later)<-[:RETRACTS]-(:Retraction)
OPTIONAL MATCH (n)<-[ret:RETRACTS]-(:Retraction)
WITH sid, c, degree, n, sup, ret WHERE sup IS NULL AND ret IS NULL
RETURN sid AS seed, c.name AS concept, degree, n.id AS id, CASE WHEN n:Observation THEN 'observation'
       ELSE 'statement' END AS kind
ORDER BY degree, seed, id
LIMIT $limit""".strip()

# The concept keys (and alias keys) each item is about: MENTIONS of an observation, ABOUT_* of a statement.
CONCEPT_KEYS_OF = """
UNWIND $ids AS iid
OPTIONAL MATCH (:Observation {id: iid})-[:MENTIONS]->(c1:Concept)
OPTIONAL MATCH (:Statement {id: iid})-[:ABOUT_SUBJECT|ABOUT_OBJECT]->(c2:Concept)
WITH iid, collect(DISTINCT c1) + collect(DISTINCT c2) AS cs
UNWIND cs AS c
RETURN iid AS id, c.key AS key, c.alias_keys AS alias_keys""".strip()

# -- predicate cardinality: learned from the data, or decided once and remembered ----

# Per subject, the most distinct current (not superseded, retracted or negated) values of the
# predicate that one source asserts; statements in $exclude (the ones being checked) left out.
PREDICATE_VALUES = ("""
MATCH (s:Statement {predicate: $predicate})-[:ABOUT_SUBJECT]->(subj:Concept)
WHERE NOT s.id IN $exclude AND NOT coalesce(s.negated, false)
""" + _current("subj, ") + """
MATCH (s)-[:ABOUT_OBJECT]->(obj:Concept)
MATCH (s)-[:ASSERTED_BY]->(src:Source) WHERE NOT src.name IN $workers
WITH subj, src, count(DISTINCT obj) AS values
WITH subj, max(values) AS values
RETURN count(subj) AS subjects, sum(CASE WHEN values > 1 THEN 1 ELSE 0 END) AS multi_subjects""").strip()

PREDICATE_DECISION = """
MATCH (p:Predicate {name: $name}) WHERE p.cardinality IS NOT NULL
RETURN p.cardinality AS cardinality, p.decided_by AS decided_by""".strip()

# The first decision wins: a racing second worker's MERGE finds it made and changes nothing. The node may
# exist already with the relation the predicate means (RECORD_PREDICATE_RELATION), and no decision yet.
RECORD_PREDICATE_DECISION = """
MERGE (p:Predicate {name: $name})
ON CREATE SET p.id = $id, p.created_at = $now
WITH p
WHERE p.cardinality IS NULL
SET p.cardinality = $cardinality, p.decided_by = $decided_by
RETURN p.cardinality AS cardinality, p.decided_by AS decided_by""".strip()

# A predicate's relation in the vocabulary, found by meaning (``service/relations.py``): the first mapping
# stands, and a predicate found to mean none keeps its own name as its relation.
PREDICATE_RELATIONS = """
MATCH (p:Predicate) WHERE p.name IN $names AND p.relation IS NOT NULL
RETURN p.name AS name, p.relation AS relation""".strip()

RECORD_PREDICATE_RELATION = """
MERGE (p:Predicate {name: $name})
ON CREATE SET p.id = $id, p.created_at = $now
WITH p
WHERE p.relation IS NULL
SET p.relation = $relation, p.similarity = $similarity, p.related_by = $related_by
RETURN p.relation AS relation""".strip()

# The registry of memory spaces (besides ``default``), in the default space's graph; kept by ``clear``.
# Each space's items live in a graph of their own, so no query of one space can reach another's.
SPACE_CREATE = """
MERGE (s:Space {name: $name})
ON CREATE SET s.created_at = $now, s.created_by = $by, s.server = $server
RETURN s.name AS name, s.created_at AS created_at, s.created_by AS created_by, coalesce(s.server, '') AS server""".strip()

SPACES = """
MATCH (s:Space)
RETURN s.name AS name, s.created_at AS created_at, s.created_by AS created_by, coalesce(s.server, '') AS server
ORDER BY name""".strip()

SPACE_DELETE = """
MATCH (s:Space {name: $name})
DELETE s
RETURN count(*) AS n""".strip()

# A share: space $target reads space $source (read-only, not transitive). One record per pair.
SHARE_CREATE = """
MERGE (sh:Share {target: $target, source: $source})
ON CREATE SET sh.created_at = $now, sh.created_by = $by
RETURN sh.target AS target, sh.source AS source""".strip()

SHARES = """
MATCH (sh:Share)
RETURN sh.target AS target, sh.source AS source
ORDER BY target, source""".strip()

SHARE_DELETE = """
MATCH (sh:Share {target: $target, source: $source})
DELETE sh
RETURN count(*) AS n""".strip()

# A deleted space is read by no one and reads nothing.
SHARES_OF_SPACE_DELETE = """
MATCH (sh:Share) WHERE sh.target = $name OR sh.source = $name
DELETE sh
RETURN count(*) AS n""".strip()

# -- retractions: taking a statement or observation back, append-only ----

# One retraction per item: a second finds the first (whoever asks, whatever the reason) and writes nothing.
# The label of the target is one of two static fragments, chosen by the store after reading the node.
_RETRACT = """
OPTIONAL MATCH (t)<-[done:RETRACTS]-(:Retraction)
WITH t, count(done) AS done_found WHERE done_found = 0
CREATE (r:Retraction {id: $id, reason: $reason, source: $source, created_at: $now, target_kind: $kind})
CREATE (r)-[:RETRACTS {created_at: $now}]->(t)"""
RETRACT_STATEMENT = ("MATCH (t:Statement {id: $target_id})" + _RETRACT).strip()
RETRACT_OBSERVATION = ("MATCH (t:Observation {id: $target_id})" + _RETRACT).strip()

# Each target found by its label's id index: "MATCH (r:Retraction)-[:RETRACTS]->(t) WHERE t.id IN $ids"
# was planned as a scan of every node for t (FalkorDB: 217 ms per search at a million statements).
RETRACTIONS_OF = """
UNWIND $ids AS target
WITH DISTINCT target
OPTIONAL MATCH (s:Statement {id: target})
OPTIONAL MATCH (o:Observation {id: target})
WITH coalesce(s, o) AS t WHERE t IS NOT NULL
MATCH (r:Retraction)-[:RETRACTS]->(t)
RETURN r.id AS id, t.id AS target_id, r.target_kind AS kind, r.reason AS reason, r.source AS source,
       r.created_at AS created_at, coalesce(t.sentence, t.summary, t.raw_content, '') AS target_text
ORDER BY created_at, id""".strip()

RETRACTIONS_SINCE = """
MATCH (r:Retraction)-[:RETRACTS]->(t)
WHERE r.created_at >= $since
RETURN r.id AS id, t.id AS target_id, r.target_kind AS kind, r.reason AS reason, r.source AS source,
       r.created_at AS created_at, coalesce(t.sentence, t.summary, t.raw_content, '') AS target_text
ORDER BY created_at DESC, id
LIMIT $limit""".strip()

# -- forget: erasure of observations and what stands only on them (admin) ----

# What a source wrote: its observations, the statements it asserted, and its Source nodes (any kind).
SOURCE_ITEMS = """
MATCH (src:Source) WHERE src.key IN $keys
OPTIONAL MATCH (o:Observation)-[:RECORDED_BY]->(src)
WITH src, collect(DISTINCT o.id) AS observations
OPTIONAL MATCH (s:Statement)-[:ASSERTED_BY]->(src)
RETURN src.id AS source, observations, collect(DISTINCT s.id) AS statements""".strip()

# Statements derived from any of the items, each with everything it is derived from.
DERIVED_WITH_BASES = """
UNWIND $ids AS did
OPTIONAL MATCH (:Observation {id: did})<-[:DERIVED_FROM]-(s1:Statement)
OPTIONAL MATCH (:Statement {id: did})<-[:DERIVED_FROM]-(s2:Statement)
WITH collect(DISTINCT s1) + collect(DISTINCT s2) AS found
UNWIND found AS s
WITH DISTINCT s
MATCH (s)-[:DERIVED_FROM]->(b)
RETURN s.id AS id, collect(DISTINCT b.id) AS bases, s.summary IS NOT NULL AS summary""".strip()

# The concepts the items are about (and the parts those are decomposed into), each with every node
# that uses it: items mentioning it or about it, and concepts decomposed into it.
CONCEPT_USERS = """
UNWIND $ids AS iid
OPTIONAL MATCH (:Observation {id: iid})-[:MENTIONS]->(c1:Concept)
OPTIONAL MATCH (:Statement {id: iid})-[:ABOUT_SUBJECT|ABOUT_OBJECT]->(c2:Concept)
WITH collect(DISTINCT c1) + collect(DISTINCT c2) AS cs
UNWIND cs AS c0
OPTIONAL MATCH (c0)-[:RELATED_TO]->(part:Concept)
WITH collect(DISTINCT c0) + collect(DISTINCT part) AS all
UNWIND all AS c
WITH DISTINCT c
OPTIONAL MATCH (c)<-[:MENTIONS|ABOUT_SUBJECT|ABOUT_OBJECT|RELATED_TO]-(u)
RETURN c.id AS id, collect(DISTINCT u.id) AS users""".strip()

# One atomic erasure: the tombstone (what kind, how many, when, by whom; never content) and the nodes.
FORGET = """
OPTIONAL MATCH (existing:Tombstone {id: $id})
WITH count(existing) AS existing_found WHERE existing_found = 0
CREATE (t:Tombstone {id: $id, kind: $kind, space: $space, observations: $counts.observations,
        statements: $counts.statements, concepts: $counts.concepts, retractions: $counts.retractions,
        sources: $counts.sources, vectors: $counts.vectors, at: $now, by: $by})
WITH t
OPTIONAL MATCH (s:Statement) WHERE s.id IN $statements
DETACH DELETE s
WITH t, count(*) AS done
OPTIONAL MATCH (o:Observation) WHERE o.id IN $observations
DETACH DELETE o
WITH t, count(*) AS done
OPTIONAL MATCH (c:Concept) WHERE c.id IN $concepts
DETACH DELETE c
WITH t, count(*) AS done
OPTIONAL MATCH (r:Retraction) WHERE r.id IN $retractions
DETACH DELETE r
WITH t, count(*) AS done
OPTIONAL MATCH (src:Source) WHERE src.id IN $sources
DETACH DELETE src
WITH t, count(*) AS done
RETURN t.id AS id""".strip()

TOMBSTONES = """
MATCH (t:Tombstone)
RETURN t.id AS id, t.kind AS kind, coalesce(t.space, 'default') AS space, t.observations AS observations, t.statements AS statements,
       t.concepts AS concepts, t.retractions AS retractions, t.sources AS sources, t.vectors AS vectors,
       t.at AS at, t.by AS by
ORDER BY at DESC, id DESC
LIMIT $limit""".strip()

LABELS: tuple[str, ...] = ("Concept", "Statement", "Observation", "Source", "Predicate", "Retraction", "Tombstone")
# Token revocations: kept by ``clear`` (erasing memories must not bring revoked tokens back).
REVOKE_TOKEN = """
MERGE (r:TokenRevocation {id: $id})
ON CREATE SET r.revoked_at = $now, r.revoked_by = $by
RETURN r.id AS id""".strip()

REVOKED_TOKENS = """
MATCH (r:TokenRevocation)
RETURN r.id AS id
ORDER BY r.revoked_at DESC
LIMIT $limit""".strip()

# The audit log: append-only records of client write and admin calls, kept by ``clear``.
AUDIT_WRITE = """
CREATE (:AuditRecord {id: $id, at: $at, who: $who, method: $method, node: $node, outcome: $outcome,
                      detail: $detail, spaces: $spaces})""".strip()

# ``$every``: all records; else those filed under some of ``$spaces`` and no other (records written before
# they were filed by space, and those of calls about the network as a whole, have none: every-space only).
AUDIT_LOG = """
MATCH (a:AuditRecord)
WHERE $every OR (size(coalesce(a.spaces, [])) > 0 AND all(s IN a.spaces WHERE s IN $spaces))
RETURN a.id AS id, a.at AS at, a.who AS who, a.method AS method, a.node AS node, a.outcome AS outcome,
       a.detail AS detail, coalesce(a.spaces, []) AS spaces
ORDER BY a.at DESC, a.id DESC
LIMIT $limit""".strip()

RELATIONSHIP_TYPES: tuple[str, ...] = (
    "ABOUT_SUBJECT", "ABOUT_OBJECT", "DERIVED_FROM", "ASSERTED_BY", "SUPERSEDES", "CONTRADICTS",
    "MENTIONS", "RECORDED_BY", "RELATED_TO", "PROCESSED", "RETRACTS",
)

# Per label, so each branch can use that label's id index.
GET_NODE = "\nUNION ALL\n".join(
    f"MATCH (n:{label} {{id: $id}}) RETURN '{label}' AS label, properties(n) AS props" for label in LABELS
)

# Ids starting with a prefix: the short ids the CLI prints (``obs-1a2b3c4d``) resolved to full ones.
IDS_WITH_PREFIX = "\nUNION ALL\n".join(
    f"MATCH (n:{label}) WHERE n.id STARTS WITH $prefix RETURN n.id AS id LIMIT $limit" for label in LABELS
)

COUNTS = """
MATCH (n) RETURN labels(n)[0] AS name, count(*) AS n
UNION ALL
MATCH ()-[r]->() RETURN type(r) AS name, count(*) AS n""".strip()


def all_queries() -> dict[str, str]:
    """Every Cypher text the store can send, by name, so linting misses none."""
    found: dict[str, str] = {
        name: value for name, value in globals().items()
        if name.isupper() and not name.startswith("_") and isinstance(value, str)
    }
    for flags in itertools.product((False, True), repeat=3):
        found["observation_write" + "".join(str(int(f)) for f in flags)] = observation_write(*flags)
        found["inference_write" + "".join(str(int(f)) for f in flags)] = inference_write(*flags)
        found["extraction_write" + "".join(str(int(f)) for f in flags)] = extraction_write(*flags)
    for flags in itertools.product((False, True), repeat=4):
        found["claim_write" + "".join(str(int(f)) for f in flags)] = claim_write(*flags)
    # Flags that do not change the text (no concepts -> no later stages) give duplicates.
    return {name: text for text, name in {text: name for name, text in reversed(found.items())}.items()}
