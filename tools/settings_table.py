"""The configuration table of README.md, generated from the one ``Settings`` object.

    .venv/bin/python tools/settings_table.py          # print it
    .venv/bin/python tools/settings_table.py --write  # replace README's table

``tests/test_readme.py`` fails when README's table differs from the
settings, so adding a setting means running ``--write``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mnemonet.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def settings_table() -> str:
    rows = ["| setting (env `MNEMONET_…`) | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default
        shown = "" if default in ("", None) else str(default)
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `{name.upper()}` | `{shown}` | {description} |")
    return "\n".join(rows)


def readme_with_table(readme: str) -> str:
    """README text with the block between the settings markers replaced by the current table."""
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{settings_table()}\n{END}{tail}"


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        README.write_text(readme_with_table(README.read_text()))
    else:
        print(settings_table())
