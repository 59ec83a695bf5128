"""The validation worker's predicate schema: aliases, cardinality, temporality, polarity, exclusivity.

Loaded from the packaged ``default_predicates.yaml``, with an optional user
file merged over it (predicates replace entry by entry; exclusivity groups
are added). A malformed file raises ``ValueError`` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_SCHEMA = Path(str(resources.files("mnemonet.agents") / "default_predicates.yaml"))
MAX_SCHEMA_BYTES = 1_000_000

Cardinality = Literal["single", "single_per_topic", "multi"]


def _predicate_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field}: must be a predicate name")
    return value.strip().lower().replace(" ", "_").replace("-", "_")


class PredicateSpec(BaseModel):
    """One predicate's entry in the YAML file."""

    model_config = ConfigDict(extra="forbid")
    aliases: list[str] = Field(default_factory=list)
    cardinality: Cardinality = "multi"
    temporal: bool = True
    polarity: Literal["positive", "negative", "none"] = "none"
    skip: bool = False

    @field_validator("aliases", mode="before")
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


class PredicateSchema:
    """Lookups over the merged schema; every lookup goes through the canonical predicate name."""

    def __init__(self, doc: SchemaFile) -> None:
        self._specs: dict[str, PredicateSpec] = {}
        self._canonical: dict[str, str] = {}
        for name, spec in doc.predicates.items():
            name = _predicate_name(name, "predicates")
            self._specs[name] = spec
            self._canonical[name] = name
            for alias in spec.aliases:
                self._canonical[alias] = name
        self.groups = tuple(
            ExclusiveGroup(g.name, g.scope, tuple(frozenset(self.canonical(p) for p in side) for side in g.sides))
            for g in doc.exclusive
        )

    @classmethod
    def load(cls, extra: Path | None = None) -> PredicateSchema:
        """The packaged defaults, with ``extra`` (a user's YAML file) merged over them."""
        doc = _read(DEFAULT_SCHEMA)
        if extra is not None:
            user = _read(Path(extra))
            doc = SchemaFile(predicates={**doc.predicates, **user.predicates}, exclusive=doc.exclusive + user.exclusive)
        return cls(doc)

    def canonical(self, predicate: str) -> str:
        """The predicate an alias stands for (itself if it is no alias)."""
        return self._canonical.get(predicate, predicate)

    def known(self, predicate: str) -> bool:
        """Whether the schema declares the predicate (or it is an alias of one it declares)."""
        return self.canonical(predicate) in self._specs

    def spec(self, predicate: str) -> PredicateSpec:
        """The entry of a predicate or its alias; unknown predicates are multi-valued and temporal."""
        return self._specs.get(self.canonical(predicate), PredicateSpec())

    def polarity(self, predicate: str, negated: bool) -> int:
        """+1 positive, -1 negative, 0 neutral; negation flips it."""
        value = {"positive": 1, "negative": -1, "none": 0}[self.spec(predicate).polarity]
        return -value if negated else value

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
