"""``GraphStore``: the append-only graph of reified triples, on Neo4j 5 or FalkorDB.

All Cypher lives in ``graph_cypher``; what differs per engine lives in
``dialects``. Every entry point validates its input before any I/O, so bad
input raises ``ValueError`` naming the field and writes nothing.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Literal

from pydantic import Field

from mnemonet.model import (
    AuditView,
    ClaimRecord,
    ConceptRelationView,
    ConceptView,
    ContradictionView,
    ObservationRecord,
    ObservationView,
    RetractionView,
    SourceSpec,
    StatementView,
    TombstoneView,
    WriteResult,
)
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import derived_id
from mnemonet.model.records import WORKER_SOURCES, ConceptSpec, StatementSpec, check_id, check_name, check_text
from mnemonet.settings import Settings
from mnemonet.store import datadir
from mnemonet.store import graph_cypher as q
from mnemonet.store.cypher_guard import check_read_only
from mnemonet.store.dialects.base import GraphDriver
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.graph_errors import UnknownReference, WriteConflict
from mnemonet.store.graph_group import WriteGroup
from mnemonet.store.graph_params import (
    EXTRACTOR_KEY,
    claim_params,
    extraction_params,
    inference_params,
    name_key,
    observation_params,
    source_key,
    source_params,
)

log = logging.getLogger(__name__)

LinkKind = Literal["SUPERSEDES", "CONTRADICTS"]
# The predicate of consolidation summaries (statements whose text is in ``summary``).
SUMMARY_PREDICATE = "has_summary"
_LINKS: dict[str, str] = {"SUPERSEDES": q.LINK_SUPERSEDES, "CONTRADICTS": q.LINK_CONTRADICTS}


class ExtractionWritten(WriteResult):
    """``write_extraction``'s result, with the statements it created as ``statements_from_observation`` reads
    them (newest first), so its caller need not read them back."""

    statements: list[StatementView] = Field(default_factory=list)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _epoch_ms(since: object, field: str = "since") -> int:
    """A caller's time as epoch ms: a non-negative integer."""
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise InvalidInput(f"{field}: must be a non-negative epoch-ms integer")
    return since


class GraphStore:
    """Async, append-only graph store behind one engine seam (``GraphDriver``)."""

    def __init__(self, driver: GraphDriver, settings: Settings) -> None:
        self.driver = driver
        self.settings = settings  # passed in, never read from the environment here: the caller's limits hold
        self.server: EmbeddedFalkorDB | None = None  # set by open() when it started one
        self._lock: datadir.DataDirLock | None = None  # the data dir's lock, when open() took it
        # Per-observation writes share round trips and fsyncs when concurrent (graph_group.py).
        self._group = WriteGroup(driver, max_size=settings.graph_group_commit_max,
                                 wait=settings.graph_group_commit_wait)

    @property
    def write_groups(self) -> WriteGroup:
        """The group commit of this graph's per-observation writes (its ``groups``/``writes`` counters)."""
        return self._group

    @classmethod
    async def open(cls, settings: Settings) -> GraphStore:
        """Connect to the configured engine.

        Embedded FalkorDB is started when ``falkordb_port`` is 0 or no host is set.
        """
        if settings.graph_backend == "neo4j":
            from mnemonet.store.dialects.neo4j import Neo4jDriver

            driver: GraphDriver = Neo4jDriver(
                settings.neo4j_uri, settings.neo4j_user, settings.neo4j_password, settings.neo4j_database,
                timeout=settings.graph_query_timeout,
            )
            return cls(driver, settings)
        from mnemonet.store.dialects.falkordb import FalkorDriver
        from mnemonet.store.falkordb_replicas import Replicas, parse_addresses

        server = None
        lock = None
        host, port = settings.falkordb_host, settings.falkordb_port
        password = settings.falkordb_password or None
        if port == 0 or not host:
            lock = datadir.hold(settings.data_dir)  # shared with the node's, inside a node
            server = EmbeddedFalkorDB(settings.data_dir / "falkordb", start_timeout=settings.falkordb_start_timeout,
                                      stop_timeout=settings.falkordb_stop_timeout)
            try:
                await server.start()
            except BaseException:
                if lock is not None:
                    lock.release()
                raise
            host, port, password = server.host, server.port, server.password
        replicas = parse_addresses(settings.falkordb_replicas)
        # One connection for each request the node admits at once (whatever else a request runs waits for one).
        driver = FalkorDriver(host, port, settings.graph_name, timeout=settings.graph_query_timeout, password=password,
                              replicas=Replicas(replicas, password, settings.falkordb_replica_wait,
                                                settings.falkordb_replica_poll, settings.graph_query_timeout)
                              if replicas else None,
                              max_connections=settings.max_concurrent_requests)
        store = cls(driver, settings)
        store.server = server
        store._lock = lock
        return store

    @classmethod
    def on_falkordb(cls, settings: Settings, host: str, port: int, password: str | None) -> GraphStore:
        """A store on another FalkorDB server (one memory spaces are placed on); never an embedded one."""
        from mnemonet.store.dialects.falkordb import FalkorDriver

        return cls(FalkorDriver(host, port, settings.graph_name, timeout=settings.graph_query_timeout,
                                password=password), settings)

    async def close(self) -> None:
        """Close the connection, and stop the embedded server if ``open`` started it."""
        await self.driver.close()
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def for_space(self, graph_name: str) -> GraphStore:
        """The store of another graph on the same engine and connection: one memory space's graph.

        Isolation is by construction: every query of the returned store runs in its own graph,
        so nothing in it can match, merge with or link to another space's nodes.
        """
        return GraphStore(self.driver.for_graph(graph_name), self.settings)

    async def drop(self) -> None:
        """Delete this whole graph (a deleted space)."""
        log.warning("graph.drop backend=%s", self.driver.name)
        await self.driver.drop()

    async def record_space(self, name: str, by: str, server: str = "") -> dict[str, Any]:
        """Register a space, on engine server ``server`` ('' the default ones); idempotent: the first stands."""
        params = {"name": name, "by": check_name(by, "by"), "now": _now_ms(), "server": server}
        rows = (await self._write_once_or_conflict_rows(q.SPACE_CREATE, params))
        return rows[0]

    async def registered_spaces(self) -> list[dict[str, Any]]:
        """The registered spaces, by name: ``{name, created_at, created_by, server}`` ('' the default servers)."""
        return await self.driver.read(q.SPACES, {})

    async def unregister_space(self, name: str) -> bool:
        """Remove a space from the registry; False if it was not registered."""
        rows = (await self.driver.write(q.SPACE_DELETE, {"name": name})).rows
        return bool(rows and rows[0]["n"])

    async def record_share(self, target: str, source: str, by: str) -> None:
        """Let space ``target`` read space ``source`` (idempotent; the first record stands)."""
        params = {"target": target, "source": source, "by": check_name(by, "by"), "now": _now_ms()}
        await self.driver.write(q.SHARE_CREATE, params)

    async def shares(self) -> list[dict[str, Any]]:
        """Every share: ``{target, source}`` (``target`` reads ``source``)."""
        return await self.driver.read(q.SHARES, {})

    async def remove_share(self, target: str, source: str) -> bool:
        """Stop ``target`` reading ``source``; False if it did not."""
        rows = (await self.driver.write(q.SHARE_DELETE, {"target": target, "source": source})).rows
        return bool(rows and rows[0]["n"])

    async def remove_shares_of(self, name: str) -> None:
        """Remove every share a space is either side of (it is being deleted)."""
        await self.driver.write(q.SHARES_OF_SPACE_DELETE, {"name": name})

    async def ping(self) -> None:
        """One real read round trip to the engine (raises ``GraphUnavailable`` when it is down)."""
        await self.driver.read(q.PING, {})

    async def ensure_indexes(self) -> None:
        """Create the indexes (and, on Neo4j, uniqueness constraints); idempotent."""
        await self.driver.ensure_schema()

    # -- writes ---------------------------------------------------------------

    async def _write_once_or_conflict_rows(self, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            return (await self.driver.write(cypher, params)).rows
        except WriteConflict:
            return (await self.driver.write(cypher, params)).rows

    async def _write_once_or_conflict(self, cypher: str, params: dict[str, Any]) -> int:
        """Run a write; a concurrent duplicate (Neo4j constraint) is retried once, then finds its id written."""
        try:
            return (await self.driver.write(cypher, params)).nodes_created
        except WriteConflict:
            return (await self.driver.write(cypher, params)).nodes_created

    async def _grouped_write_once_or_conflict(self, cypher: str, params: dict[str, Any]) -> int:
        """``_write_once_or_conflict`` through the group commit: with concurrent writers, one round trip and
        one fsync for several writes; each is still its own statement and its own outcome."""
        try:
            return (await self._group.write(cypher, params)).nodes_created
        except WriteConflict:
            return (await self._group.write(cypher, params)).nodes_created

    async def write_observation(self, obs: ObservationRecord) -> WriteResult:
        """Write an observation with its source, concepts and statements in one atomic round trip."""
        if not isinstance(obs, ObservationRecord):
            raise InvalidInput("observation: must be an ObservationRecord")
        params = observation_params(obs, _now_ms())
        cypher = q.observation_write(bool(params["concepts"]), bool(params["relations"]), bool(params["statements"]))
        created = await self._grouped_write_once_or_conflict(cypher, params) > 0
        return WriteResult(
            id=obs.id, created=created, statement_ids=[s["id"] for s in params["statements"]],
            concept_ids=[c["id"] for c in params["concepts"]],
        )

    async def write_claim(self, claim: ClaimRecord) -> WriteResult:
        """Write a claim (statement, basis, supersedes/contradicts) in one atomic round trip.

        Raises ``UnknownReference`` naming the field when a basis or target id does not exist.
        """
        if not isinstance(claim, ClaimRecord):
            raise InvalidInput("claim: must be a ClaimRecord")
        params = claim_params(claim, _now_ms())
        cypher = q.claim_write(
            bool(params["relations"]), bool(params["basis"]), bool(params["supersedes"]), bool(params["contradicts"])
        )
        created = await self._write_once_or_conflict(cypher, params) > 0
        if not created:
            await self._explain_refused_claim(params)
        return WriteResult(
            id=claim.statement.id, created=created, statement_ids=[claim.statement.id],
            concept_ids=[c["id"] for c in params["concepts"]],
        )

    async def _explain_refused_claim(self, params: dict[str, Any]) -> None:
        """The claim wrote nothing: either it exists (a retry) or it referred to a missing id."""
        if await self.driver.read(q.EXISTING_STATEMENTS, {"ids": [params["statement"]["id"]]}):
            return
        if params["targets"]:
            found = {r["id"] for r in await self.driver.read(q.EXISTING_STATEMENTS, {"ids": params["targets"]})}
            for field in ("supersedes", "contradicts"):
                missing = [link["id"] for link in params[field] if link["id"] not in found]
                if missing:
                    raise UnknownReference(f"claim.{field}", missing)
        if params["basis"]:
            found = {r["id"] for r in await self.driver.read(q.EXISTING_BASIS, {"ids": params["basis"]})}
            missing = [i for i in params["basis"] if i not in found]
            if missing:
                raise UnknownReference("claim.derived_from", missing)

    async def write_inference(
        self, observation_id: str, statements: tuple[StatementSpec, ...], source: SourceSpec,
        concepts: tuple[ConceptSpec, ...] = (),
    ) -> WriteResult:
        """Write a worker's claims about an observation with its done-marker, in one atomic round trip.

        ``created`` is False when the source had already processed the observation
        (nothing is written then); ``UnknownReference`` if the observation does not exist. The claims
        carry the observation's time: they hold from when it was said.
        ``concepts``: the observation's extracted concepts, when the claims come with its extraction.
        """
        check_id(observation_id, "observation_id")
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        if not isinstance(statements, tuple) or not all(isinstance(x, StatementSpec) for x in statements):
            raise InvalidInput("statements: must be a tuple of StatementSpec")
        if not isinstance(concepts, tuple) or not all(isinstance(x, ConceptSpec) for x in concepts):
            raise InvalidInput("concepts: must be a tuple of ConceptSpec")
        found = await self.driver.read(q.GET_OBSERVATIONS, {"ids": [observation_id]})
        if not found:
            raise UnknownReference("observation_id", [observation_id])
        now = _now_ms()
        said_at = int(found[0].get("created_at") or now)
        params = inference_params(observation_id, source, statements, said_at, now, concepts)
        cypher = q.inference_write(bool(statements), False, bool(statements))
        outcome = await self._group.write(cypher, params)
        created = outcome.relationships_created > 0
        return WriteResult(id=observation_id, created=created, statement_ids=[x.id for x in statements],
                           concept_ids=[c["id"] for c in params["concepts"]])

    async def write_extraction(
        self, observation_id: str, concepts: tuple[ConceptSpec, ...], statements: tuple[StatementSpec, ...],
        topics: tuple[str, ...] = (), error: str | None = None, said_at: int | None = None,
    ) -> ExtractionWritten:
        """Write the extraction of an observation with its done-marker, once, in one round trip.

        The statements are asserted by the observation's source and carry its time.
        ``created`` is False when the extraction was already written (nothing is written
        then); ``UnknownReference`` if the observation does not exist. ``error`` records
        why an extraction gave nothing (a malformed model result), so it is not retried forever.
        ``said_at``: the observation's ``created_at`` when the caller has just written it, so it is not
        read back first (the write matches nothing when the observation is missing, which is then
        read to tell a missing observation from a done extraction).
        """
        check_id(observation_id, "observation_id")
        if not isinstance(statements, tuple) or not all(isinstance(x, StatementSpec) for x in statements):
            raise InvalidInput("statements: must be a tuple of StatementSpec")
        if not isinstance(concepts, tuple) or not all(isinstance(x, ConceptSpec) for x in concepts):
            raise InvalidInput("concepts: must be a tuple of ConceptSpec")
        if error is not None:
            error = check_text(error, "error", 1000)
        topics = tuple(check_name(t, "topics", 80) for t in topics)
        read_first = said_at is None
        if said_at is None:
            found = await self.get_observations([observation_id])
            if not found:
                raise UnknownReference("observation_id", [observation_id])
            said_at = found[0].created_at
        params = extraction_params(observation_id, concepts, statements, topics, said_at, _now_ms(), error)
        cypher = q.extraction_write(bool(params["concepts"]), bool(params["relations"]), bool(params["statements"]))
        outcome = await self._group.write(cypher, params)
        if not read_first and outcome.relationships_created == 0 and not await self.get_observations([observation_id]):
            raise UnknownReference("observation_id", [observation_id])
        written = sorted((StatementView(**_statement_row(r)) for r in outcome.rows),
                         key=lambda v: (v.created_at, v.id), reverse=True)  # STATEMENTS_FROM_OBSERVATION's order
        return ExtractionWritten(id=observation_id, created=outcome.relationships_created > 0,
                                 statement_ids=[x.id for x in statements],
                                 concept_ids=[c["id"] for c in params["concepts"]], statements=written)

    async def extraction_state(self, observation_id: str) -> Literal["done", "pending", "failed", "none"] | None:
        """Where the observation's extraction stands: ``done``, ``pending`` (written raw, not yet
        extracted), ``failed`` (the model gave an unusable result), ``none`` (written with its
        statements, before extraction was deferred); None if there is no such observation."""
        rows = await self.driver.read(q.EXTRACTION_STATE, {"id": check_id(observation_id, "observation_id"),
                                                           "extractor_key": EXTRACTOR_KEY})
        if not rows:
            return None
        row = rows[0]
        if row["done"]:
            return "failed" if row["error"] else "done"
        return "pending" if row["extraction"] == "pending" else "none"

    async def pending_extractions(self, before: int, limit: int = 100) -> list[ObservationView]:
        """Oldest observations written raw at or before ``before`` (epoch ms) whose extraction is not done."""
        if isinstance(before, bool) or not isinstance(before, int):
            raise InvalidInput("before: must be an epoch-ms integer")
        params = {"before": before, "limit": self._limit(limit), "extractor_key": EXTRACTOR_KEY}
        return [ObservationView(**_observation_row(r)) for r in await self.driver.read(q.PENDING_EXTRACTIONS, params)]

    async def count_pending_extractions(self) -> int:
        """How many observations wait for their extraction."""
        rows = await self.driver.read(q.COUNT_PENDING_EXTRACTIONS, {"extractor_key": EXTRACTOR_KEY})
        return int(rows[0]["n"]) if rows else 0

    async def concept_keys_of(self, ids: list[str]) -> dict[str, set[str]]:
        """Per item id, the normalised names (keys and alias keys) of the concepts it is about."""
        out: dict[str, set[str]] = {}
        for r in await self.driver.read(q.CONCEPT_KEYS_OF, {"ids": self._ids(ids)}):
            out.setdefault(r["id"], set()).update([r["key"], *(r["alias_keys"] or [])])
        return out

    async def predicate_values(self, predicate: str, exclude: list[str]) -> tuple[int, int]:
        """(subjects with a current value of ``predicate``, those with more than one from one source).

        The workers' own statements do not count: a cardinality is learned from what sources said, never
        from one inferring worker's backlog (ten inferred homes of one person are ten moves, not ten homes).
        """
        name = check_name(predicate, "predicate")
        params = {"predicate": name, "exclude": self._ids(exclude, "exclude"), "workers": list(WORKER_SOURCES)}
        rows = await self.driver.read(q.PREDICATE_VALUES, params)
        if not rows:
            return 0, 0
        return int(rows[0]["subjects"] or 0), int(rows[0]["multi_subjects"] or 0)

    async def predicate_decision(self, predicate: str) -> tuple[str, str] | None:
        """The remembered (cardinality, decided_by) of a predicate outside the schema, if decided."""
        rows = await self.driver.read(q.PREDICATE_DECISION, {"name": check_name(predicate, "predicate")})
        return (rows[0]["cardinality"], rows[0]["decided_by"]) if rows else None

    async def record_predicate_decision(self, predicate: str, cardinality: str, decided_by: str) -> tuple[str, str]:
        """Remember a predicate's cardinality once; returns the decision that stands (the first one)."""
        name = check_name(predicate, "predicate")
        if cardinality not in ("single", "multi"):
            raise InvalidInput("cardinality: must be 'single' or 'multi'")
        params = {"name": name, "id": derived_id("prd", name), "cardinality": cardinality,
                  "decided_by": check_name(decided_by, "decided_by"), "now": _now_ms()}
        await self._write_once_or_conflict(q.RECORD_PREDICATE_DECISION, params)
        decision = await self.predicate_decision(name)
        assert decision is not None  # just merged
        return decision

    async def predicate_relations(self, predicates: list[str]) -> dict[str, str]:
        """The recorded relation of each predicate that has one (``record_predicate_relation``)."""
        names = [check_name(p, "predicate") for p in predicates]
        rows = await self.driver.read(q.PREDICATE_RELATIONS, {"names": names}) if names else []
        return {r["name"]: r["relation"] for r in rows}

    async def record_predicate_relation(self, predicate: str, relation: str, similarity: float, related_by: str) -> str:
        """Remember which relation a predicate means, once (the first mapping stands); the one that stands."""
        name = check_name(predicate, "predicate")
        params = {"name": name, "id": derived_id("prd", name), "relation": check_name(relation, "relation"),
                  "similarity": float(similarity), "related_by": check_name(related_by, "related_by"), "now": _now_ms()}
        await self._write_once_or_conflict(q.RECORD_PREDICATE_RELATION, params)
        return (await self.predicate_relations([name])).get(name, relation)

    async def mark_statements_processed(self, source: SourceSpec, ids: list[str]) -> int:
        """Record that ``source`` has processed the statements (``PROCESSED``); unknown ids are skipped.

        Returns how many markers are new; repeating it adds none.
        """
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        params = {"source": source_params(source), "ids": self._ids(ids), "now": _now_ms()}
        return (await self.driver.write(q.MARK_STATEMENTS_PROCESSED, params)).relationships_created

    async def write_summary(
        self, statement_id: str, concept_id: str, text: str, derived_from: list[str], source: SourceSpec,
        confidence: float = 1.0,
    ) -> WriteResult:
        """Write a summary statement about a concept, DERIVED_FROM every statement it rests on.

        ``created`` is False when the id exists (a retry); ``UnknownReference`` names a missing concept or basis.
        """
        check_id(statement_id, "statement_id")
        check_id(concept_id, "concept_id")
        text = check_text(text, "text")
        basis = list(dict.fromkeys(self._ids(derived_from, "derived_from")))
        if not basis:
            raise InvalidInput("derived_from: a summary rests on at least one statement")
        if statement_id in basis:
            raise InvalidInput("derived_from: a summary cannot rest on itself")
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        params = {
            "concept_id": concept_id, "basis": basis, "now": _now_ms(), "source": source_params(source),
            "summary_predicate": SUMMARY_PREDICATE,
            "statement": {"id": statement_id, "summary": text, "confidence": float(confidence)},
        }
        created = await self._write_once_or_conflict(q.SUMMARY_WRITE, params) > 0
        if not created and not await self.driver.read(q.EXISTING_STATEMENTS, {"ids": [statement_id]}):
            if not await self.get_concepts([concept_id]):
                raise UnknownReference("concept_id", [concept_id])
            found = {r["id"] for r in await self.driver.read(q.EXISTING_STATEMENTS, {"ids": basis})}
            raise UnknownReference("derived_from", [i for i in basis if i not in found])
        return WriteResult(id=statement_id, created=created, statement_ids=[statement_id], concept_ids=[concept_id])

    async def link_statements(
        self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: SourceSpec
    ) -> bool:
        """Add a SUPERSEDES or CONTRADICTS edge; False if it already existed (CONTRADICTS in either direction)."""
        if kind not in _LINKS:
            raise InvalidInput("kind: must be 'SUPERSEDES' or 'CONTRADICTS'")
        check_id(from_id, "from_id")
        check_id(to_id, "to_id")
        if from_id == to_id:
            raise InvalidInput("to_id: a statement cannot be linked to itself")
        if not isinstance(reason, str) or len(reason) > 1000:
            raise InvalidInput("reason: must be a string of at most 1000 characters")
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        params = {"from_id": from_id, "to_id": to_id, "reason": reason, "now": _now_ms(), "source": source.name}
        outcome = await self.driver.write(_LINKS[kind], params)
        if outcome.relationships_created:
            return True
        found = {r["id"] for r in await self.driver.read(q.EXISTING_STATEMENTS, {"ids": [from_id, to_id]})}
        for field, value in (("from_id", from_id), ("to_id", to_id)):
            if value not in found:
                raise UnknownReference(field, [value])
        return False

    async def retract(
        self, retraction_id: str, target_id: str, kind: Literal["statement", "observation"], reason: str, source: str
    ) -> bool:
        """Append a retraction of a statement or observation; False if the item was retracted already.

        Nothing is deleted or updated: readers leave retracted items (and what stands only on them) out.
        """
        if kind not in ("statement", "observation"):
            raise InvalidInput("kind: must be 'statement' or 'observation'")
        params = {"id": check_id(retraction_id, "retraction_id"), "target_id": check_id(target_id, "id"),
                  "kind": kind, "reason": check_text(reason, "reason", self.settings.retract_reason_max_chars),
                  "source": check_name(source, "source"), "now": _now_ms()}
        cypher = q.RETRACT_STATEMENT if kind == "statement" else q.RETRACT_OBSERVATION
        return (await self.driver.write(cypher, params)).nodes_created > 0

    async def retractions_of(self, ids: list[str]) -> list[RetractionView]:
        """The retractions of any of the items, oldest first."""
        rows = await self.driver.read(q.RETRACTIONS_OF, {"ids": self._ids(ids)})
        return [RetractionView(**r) for r in rows]

    async def retractions_since(self, since: int, limit: int) -> list[RetractionView]:
        """Retractions made at or after ``since`` (epoch ms), newest first."""
        rows = await self.driver.read(q.RETRACTIONS_SINCE, {"since": _epoch_ms(since), "limit": self._limit(limit)})
        return [RetractionView(**r) for r in rows]

    async def statements_derived_from(
        self, item_id: str, kind: Literal["statement", "observation"]
    ) -> list[StatementView]:
        """Statements DERIVED_FROM the statement or observation."""
        cypher = q.STATEMENTS_FROM_STATEMENT if kind == "statement" else q.STATEMENTS_FROM_OBSERVATION
        return await self._statements(cypher, {"id": check_id(item_id, "id")})

    # -- forget ---------------------------------------------------------------

    def _chunks(self, ids: list[str]) -> list[list[str]]:
        size = self.settings.graph_ids_per_read_max
        return [ids[i:i + size] for i in range(0, len(ids), size)]

    async def source_items(self, name: str) -> tuple[list[str], list[str], list[str]]:
        """(Source node ids, observation ids, statement ids) a source of that name (any kind) wrote."""
        name = check_name(name, "source")
        keys = [source_key(kind, name) for kind in ("user", "agent", "system")]
        sources: list[str] = []
        observations: set[str] = set()
        statements: set[str] = set()
        for r in await self.driver.read(q.SOURCE_ITEMS, {"keys": keys}):
            sources.append(str(r["source"]))
            observations.update(r["observations"] or [])
            statements.update(r["statements"] or [])
        return sources, sorted(observations), sorted(statements)

    async def derived_with_bases(self, ids: list[str]) -> list[tuple[str, set[str], bool]]:
        """(statement id, everything it is derived from, is a summary) of the statements derived from the items."""
        out = []
        for chunk in self._chunks([check_id(i, "ids") for i in ids]):
            rows = await self.driver.read(q.DERIVED_WITH_BASES, {"ids": chunk})
            out += [(str(r["id"]), set(r["bases"] or []), bool(r["summary"])) for r in rows]
        return out

    async def concept_users(self, ids: list[str]) -> dict[str, set[str]]:
        """For each concept the items are about (and each part those are decomposed into), the ids of
        every node using it."""
        out: dict[str, set[str]] = {}
        for chunk in self._chunks([check_id(i, "ids") for i in ids]):
            for r in await self.driver.read(q.CONCEPT_USERS, {"ids": chunk}):
                out.setdefault(str(r["id"]), set()).update(r["users"] or [])
        return out

    async def all_retractions_of(self, ids: list[str]) -> list[RetractionView]:
        """The retractions of any of the items, however many ids."""
        out = []
        for chunk in self._chunks(ids):
            out += await self.retractions_of(chunk)
        return out

    async def existing_items(self, ids: list[str]) -> set[str]:
        """The ids of observations, statements and concepts that exist, however many ids."""
        found: set[str] = set()
        for chunk in self._chunks([check_id(i, "ids") for i in ids]):
            found.update(str(r["id"]) for r in await self.driver.read(q.EXISTING_ITEMS, {"ids": chunk}))
        return found

    async def all_observations(self, ids: list[str]) -> list[ObservationView]:
        """Observations by id, however many ids."""
        out = []
        for chunk in self._chunks(ids):
            out += await self.get_observations(chunk)
        return out

    async def forget(self, tombstone: TombstoneView, erase: dict[str, list[str]]) -> bool:
        """Delete the nodes in ``erase`` (lists of ids under ``observations``, ``statements``, ``concepts``,
        ``retractions``, ``sources``) with their relationships and write the tombstone, in one atomic
        statement; False if that tombstone exists already (the same erasure ran)."""
        counts = {k: getattr(tombstone, k) for k in
                  ("observations", "statements", "concepts", "retractions", "sources", "vectors")}
        params = {"id": check_id(tombstone.id, "id"), "kind": tombstone.kind, "space": tombstone.space,
                  "counts": counts, "now": tombstone.at,
                  "by": check_name(tombstone.by, "by"),
                  **{k: [check_id(i, k) for i in erase.get(k, [])]
                     for k in ("observations", "statements", "concepts", "retractions", "sources")}}
        return (await self.driver.write(q.FORGET, params)).nodes_created > 0

    async def compact(self) -> bool:
        """Rewrite the engine's files so deleted bytes are gone; False if the engine cannot be made to."""
        return await self.driver.compact(self.settings.forget_compaction_timeout, self.settings.forget_compaction_poll)

    async def tombstones(self, limit: int = 50) -> list[TombstoneView]:
        """Tombstones of erasures, newest first."""
        return [TombstoneView(**r) for r in await self.driver.read(q.TOMBSTONES, {"limit": self._limit(limit)})]

    # -- reads ----------------------------------------------------------------

    def _limit(self, limit: object, field: str = "limit") -> int:
        top = self.settings.graph_read_limit_max
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= top:
            raise InvalidInput(f"{field}: must be an integer from 1 to {top}")
        return limit

    def _ids(self, ids: object, field: str = "ids") -> list[str]:
        if not isinstance(ids, (list, tuple)) or len(ids) > self.settings.graph_ids_per_read_max:
            raise InvalidInput(f"{field}: must be a list of at most {self.settings.graph_ids_per_read_max} ids")
        return [check_id(i, field) for i in ids]

    async def _statements(self, cypher: str, params: dict[str, Any]) -> list[StatementView]:
        return [StatementView(**_statement_row(r)) for r in await self.driver.read(cypher, params)]

    async def statements_about(
        self, concept: str, limit: int = 50, include_superseded: bool = False
    ) -> list[StatementView]:
        """Statements with the concept (by name or alias) as subject or object, most confident and recent first."""
        key = name_key(check_name(concept, "concept"), "concept")
        if not isinstance(include_superseded, bool):
            raise InvalidInput("include_superseded: must be true or false")
        params = {"key": key, "limit": self._limit(limit), "include_superseded": include_superseded}
        return await self._statements(q.STATEMENTS_ABOUT, params)

    async def statements_from_observation(self, observation_id: str) -> list[StatementView]:
        """Statements DERIVED_FROM the observation."""
        return await self._statements(q.STATEMENTS_FROM_OBSERVATION, {"id": check_id(observation_id, "observation_id")})

    async def shared_concept_neighbours(
        self, ids: list[str], max_degree: int, limit: int, per_seed: int
    ) -> list[dict[str, Any]]:
        """Observations and current statements sharing a non-hub concept with the given items (one hop).

        Rows ``{seed, concept, degree, id, kind}``, rarest concept first; only
        ``per_seed`` concepts of each item are followed, and a concept with
        more than ``max_degree`` links is a hub and skipped.
        """
        params = {
            "ids": self._ids(ids), "max_degree": self._limit(max_degree, "max_degree"),
            "degree_cap": self._limit(max_degree, "max_degree") + 1,
            "limit": self._limit(limit), "per_seed": self._limit(per_seed, "per_seed"),
        }
        return await self.driver.read(q.SHARED_CONCEPT_NEIGHBOURS, params)

    async def statements_by_source(self, source_name: str, derived_from: list[str]) -> list[StatementView]:
        """Statements the named source asserted and derived from any of the ids: what a worker already did."""
        name = check_name(source_name, "source_name")
        keys = [source_key(kind, name) for kind in ("user", "agent", "system")]
        params = {"source_keys": keys, "ids": self._ids(derived_from, "derived_from")}
        return await self._statements(q.STATEMENTS_BY_SOURCE, params)

    async def pending_observations(self, source: SourceSpec, limit: int = 100) -> list[ObservationView]:
        """Oldest observations ``source`` has not marked ``PROCESSED`` yet: a worker's backlog."""
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        params = {"source_key": source_key(source.kind, source.name), "limit": self._limit(limit)}
        return [ObservationView(**_observation_row(r)) for r in await self.driver.read(q.PENDING_OBSERVATIONS, params)]

    async def pending_statements(self, source: SourceSpec, limit: int = 100) -> list[StatementView]:
        """Oldest statements ``source`` has not marked ``PROCESSED`` yet."""
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        params = {"source_key": source_key(source.kind, source.name), "limit": self._limit(limit)}
        return await self._statements(q.PENDING_STATEMENTS, params)

    async def consolidation_candidates(
        self, source: SourceSpec, min_new: int, limit: int = 10
    ) -> list[tuple[str, str]]:
        """(concept id, name) of concepts due a summary by ``source``: with at least
        ``min_new`` current statements no summary of its rests on yet, or whose current summary rests on a
        statement superseded or contradicted since it was written; most fresh first."""
        if not isinstance(source, SourceSpec):
            raise InvalidInput("source: must be a SourceSpec")
        if isinstance(min_new, bool) or not isinstance(min_new, int) or min_new < 1:
            raise InvalidInput("min_new: must be a positive integer")
        params = {"source_key": source_key(source.kind, source.name), "min_new": min_new,
                  "limit": self._limit(limit), "summary_predicate": SUMMARY_PREDICATE}
        rows = await self.driver.read(q.CONSOLIDATION_CANDIDATES, params)
        return [(r["id"], r["name"]) for r in rows]

    async def current_statements_of(self, concept_id: str, limit: int) -> list[StatementView]:
        """The concept's current statements (summaries and superseded ones aside): the newest ``limit``,
        oldest first."""
        params = {"concept_id": check_id(concept_id, "concept_id"), "limit": self._limit(limit),
                  "summary_predicate": SUMMARY_PREDICATE}
        return await self._statements(q.CURRENT_ABOUT_CONCEPT, params)

    async def get_statements(self, ids: list[str]) -> list[StatementView]:
        """Statements by id, with names and provenance; unknown ids are absent from the result."""
        if not (checked := self._ids(ids)):
            return []  # no ids, no round trip (as for every read by id)
        return await self._statements(q.GET_STATEMENTS, {"ids": checked})

    async def recent_statements(self, limit: int = 20) -> list[StatementView]:
        """Newest statements first, with subject, object and source names."""
        return await self._statements(q.RECENT_STATEMENTS, {"limit": self._limit(limit)})

    async def superseded_since(self, since: int, limit: int) -> list[StatementView]:
        """Statements replaced at or after ``since`` (epoch ms) by a statement that stands, newest first."""
        params = {"since": _epoch_ms(since), "limit": self._limit(limit), "summary_predicate": SUMMARY_PREDICATE}
        return await self._statements(q.SUPERSEDED_SINCE, params)

    async def unresolved_contradictions(self, limit: int = 50) -> list[ContradictionView]:
        """Contradictions where neither side is superseded, newest first."""
        return await self._contradictions(await self.driver.read(q.UNRESOLVED_CONTRADICTIONS,
                                                                 {"limit": self._limit(limit)}))

    async def unresolved_contradictions_of(self, ids: list[str]) -> list[ContradictionView]:
        """The contradictions touching any of the statements where neither side is superseded, newest first
        (read a bounded chunk of ids at a time)."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
            raise InvalidInput("ids: must be a list of ids")
        step, found = self.settings.graph_ids_per_read_max, {}
        for at in range(0, len(ids), step):
            for r in await self.driver.read(q.UNRESOLVED_CONTRADICTIONS_OF, {"ids": self._ids(ids[at:at + step])}):
                found[r["a"], r["b"]] = r
        newest_first = sorted(found.values(), key=lambda r: (-(r["created_at"] or 0), r["a"], r["b"]))
        return await self._contradictions(newest_first)

    async def _contradictions(self, rows: list[dict[str, Any]]) -> list[ContradictionView]:
        if not rows:
            return []
        ids = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
        views = {v.id: v for v in await self.get_statements(ids)}
        return [
            ContradictionView(
                a=views[r["a"]], b=views[r["b"]], reason=r["reason"] or "", created_at=r["created_at"] or 0
            )
            for r in rows if r["a"] in views and r["b"] in views
        ]

    async def concept_decomposition(self, name: str) -> list[ConceptRelationView]:
        """The sub-concepts a concept (by name or alias) is RELATED_TO, with the relation."""
        key = name_key(check_name(name, "name"), "name")
        rows = await self.driver.read(q.CONCEPT_DECOMPOSITION, {"key": key})
        return [ConceptRelationView(relation=r.pop("relation"), concept=ConceptView(**_concept_row(r))) for r in rows]

    async def recent_observations(self, limit: int = 20, since: int | None = None) -> list[ObservationView]:
        """Newest observations first, optionally only those created at or after ``since`` (epoch ms)."""
        start = 0 if since is None else _epoch_ms(since)
        rows = await self.driver.read(q.RECENT_OBSERVATIONS, {"limit": self._limit(limit), "since": start})
        return [ObservationView(**_observation_row(r)) for r in rows]

    async def extracted_from(self, statement_ids: list[str]) -> dict[str, ObservationView]:
        """For each statement extracted from an observation (in the same write), that observation, without its
        topics (empty: search, which folds statement hits into it, reads none).

        Statements claimed later about an observation are absent: they were not extracted from it.
        """
        rows = await self.driver.read(q.EXTRACTED_FROM, {"ids": self._ids(statement_ids, "statement_ids")})
        found: dict[str, ObservationView] = {}
        for r in rows:
            statement = r.pop("statement")
            found.setdefault(statement, ObservationView(**_observation_row(r)))
        return found

    async def get_observations(self, ids: list[str]) -> list[ObservationView]:
        """Observations by id; unknown ids are absent from the result."""
        if not (checked := self._ids(ids)):
            return []
        rows = await self.driver.read(q.GET_OBSERVATIONS, {"ids": checked})
        return [ObservationView(**_observation_row(r)) for r in rows]

    async def concepts(self, limit: int = 100) -> list[ConceptView]:
        """Concepts by name."""
        rows = await self.driver.read(q.CONCEPTS, {"limit": self._limit(limit)})
        return [ConceptView(**_concept_row(r)) for r in rows]

    async def concept_use(self, limit: int) -> list[dict[str, Any]]:
        """The concepts most current statements are about (summaries aside): ``{id, name, statements, last_at}``."""
        params = {"limit": self._limit(limit), "summary_predicate": SUMMARY_PREDICATE}
        return await self.driver.read(q.CONCEPT_USE, params)

    async def get_concepts(self, ids: list[str]) -> list[ConceptView]:
        """Concepts by id; unknown ids are absent from the result (an observation that yields no concept, over
        a quarter of LoCoMo's chat turns, asks with none: no round trip then)."""
        if not (checked := self._ids(ids)):
            return []
        rows = await self.driver.read(q.GET_CONCEPTS, {"ids": checked})
        return [ConceptView(**_concept_row(r)) for r in rows]

    async def get_node(self, id: str) -> dict[str, Any] | None:
        """Any node by its id, as ``{"label": ..., **properties}``; None if absent."""
        rows = await self.driver.read(q.GET_NODE, {"id": check_id(id, "id")})
        if not rows:
            return None
        return {"label": rows[0]["label"], **rows[0]["props"]}

    async def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Ids of nodes that start with ``prefix``, sorted, at most ``limit`` of them."""
        params = {"prefix": check_id(prefix, "id"), "limit": self._limit(limit)}
        rows = await self.driver.read(q.IDS_WITH_PREFIX, params)
        return sorted({str(r["id"]) for r in rows})[:limit]

    async def counts(self) -> dict[str, int]:
        """Number of nodes per label and relationships per type (zero included)."""
        counts = dict.fromkeys(q.LABELS + q.RELATIONSHIP_TYPES, 0)
        for row in await self.driver.read(q.COUNTS, {}):
            if row["name"] is not None:
                counts[row["name"]] = counts.get(row["name"], 0) + int(row["n"])
        return counts

    async def read_query(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run raw read-only Cypher; anything that could write raises ``ReadOnlyViolation``.

        Two fences: a lexical guard here, then the engine's own read-only mode.
        """
        if not isinstance(cypher, str) or len(cypher) > self.settings.graph_raw_query_max_chars:
            raise InvalidInput(
                f"cypher: must be a string of at most {self.settings.graph_raw_query_max_chars} characters")
        params = {} if params is None else params
        if not isinstance(params, dict) or len(params) > self.settings.graph_raw_query_max_params:
            raise InvalidInput(
                f"params: must be a mapping of at most {self.settings.graph_raw_query_max_params} entries")
        if not all(isinstance(k, str) and k.isidentifier() for k in params):
            raise InvalidInput("params: names must be identifiers")
        check_read_only(cypher)
        rows = await self.driver.read(cypher, params)
        cap = self.settings.graph_raw_query_max_rows
        if len(rows) > cap:
            log.warning("graph.read_query.truncated rows=%d cap=%d", len(rows), cap)
            rows = rows[:cap]
        return rows

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Record that a client token is revoked; False if it was already."""
        params = {"id": check_id(token_id, "token_id"), "by": check_name(by, "by"), "now": _now_ms()}
        return (await self.driver.write(q.REVOKE_TOKEN, params)).nodes_created > 0

    async def revoked_tokens(self, limit: int) -> list[str]:
        """Ids of revoked client tokens, newest first."""
        rows = await self.driver.read(q.REVOKED_TOKENS, {"limit": int(limit)})
        return [str(r["id"]) for r in rows]

    async def record_audit(self, record: dict[str, Any]) -> None:
        """Append one audit record (fields as in ``AUDIT_WRITE``, checked by the caller).

        Every audited write is followed by its record: concurrent ones share a round trip and an fsync.
        """
        await self._group.write(q.AUDIT_WRITE, record)

    async def audit_log(self, limit: int, spaces: list[str] | None = None) -> list[AuditView]:
        """Audit records, newest first; with ``spaces``, those filed under some of them and no other."""
        params = {"limit": self._limit(limit), "every": spaces is None, "spaces": spaces or []}
        rows = await self.driver.read(q.AUDIT_LOG, params)
        return [AuditView(**r) for r in rows]

    async def clear(self) -> None:
        """Delete every node and relationship but token revocations and the audit log. Admin only."""
        log.warning("graph.clear backend=%s", self.driver.name)
        await self.driver.clear()


def _statement_row(row: dict[str, Any]) -> dict[str, Any]:
    # Statements written before tense existed read as present, with no date.
    derived, retracted_basis = row.get("derived_from") or [], row.pop("retracted_basis", None) or []
    return {**row, "negated": bool(row.get("negated")), "created_at": row.get("created_at") or 0,
            "tense": row.get("tense") or "present", "retracted_by": row.get("retracted_by") or [],
            "derived_from_retracted": bool(derived) and set(derived) <= set(retracted_basis)}


def _concept_row(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "aliases": row.get("aliases") or [], "created_at": row.get("created_at") or 0}


def _observation_row(row: dict[str, Any]) -> dict[str, Any]:
    metadata = row.get("metadata")
    return {
        **row, "topics": row.get("topics") or [], "created_at": row.get("created_at") or 0,
        "metadata": json.loads(metadata) if metadata else {},
    }
