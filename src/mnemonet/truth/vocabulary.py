"""The relation vocabulary: aliases, cardinality, temporality, polarity, exclusivity.

One vocabulary for every reader of a predicate: the offline model writes the
canonical name (``written_as``), the validation worker checks pairs by it, the
answers group and judge by it. Loaded from the packaged ``relations.yaml``,
with an optional user file merged over it (predicates replace entry by entry;
exclusivity groups are added). A malformed file raises ``ValueError`` naming
the field.

Predicates outside the vocabulary get a cardinality by a naming rule
(``rule_cardinality``), the offline model's answer when the validation worker
asks for one; a provider that talks to a real model asks it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_VOCABULARY = Path(str(resources.files("mnemonet.truth") / "relations.yaml"))
MAX_SCHEMA_BYTES = 1_000_000
# A habit: whatever one does or is on ("I smoke", "I gave up the keto diet"), ended when negated.
HABIT_RELATION = "has_habit"

Cardinality = Literal["single", "single_per_topic", "multi"]


def _predicate_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field}: must be a predicate name")
    return value.strip().lower().replace(" ", "_").replace("-", "_")


class PredicateSpec(BaseModel):
    """One predicate's entry in the YAML file."""

    model_config = ConfigDict(extra="forbid")
    aliases: list[str] = Field(default_factory=list)
    # Aliases the extraction keeps as written (the inference rules read them: loves X -> likes X).
    written: list[str] = Field(default_factory=list)
    cardinality: Cardinality = "multi"
    temporal: bool = True
    polarity: Literal["positive", "negative", "none"] = "none"
    skip: bool = False
    # Words a question asks for the relation with, besides its own name ("where", "home" for lives_in).
    asked: list[str] = Field(default_factory=list)

    @field_validator("aliases", "written", mode="before")
    @classmethod
    def _aliases(cls, v: object) -> list[str]:
        if not isinstance(v, list):
            raise ValueError("aliases: must be a list")
        return [_predicate_name(a, "aliases") for a in v]


class ExclusiveSpec(BaseModel):
    """An exclusivity group in the YAML file."""

    model_config = ConfigDict(extra="forbid")
    name: str
    scope: Literal["object", "subject"]
    sides: list[list[str]]

    @field_validator("sides", mode="before")
    @classmethod
    def _sides(cls, v: object) -> list[list[str]]:
        if not isinstance(v, list) or len(v) < 2 or not all(isinstance(side, list) and side for side in v):
            raise ValueError("sides: must be at least two non-empty lists of predicates")
        return [[_predicate_name(p, "sides") for p in side] for side in v]


class SchemaFile(BaseModel):
    """The whole YAML document."""

    model_config = ConfigDict(extra="forbid")
    predicates: dict[str, PredicateSpec] = Field(default_factory=dict)
    exclusive: list[ExclusiveSpec] = Field(default_factory=list)


@dataclass(frozen=True)
class ExclusiveGroup:
    """Predicates on different sides cannot both hold for one subject (within ``scope``)."""

    name: str
    scope: str
    sides: tuple[frozenset[str], ...]

    def side_of(self, predicate: str) -> int | None:
        for i, side in enumerate(self.sides):
            if predicate in side:
                return i
        return None


class Vocabulary:
    """Lookups over the merged vocabulary; every lookup goes through the canonical predicate name."""

    def __init__(self, doc: SchemaFile) -> None:
        self._doc = doc
        self._specs: dict[str, PredicateSpec] = {}
        self._canonical: dict[str, str] = {}
        self._written: set[str] = set()
        self._found: set[str] = set()  # predicates read as a relation by meaning (``with_relations``)
        for name, spec in doc.predicates.items():
            name = _predicate_name(name, "predicates")
            self._specs[name] = spec
            self._canonical[name] = name
            for alias in spec.aliases:
                self._canonical[alias] = name
            self._written.update(spec.written)
        self.groups = tuple(
            ExclusiveGroup(g.name, g.scope, tuple(frozenset(self.canonical(p) for p in side) for side in g.sides))
            for g in doc.exclusive
        )

    @classmethod
    def load(cls, extra: Path | None = None) -> Vocabulary:
        """The packaged defaults, with ``extra`` (a user's YAML file) merged over them."""
        doc = _read(DEFAULT_VOCABULARY)
        if extra is not None:
            user = _read(Path(extra))
            doc = SchemaFile(predicates={**doc.predicates, **user.predicates}, exclusive=doc.exclusive + user.exclusive)
        return cls(doc)

    def canonical(self, predicate: str) -> str:
        """The predicate an alias stands for (itself if it is no alias)."""
        return self._canonical.get(predicate, predicate)

    def with_relations(self, relations: Mapping[str, str]) -> Vocabulary:
        """This vocabulary, with predicates outside it read as the relations found for them by meaning
        (``Predicate`` nodes: "has_new_manager" -> has_manager); a mapping onto no relation of the
        vocabulary, or of a predicate it declares, is left out."""
        extra = {p: self.canonical(r) for p, r in relations.items()
                 if p not in self._canonical and self.canonical(r) in self._specs}
        if not extra:
            return self
        view = Vocabulary(self._doc)
        view._canonical.update(extra)
        view._found = set(extra)
        return view

    def phrases(self) -> dict[str, str]:
        """Each declared relation and alias as words ("lives in"), to the relation it names: what a free
        predicate is compared with to find the relation it means."""
        return {name.replace("_", " "): self.canonical(name) for name in self._canonical
                if not self.spec(name).skip}

    def written_as(self, predicate: str) -> str:
        """The name an extraction stores a predicate under: its canonical name, except the aliases the
        vocabulary keeps as written."""
        return predicate if predicate in self._written else self.canonical(predicate)

    def known(self, predicate: str) -> bool:
        """Whether the vocabulary declares the predicate (or it is an alias of one it declares)."""
        return self.canonical(predicate) in self._specs

    def declared(self, predicate: str) -> bool:
        """Whether the predicate is known by the vocabulary itself, not only read as a relation by meaning."""
        return self.known(predicate) and predicate not in self._found

    def spec(self, predicate: str) -> PredicateSpec:
        """The entry of a predicate or its alias; unknown predicates are multi-valued and temporal."""
        return self._specs.get(self.canonical(predicate), PredicateSpec())

    def polarity(self, predicate: str, negated: bool) -> int:
        """+1 positive, -1 negative, 0 neutral; negation flips it."""
        value = {"positive": 1, "negative": -1, "none": 0}[self.spec(predicate).polarity]
        return -value if negated else value

    def asked_with(self, predicate: str) -> frozenset[str]:
        """The words a question may ask for ``predicate``'s relation with (lower case, as declared)."""
        return frozenset(w.casefold() for w in self.spec(predicate).asked)

    def single_valued(self, predicate: str) -> bool:
        """One value at a time per subject, by the vocabulary (``single``)."""
        return self.spec(predicate).cardinality == "single"

    def exclusive(self, a: str, b: str) -> ExclusiveGroup | None:
        """The group in which ``a`` and ``b`` sit on different sides, if any."""
        ca, cb = self.canonical(a), self.canonical(b)
        for group in self.groups:
            sa, sb = group.side_of(ca), group.side_of(cb)
            if sa is not None and sb is not None and sa != sb:
                return group
        return None


def _read(path: Path) -> SchemaFile:
    try:
        if path.stat().st_size > MAX_SCHEMA_BYTES:
            raise ValueError(f"validation_predicates_file: {path} is larger than {MAX_SCHEMA_BYTES} bytes")
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"validation_predicates_file: cannot read {path}: {exc}") from None
    try:
        return SchemaFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"validation_predicates_file: {path}: {where}: {first['msg']}") from None


@cache
def default_vocabulary() -> Vocabulary:
    """The packaged vocabulary (read once per process)."""
    return Vocabulary.load()


PredicateCardinality = Literal["single", "multi"]

_MULTI_WORDS = frozenset({
    "likes", "loves", "enjoys", "dislikes", "hates", "knows", "met", "visited", "visits", "owns", "speaks",
    "reads", "read", "watched", "plays", "uses", "wants", "needs", "attended", "wrote", "bought", "ate",
    "mentioned", "prefers", "interested", "friend", "friends", "child", "children", "skill", "skills",
    "hobby", "hobbies", "pet", "pets", "sibling", "siblings", "member", "tag", "tags",
})
_SINGLE_SUFFIXES = ("_at", "_in", "_for", "_to")
_SINGLE_VERBS = frozenset({"drives", "reports_to", "is_called", "called", "named", "aged"})


def rule_cardinality(predicate: str) -> PredicateCardinality:
    """How many current values a predicate outside the vocabulary has per subject, by its name; first
    match wins:

    1. verbs of relationships, experiences and feelings are ``multi``: ``likes``, ``knows``,
       ``visited``, ``owns``, ``speaks``, ``has_child``, ``has_friend``, ``has_skill`` ...
    2. ``has_*`` (an attribute: ``has_manager``, ``has_email``, ``has_phone``) is ``single``;
    3. location and employment predicates ending ``_at``, ``_in``, ``_for`` (``works_at``,
       ``lives_in``, ``reports_to``, ``drives``) are ``single``;
    4. anything else is ``multi`` (two values are then no conflict unless the model says so).
    """
    words = predicate.lower().split("_")
    if any(w in _MULTI_WORDS for w in words):
        return "multi"
    if predicate.startswith("has_") or predicate in _SINGLE_VERBS:
        return "single"
    if predicate.endswith(_SINGLE_SUFFIXES):
        return "single"
    return "multi"


def nearest_relation(
    vector: list[float], phrases: Mapping[str, tuple[str, list[float]]], min_similarity: float, min_margin: float
) -> tuple[str | None, float]:
    """The relation whose phrase is nearest ``vector`` (unit vectors: cosine = dot product), if it is at least
    ``min_similarity`` near and nearer by ``min_margin`` than any other relation's phrase; and that similarity."""
    best: dict[str, float] = {}
    for relation, phrase_vector in phrases.values():
        sim = sum(a * b for a, b in zip(vector, phrase_vector, strict=True))
        best[relation] = max(best.get(relation, -1.0), sim)
    ranked = sorted(best.items(), key=lambda kv: -kv[1])
    if not ranked:
        return None, 0.0
    relation, sim = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else -1.0
    return (relation if sim >= min_similarity and sim - runner_up >= min_margin else None), sim
