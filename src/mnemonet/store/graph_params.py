"""Turn validated write records into the parameters of one write statement.

All merging of names happens here, before any I/O: concepts of one write
that share a normalised name or alias collapse into one entry, so the
statement never asks the engine to create the same concept twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mnemonet.model import (
    ClaimRecord,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    StatementSpec,
    derived_id,
    normalise_name,
)
from mnemonet.model.errors import InvalidInput


def name_key(name: str, field_name: str) -> str:
    """The normalised key of a name; a name of punctuation only has none and is refused."""
    key = normalise_name(name)
    if not key:
        raise InvalidInput(f"{field_name}: must contain a letter or digit")
    return key


def source_key(kind: str, name: str) -> str:
    """Sources are merged by kind and normalised name."""
    return f"{kind}:{name_key(name, 'source.name')}"


# The source whose ``PROCESSED`` marker says an observation's extraction is done.
EXTRACTOR = SourceSpec(name="extractor", kind="system")
EXTRACTOR_KEY = source_key(EXTRACTOR.kind, EXTRACTOR.name)


def source_params(source: SourceSpec) -> dict[str, Any]:
    key = source_key(source.kind, source.name)
    return {"key": key, "id": derived_id("src", key), "name": source.name, "kind": source.kind}


@dataclass
class _Concept:
    name: str
    kind: str
    names: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    mention: bool = False

    def add(self, name: str, key: str) -> None:
        if key not in self.keys:
            self.keys.append(key)
            self.names.append(name)


class ConceptPlan:
    """The distinct concepts of one write, each requested name mapped to its entry's key."""

    def __init__(self) -> None:
        self._entries: list[_Concept | None] = []
        self._index: dict[str, int] = {}
        self.relations: list[dict[str, str]] = []

    def add(self, name: str, kind: str, aliases: tuple[str, ...], mention: bool, field_name: str) -> None:
        pairs = [(name, name_key(name, field_name))] + [(a, name_key(a, "concept.aliases")) for a in aliases]
        hits = sorted({self._index[k] for _, k in pairs if k in self._index})
        if not hits:
            self._entries.append(_Concept(name=name, kind=kind))
            hits = [len(self._entries) - 1]
        target = self._entries[hits[0]]
        assert target is not None
        # Names that bridge two entries merge them: they are one concept.
        for other in hits[1:]:
            entry = self._entries[other]
            assert entry is not None
            for n, k in zip(entry.names, entry.keys, strict=True):
                target.add(n, k)
            target.mention = target.mention or entry.mention
            self._entries[other] = None
        for n, k in pairs:
            target.add(n, k)
        if target.kind == "thing":
            target.kind = kind
        target.mention = target.mention or mention
        for k in target.keys:
            self._index[k] = hits[0]

    def add_spec(self, spec: ConceptSpec, mention: bool) -> None:
        self.add(spec.name, spec.kind, spec.aliases, mention, "concept.name")
        for component in spec.components:
            self.add(component.name, "thing", (), False, "component.name")

    def key_of(self, name: str) -> str:
        """The key the write statement knows the concept named ``name`` by."""
        entry = self._entries[self._index[normalise_name(name)]]
        assert entry is not None
        return entry.keys[0]

    def add_relations(self, specs: tuple[ConceptSpec, ...]) -> None:
        seen: set[tuple[str, str, str]] = set()
        for spec in specs:
            for component in spec.components:
                edge = (self.key_of(spec.name), self.key_of(component.name), component.relation)
                # A component that is its own concept (by alias) adds nothing.
                if edge[0] != edge[1] and edge not in seen:
                    seen.add(edge)
                    self.relations.append({"from": edge[0], "to": edge[1], "relation": edge[2]})

    def params(self) -> list[dict[str, Any]]:
        out = []
        for entry in self._entries:
            if entry is None:
                continue
            out.append({
                "key": entry.keys[0], "id": derived_id("cpt", entry.keys[0]), "name": entry.name,
                "kind": entry.kind, "keys": entry.keys, "names": entry.names, "aliases": entry.names[1:],
                "alias_keys": entry.keys[1:], "mention": entry.mention,
            })
        return out


def observation_params(obs: ObservationRecord, now: int) -> dict[str, Any]:
    """Parameters for ``graph_cypher.observation_write``; raises ValueError on inconsistent input."""
    ids = [s.id for s in obs.statements]
    if len(set(ids)) != len(ids):
        raise InvalidInput("observation.statements: statement ids must be distinct")
    if obs.id in ids:
        raise InvalidInput("observation.statements: a statement id equals the observation id")
    plan = ConceptPlan()
    for spec in obs.concepts:
        plan.add_spec(spec, mention=True)
    for st in obs.statements:
        plan.add(st.subject, "thing", (), True, "statement.subject")
        plan.add(st.object, "thing", (), True, "statement.object")
    plan.add_relations(obs.concepts)
    return {
        "now": obs.created_at if obs.created_at is not None else now,
        "source": source_params(obs.source),
        "observation": {
            "id": obs.id, "raw_content": obs.text, "topics": list(obs.topics),
            "metadata": json.dumps(obs.metadata, sort_keys=True),
            "extraction": "pending" if obs.extraction_pending else None,
        },
        "concepts": plan.params(),
        "relations": plan.relations,
        "statements": [
            {"id": s.id, "predicate": s.predicate, "confidence": s.confidence, "negated": s.negated,
             "tense": s.tense, "valid_at": s.valid_at, "revision": s.revision,
             "sentence": s.sentence(), "subject": plan.key_of(s.subject), "object": plan.key_of(s.object)}
            for s in obs.statements
        ],
    }


def inference_params(
    observation_id: str, source: SourceSpec, statements: tuple[StatementSpec, ...], said_at: int, now: int,
    concepts: tuple[ConceptSpec, ...] = (),
) -> dict[str, Any]:
    """Parameters for ``graph_cypher.inference_write``: claims DERIVED_FROM an existing observation.

    ``concepts``: how the observation's extraction named the claims' concepts (name, kind, aliases), so a
    claim lands on the concept its extraction does ("mornings" on "morning"); specs naming none of the
    claims' concepts are left out, and so are components (the extraction writes those)."""
    ids = [s.id for s in statements]
    if len(set(ids)) != len(ids):
        raise InvalidInput("claims: statement ids must be distinct")
    plan = ConceptPlan()
    used = {normalise_name(n) for st in statements for n in (st.subject, st.object)}
    for spec in concepts:
        if used & {normalise_name(n) for n in (spec.name, *spec.aliases)}:
            plan.add(spec.name, spec.kind, spec.aliases, False, "concept.name")
    for st in statements:
        plan.add(st.subject, "thing", (), False, "statement.subject")
        plan.add(st.object, "thing", (), False, "statement.object")
    return {
        "now": said_at, "done_at": now,
        "source": source_params(source),
        "observation": {"id": observation_id},
        "concepts": plan.params(),
        "relations": [],
        "statements": [
            {"id": s.id, "predicate": s.predicate, "confidence": s.confidence, "negated": s.negated,
             "tense": s.tense, "valid_at": s.valid_at, "revision": s.revision,
             "sentence": s.sentence(), "subject": plan.key_of(s.subject), "object": plan.key_of(s.object)}
            for s in statements
        ],
    }


def extraction_params(
    observation_id: str, concepts: tuple[ConceptSpec, ...], statements: tuple[StatementSpec, ...],
    topics: tuple[str, ...], said_at: int, now: int, error: str | None = None,
) -> dict[str, Any]:
    """Parameters for ``graph_cypher.extraction_write``: an observation's extraction, done once."""
    ids = [s.id for s in statements]
    if len(set(ids)) != len(ids):
        raise InvalidInput("extraction.statements: statement ids must be distinct")
    plan = ConceptPlan()
    for spec in concepts:
        plan.add_spec(spec, mention=True)
    for st in statements:
        plan.add(st.subject, "thing", (), True, "statement.subject")
        plan.add(st.object, "thing", (), True, "statement.object")
    plan.add_relations(concepts)
    return {
        "now": said_at, "done_at": now, "extractor": source_params(EXTRACTOR),
        "observation": {"id": observation_id}, "topics": list(topics), "error": error,
        "concepts": plan.params(), "relations": plan.relations,
        "statements": [
            {"id": s.id, "predicate": s.predicate, "confidence": s.confidence, "negated": s.negated,
             "tense": s.tense, "valid_at": s.valid_at, "revision": s.revision,
             "sentence": s.sentence(), "subject": plan.key_of(s.subject), "object": plan.key_of(s.object)}
            for s in statements
        ],
    }


def claim_params(claim: ClaimRecord, now: int) -> dict[str, Any]:
    """Parameters for ``graph_cypher.claim_write``; raises ValueError on inconsistent input."""
    st = claim.statement
    basis = list(dict.fromkeys(claim.derived_from))
    supersedes = {link.target_id: link.reason for link in claim.supersedes}
    contradicts = {link.target_id: link.reason for link in claim.contradicts}
    for field_name, ids in (("claim.derived_from", basis), ("claim.supersedes", supersedes),
                            ("claim.contradicts", contradicts)):
        if st.id in ids:
            raise InvalidInput(f"{field_name}: a statement cannot refer to itself")
    plan = ConceptPlan()
    for spec in claim.concepts:
        plan.add_spec(spec, mention=False)
    plan.add(st.subject, "thing", (), False, "statement.subject")
    plan.add(st.object, "thing", (), False, "statement.object")
    plan.add_relations(claim.concepts)
    return {
        "now": claim.created_at if claim.created_at is not None else now,
        "source": source_params(claim.source),
        "statement": {
            "id": st.id, "predicate": st.predicate, "confidence": st.confidence, "negated": st.negated,
            "tense": st.tense, "valid_at": st.valid_at, "revision": st.revision,
            "sentence": st.sentence(), "subject": plan.key_of(st.subject), "object": plan.key_of(st.object),
        },
        "concepts": plan.params(),
        "relations": plan.relations,
        "basis": basis,
        "targets": sorted(set(supersedes) | set(contradicts)),
        "supersedes": [{"id": i, "reason": r} for i, r in supersedes.items()],
        "contradicts": [{"id": i, "reason": r} for i, r in contradicts.items()],
    }
