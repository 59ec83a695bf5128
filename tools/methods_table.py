"""The method table of docs/http-api.md, generated from the method registry.

    .venv/bin/python tools/methods_table.py          # print it
    .venv/bin/python tools/methods_table.py --write  # replace README's table

``tests/test_readme.py`` fails when README's table differs from the registry,
so adding a client method means running ``--write``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.registry import ALIASES, REGISTRY, SERVER_FILLED

README = Path(__file__).resolve().parent.parent / "docs" / "http-api.md"
BEGIN, END = "<!-- methods:begin -->", "<!-- methods:end -->"


def methods_table() -> str:
    aliases = {name: alias for alias, name in ALIASES.items()}
    rows = ["| `POST /v1/…` | scope | arguments | what it does |", "|---|---|---|---|"]
    for name, remote in REGISTRY.items():
        if remote.scope is None:
            continue
        spec = method_spec(name)
        args = ", ".join(
            f"`{p.name}`" if p.default is p.empty else f"`{p.name}`?"
            for p in spec.signature.parameters.values() if p.name not in SERVER_FILLED.get(name, frozenset())
        )
        shown = f"`{name}`" + (f" (`{aliases[name]}`)" if name in aliases else "")
        rows.append(f"| {shown} | {remote.scope} | {args} | {remote.summary} |")
    return "\n".join(rows)


def readme_with_methods(readme: str) -> str:
    """README text with the block between the method markers replaced by the current table."""
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{methods_table()}\n{END}{tail}"


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        README.write_text(readme_with_methods(README.read_text()))
    else:
        print(methods_table())
