"""How deep JSON text nests, found without parsing it.

The standard decoder recurses once per level; text nested past the interpreter's limit raises
``RecursionError`` inside it, and on CPython 3.11 that leaves the compiler's recursion counter off:
a later ``compile``/``ast.parse`` in the same process fails with "SystemError: AST constructor recursion
depth mismatch". So text too deep is refused before it is decoded, never caught after.
"""

from __future__ import annotations

from collections.abc import Iterator

# The deepest nesting any JSON this package reads may have (a request's arguments have their own,
# smaller limit, ``max_argument_depth``, checked once decoded).
JSON_MAX_DEPTH = 100


def nested_deeper(text: str, limit: int = JSON_MAX_DEPTH) -> bool:
    """Whether ``text`` opens more than ``limit`` arrays or objects inside each other (strings skipped)."""
    if text.count("[") + text.count("{") <= limit:  # counted in C: the common case costs no loop
        return False
    depth = 0
    for _, ch in outside_strings(text):
        if ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``text`` from ``start``, leaving out string literals (quotes, escapes and all)."""
    in_string, escaped = False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield i, ch
