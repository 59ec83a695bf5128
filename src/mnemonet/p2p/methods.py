"""Argument and result schemas of every method in ``p2p/registry.py``, taken from the interfaces themselves.

The types come from the ``MemoryAPI``, ``LanguageModel`` and ``Embedder``
Protocols, so a request's keyword arguments are validated into exactly the
types the provider expects and a result is re-validated into the model types
on the caller's side.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import lone_surrogate
from mnemonet.p2p.registry import REGISTRY, Scope
from mnemonet.p2p.routing import capability_of


@dataclass(frozen=True)
class MethodSpec:
    """One remote method: its capability, client scope, write event, the provider attribute and the adapters
    of its types."""

    name: str
    capability: str
    scope: Scope | None
    event: str | None
    attr: str
    signature: inspect.Signature
    params: dict[str, TypeAdapter[Any]]
    result: TypeAdapter[Any]

    def bind(self, kwargs: object, max_depth: int) -> dict[str, Any]:
        """Validated keyword arguments; ``ValueError`` naming the first bad one."""
        if not isinstance(kwargs, dict):
            raise InvalidInput(f"{self.name}: arguments must be a JSON object")
        check_plain(kwargs, max_depth, self.name)
        try:
            self.signature.bind(**kwargs)
        except TypeError as exc:
            raise InvalidInput(f"{self.name}: {exc}") from None
        out: dict[str, Any] = {}
        for key, value in kwargs.items():
            try:
                out[key] = self.params[key].validate_python(value)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InvalidInput(f"{self.name}: argument {key!r}: {first['msg']}") from None
        return out

    def dump_result(self, value: Any) -> Any:
        """The JSON-ready form of a result."""
        return self.result.dump_python(value, mode="json")

    def load_result(self, data: Any) -> Any:
        """A result from the wire, re-validated into the interface's types."""
        return self.result.validate_python(data)


def check_plain(value: object, max_depth: int, where: str) -> None:
    """``ValueError`` for a NUL character or a lone surrogate in any string (keys included) or nesting deeper
    than ``max_depth``.

    Each once reached the stores and answered 500: FalkorDB and PostgreSQL
    refuse NUL in text with an internal error, a lone surrogate (valid JSON,
    ``"\\ud800"``) cannot be encoded as UTF-8 by any store, model or log, and
    deep nesting exhausts recursion in validators. Walked without recursion,
    for the same reason.
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput(f"{where}: text must not contain NUL characters")
            if lone_surrogate(item):
                raise InvalidInput(f"{where}: text must not contain lone surrogates (U+D800-U+DFFF are not text)")
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise InvalidInput(f"{where}: arguments nested deeper than {max_depth} levels")
            children = [*item, *item.values()] if isinstance(item, dict) else list(item)
            stack.extend((child, depth + 1) for child in children)


def _interface(capability: str, name: str) -> tuple[type, str]:
    from mnemonet.embed.base import Embedder
    from mnemonet.llm.base import LanguageModel
    from mnemonet.model.api import MemoryAPI

    if name.startswith("llm."):
        return LanguageModel, name.removeprefix("llm.")
    if name.startswith("embed."):
        return Embedder, name.removeprefix("embed.")
    return MemoryAPI, name


@cache
def method_spec(name: str) -> MethodSpec:
    """The spec of an allowed method; ``UnknownMethod`` otherwise."""
    capability = capability_of(name)
    remote = REGISTRY[name]
    interface, attr = _interface(capability, name)
    func = getattr(interface, attr)
    hints = typing.get_type_hints(func, include_extras=True)  # keeps constraints such as StrictBool
    signature = inspect.signature(func)
    params = [p for p in signature.parameters.values() if p.name != "self"]
    return MethodSpec(
        name=name,
        capability=capability,
        scope=remote.scope,
        event=remote.event,
        attr=attr,
        signature=signature.replace(parameters=params),
        params={p.name: TypeAdapter(hints.get(p.name, Any)) for p in params},
        result=TypeAdapter(hints.get("return", Any)),
    )
