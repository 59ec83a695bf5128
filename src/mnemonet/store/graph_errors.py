"""Errors the graph store raises; the service layer translates them at its boundary."""

from __future__ import annotations

from mnemonet.model.errors import InvalidInput, Unavailable
from mnemonet.store.errors import DependencyUnavailable


class GraphStoreError(Unavailable):
    """The graph engine failed to run a query (connection lost, timeout, engine error)."""


class GraphUnavailable(DependencyUnavailable, GraphStoreError):
    """The graph engine could not be reached, or did not answer in time."""

    def __init__(self, message: str) -> None:
        super().__init__("graph", message)


class WriteConflict(GraphStoreError):
    """A concurrent writer created the same id first; retrying the write is safe."""


class ReadOnlyViolation(InvalidInput):
    """A raw query handed to ``read_query`` could write, or calls a procedure not known to be read-only."""


class UnknownReference(InvalidInput):
    """A write refers to a node id that does not exist; the message names the field and the ids."""

    def __init__(self, field: str, missing: list[str]) -> None:
        super().__init__(f"{field}: no such node: {', '.join(sorted(missing))}")
        self.field = field
        self.missing = missing
