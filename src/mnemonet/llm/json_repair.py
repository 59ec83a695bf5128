"""A forgiving JSON-object parser for replies of local models that ignore the requested format.

Repairs, in order: strip Markdown code fences; take the outermost ``{...}``
(skipping prose around it); drop trailing commas before ``}``/``]``. What is
still not JSON raises ``ValueError`` with ``json``'s message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mnemonet.model.jsontext import outside_strings

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_NON_SPACE = re.compile(r"\S")


def _outermost_object(text: str) -> str:
    """The first balanced ``{...}`` in ``text``, aware of strings and escapes."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the reply")
    depth = 0
    for i, ch in outside_strings(text, start):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    raise ValueError("the JSON object in the reply is not closed")


def _drop_trailing_commas(text: str) -> str:
    """Remove ``,`` directly before ``}`` or ``]`` outside strings."""
    trailing = {i for i, ch in outside_strings(text) if ch == "," and _next_closes(text, i + 1)}
    return "".join(ch for i, ch in enumerate(text) if i not in trailing)


def _next_closes(text: str, at: int) -> bool:
    """Whether the first character from ``at`` that is not whitespace closes an object or an array."""
    found = _NON_SPACE.search(text, at)
    return found is not None and found.group() in "}]"


def parse_json_object(reply: str) -> dict[str, Any]:
    """The JSON object in ``reply``, repaired if needed; ``ValueError`` says why it is not one."""
    text = reply.strip()
    fenced = _FENCE_RE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = json.loads(_drop_trailing_commas(_outermost_object(text)))
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value
