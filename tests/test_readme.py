"""README and docs/ are the user's manual: their commands and their tables must stay true."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
# The reference moved out of README into docs/, one page each; commands are checked wherever they are.
MANUAL = "\n".join([README, *(p.read_text() for p in sorted((REPO / "docs").glob("*.md")))])
CONFIGURATION = (REPO / "docs" / "configuration.md").read_text()
HTTP_API = (REPO / "docs" / "http-api.md").read_text()

_spec = importlib.util.spec_from_file_location("settings_table", REPO / "tools" / "settings_table.py")
assert _spec is not None and _spec.loader is not None
settings_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(settings_table)
readme_with_table = settings_table.readme_with_table
WRITE = "run `.venv/bin/python tools/settings_table.py --write`"

_methods_spec = importlib.util.spec_from_file_location("methods_table", REPO / "tools" / "methods_table.py")
assert _methods_spec is not None and _methods_spec.loader is not None
methods_table = importlib.util.module_from_spec(_methods_spec)
_methods_spec.loader.exec_module(methods_table)


def test_configuration_table_matches_settings() -> None:
    assert readme_with_table(CONFIGURATION) == CONFIGURATION, WRITE


def test_settings_reference_matches_settings_and_profiles() -> None:
    doc = REPO / "docs" / "settings.md"
    assert doc.is_file() and doc.read_text() == settings_table.settings_doc(), WRITE
    # Every setting and every profile is in it, and README links to it.
    text = doc.read_text()
    assert all(f"`{name.upper()}`" in text for name in settings_table.Settings.model_fields)
    assert all(f"`{profile}`" in text for profile in settings_table.PROFILES)
    assert "(settings.md)" in CONFIGURATION and "(docs/configuration.md)" in README


def test_readme_keeps_only_the_settings_a_user_touches() -> None:
    table = CONFIGURATION.partition(settings_table.BEGIN)[2].partition(settings_table.END)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [n.upper() for n in settings_table.README_SETTINGS]
    assert len(rows) == 10


def test_method_table_matches_the_registry() -> None:
    assert "| `load` | read | `ids`, `space`? |" in HTTP_API  # the table is there, not only the markers
    assert methods_table.readme_with_methods(HTTP_API) == HTTP_API, (
        "run `.venv/bin/python tools/methods_table.py --write`")


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in README
    assert re.search(r"^make test$", (REPO / ".ci" / "run").read_text(), re.MULTILINE)


def test_makefile_has_the_readme_targets() -> None:
    makefile = (REPO / "Makefile").read_text()
    # Commands only (code spans and blocks), not prose such as "may make in a burst".
    code = "\n".join(re.findall(r"```.*?```|`[^`\n]+`", MANUAL, re.DOTALL))
    targets = re.findall(r"\bmake (\w[\w-]*)", code)
    assert "test" in targets and "demo" in targets
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"README mentions `make {target}`"


def test_no_command_in_the_readme_puts_the_cluster_key_on_the_command_line() -> None:
    # Issue 31 row 20: the CLI join showed `--cluster-key KEY`, which every user of the machine reads in `ps`.
    code = "\n".join(re.findall(r"```.*?```|`[^`\n]+`", MANUAL, re.DOTALL))
    commands = [line for line in code.splitlines() if "run_node.py" in line or "mnemonet " in line]
    assert [line for line in commands if re.search(r"--cluster-key(?!-file)\b", line)] == []
    assert any("--cluster-key-file" in line and "--capabilities cli" in line for line in commands)


def _flag(command: str, flag: str) -> str | None:
    words = command.split()
    return words[words.index(flag) + 1] if flag in words else None


def test_every_node_the_readme_starts_takes_a_port_of_its_own() -> None:
    # Each `run_node.py --capabilities ...` line starts a node beside the store of the same page; one
    # without --port takes the default (9000, the store's) and exits at once with "address in use".
    from mnemonet.settings import Settings

    default = str(Settings.model_fields["port"].default)
    commands = [line.strip() for line in re.findall(r"run_node\.py --capabilities[^\n`]*", MANUAL)]
    assert len(commands) >= 3
    ports = [(c, _flag(c, "--port") or default) for c in commands if "--bootstrap" in c]
    assert ports and all(port != default for _, port in ports), ports
