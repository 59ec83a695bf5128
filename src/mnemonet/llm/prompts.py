"""Prompt templates: YAML files with Jinja2 strings, loaded once from ``prompts/`` (``default_prompts_dir``).

A template is a mapping. ``extends: shared/base`` makes it inherit every key of
that parent; the child's keys override the parent's. ``system`` and ``user``
are Jinja2 templates rendered with the caller's variables; inside them,
``prompt.<key>`` is any other string key of the merged template, itself
rendered with the same variables, so the shared constraints of
``shared/base.yaml`` reach every system prompt unless a child deliberately
overrides them. Undefined variables are errors (``StrictUndefined``).

Retrieved memory and user text are data, never instructions: templates pass
them through the ``fence`` filter, which wraps them in ``<tag>...</tag>`` and
neutralises every ``<``/``>`` inside, so data cannot close the fence or open
a new one. Memory never goes into the system prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import yaml

from mnemonet.llm.errors import PromptError

_TAG_RE = re.compile(r"^[a-z][a-z_]{0,31}$")
_TEMPLATE_KEYS = ("system", "user")
_MAX_EXTENDS_DEPTH = 8


def default_prompts_dir() -> Path:
    """The shipped prompt templates: ``mnemonet/prompts`` in an installed wheel (put there at build time), else
    ``prompts/`` at the top of the checkout the package runs from (an editable install, ``run_node.py``)."""
    # A wheel installs as plain files, so the resource is a real directory (never a zip member).
    packaged = Path(str(resources.files("mnemonet") / "prompts"))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "prompts"  # src/mnemonet/llm/prompts.py -> the checkout


def fence(value: object, tag: str = "memory") -> str:
    """Wrap ``value`` as inert data inside ``<tag>`` ... ``</tag>``.

    A list of ``(id, text)`` pairs becomes one ``[id] text`` line each. Angle
    brackets inside the data are escaped so an injected ``</memory>`` (or any
    other tag) cannot end the fence.
    """
    if not _TAG_RE.match(tag):
        raise PromptError(f"fence: tag {tag!r} must be lower-case letters and '_'")
    if isinstance(value, str):
        body = value
    elif isinstance(value, Iterable):
        lines = []
        for item in value:
            if isinstance(item, (tuple, list)) and len(item) == 2:
                lines.append(f"[{item[0]}] {' '.join(str(item[1]).split())}")
            else:
                lines.append(" ".join(str(item).split()))
        body = "\n".join(lines)
    else:
        body = str(value)
    body = body.strip().replace("<", "&lt;").replace(">", "&gt;")
    return f"<{tag}>\n{body}\n</{tag}>"


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt ready to send: system text, user text, and the structured result's schema and tool name."""

    system: str
    user: str
    schema: dict[str, Any] | None
    tool_name: str | None


class PromptLibrary:
    """All templates under one folder, parsed and merged once at construction (no I/O on render)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_prompts_dir()
        if not self.path.is_dir():
            raise PromptError(f"prompts_dir: {self.path} is not a directory")
        self._env = jinja2.Environment(
            undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
        )
        self._env.filters["fence"] = fence
        raw = {self._name_of(p): self._load(p) for p in sorted(self.path.rglob("*.yaml"))}
        self._templates = {name: self._merge(name, raw, 0) for name in raw}

    @property
    def names(self) -> list[str]:
        """Every template name, e.g. ``translator/observe``."""
        return sorted(self._templates)

    def get(self, name: str) -> dict[str, Any]:
        """The merged (inherited) mapping of one template."""
        try:
            return dict(self._templates[name])
        except KeyError:
            raise PromptError(f"prompt {name!r}: no such template in {self.path}") from None

    def render(self, name: str, **variables: Any) -> RenderedPrompt:
        """Render template ``name`` with ``variables``; a missing variable raises ``PromptError``."""
        template = self.get(name)
        for key in _TEMPLATE_KEYS:
            if not isinstance(template.get(key), str):
                raise PromptError(f"prompt {name!r}: key {key!r} must be a string template")
        context = dict(variables)
        context.setdefault("tool_name", template.get("tool_name"))
        try:
            parts = {
                k: self._render_str(v, context)
                for k, v in template.items()
                if isinstance(v, str) and k not in _TEMPLATE_KEYS and k != "extends"
            }
            system = self._render_str(template["system"], {**context, "prompt": parts})
            user = self._render_str(template["user"], {**context, "prompt": parts})
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompt {name!r}: {exc.message}") from exc
        except jinja2.TemplateError as exc:
            raise PromptError(f"prompt {name!r}: template error: {exc}") from exc
        schema = template.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise PromptError(f"prompt {name!r}: schema must be a mapping")
        return RenderedPrompt(system=system.strip(), user=user.strip(), schema=schema,
                              tool_name=template.get("tool_name"))

    def _render_str(self, source: str, context: dict[str, Any]) -> str:
        return self._env.from_string(source).render(**context)

    def _name_of(self, path: Path) -> str:
        return path.relative_to(self.path).with_suffix("").as_posix()

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise PromptError(f"prompt file {path}: invalid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise PromptError(f"prompt file {path}: must hold a mapping")
        return data

    def _merge(self, name: str, raw: dict[str, dict[str, Any]], depth: int) -> dict[str, Any]:
        if depth > _MAX_EXTENDS_DEPTH:
            raise PromptError(f"prompt {name!r}: 'extends' chain deeper than {_MAX_EXTENDS_DEPTH} (a cycle?)")
        own = raw[name]
        parent_name = own.get("extends")
        if parent_name is None:
            return dict(own)
        if parent_name not in raw:
            raise PromptError(f"prompt {name!r}: extends unknown template {parent_name!r}")
        merged = self._merge(parent_name, raw, depth + 1)
        merged.update(own)
        return merged
