"""Memory spaces: the names every item, token and call is scoped by.

A space is one team's memory on a shared network. Its name becomes part of
engine identifiers (a FalkorDB graph key, a PostgreSQL schema name), so it is
a short slug, checked here before any I/O.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from mnemonet.model.errors import InvalidInput

DEFAULT_SPACE = "default"
# PostgreSQL identifiers hold 63 bytes; "<schema>__<space>" must fit with room for the base schema's name.
MAX_SPACE_CHARS = 32
_SPACE_RE = re.compile(rf"^[a-z][a-z0-9_]{{0,{MAX_SPACE_CHARS - 1}}}$")


def check_space(value: object, field: str = "space") -> str:
    """``value`` if it is a space name (``[a-z][a-z0-9_]*``, at most 32 characters); ``InvalidInput`` otherwise."""
    if not isinstance(value, str) or not _SPACE_RE.match(value):
        raise InvalidInput(f"{field}: a space name is 1-{MAX_SPACE_CHARS} characters of lowercase letters, "
                           "digits and '_', starting with a letter")
    return value


def parse_spaces(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Space names from ``a,b`` (or a list), checked, duplicates dropped, order kept; at least one."""
    items = text.split(",") if isinstance(text, str) else list(text)
    spaces = tuple(dict.fromkeys(check_space(s.strip() if isinstance(s, str) else s) for s in items
                                 if not isinstance(s, str) or s.strip()))
    if not spaces:
        raise InvalidInput("spaces: name at least one space")
    return spaces


class SpaceView(BaseModel):
    """A memory space: its name, and when and by whom it was created (``default`` always exists)."""

    name: str
    created_at: int = 0
    created_by: str = ""
    server: str = Field("", description="The engine server it lives on (a name in the engine_servers setting); "
                        "empty: the default graph server and PostgreSQL.")
    reads: list[str] = Field(default_factory=list, description="Spaces shared into this one: read-only, "
                             "searched and answered from with it.")


def spaced_methods() -> frozenset[str]:
    """The ``MemoryAPI`` methods that run in one space (those taking ``space``)."""
    import inspect

    from mnemonet.model.api import MemoryAPI  # here: the API module imports this one

    return frozenset(
        name for name, member in inspect.getmembers(MemoryAPI, inspect.iscoroutinefunction)
        if "space" in inspect.signature(member).parameters
    )


class InSpace:
    """A ``MemoryAPI`` whose per-space calls all run in one space unless a call names another.

    Workers run each pass through one of these, so everything a pass reads and writes (its
    backlog, contradiction candidates, a summary's basis) stays in the space it is about.
    """

    def __init__(self, api: Any, space: str) -> None:
        self.api = api
        self.space = check_space(space)
        self._spaced = spaced_methods()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.api, name)
        if name not in self._spaced or self.space == DEFAULT_SPACE:  # naming no space means the default
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("space", self.space)
            return attr(*args, **kwargs)

        return call
