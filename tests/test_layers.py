"""Imports point down the layers: nothing below the adapters imports ``node``, ``cli``, ``web`` or ``mcp``.

Read from the source with ``ast``, so imports under ``if TYPE_CHECKING:`` and inside functions count too:
a type hint is no excuse for an upward arrow (DESIGN.md, layer table).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mnemonet"
LOWER = ("p2p", "service", "store", "llm", "embed", "agents", "truth", "model")
UPPER = ("node", "cli", "web", "mcp")


def _imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in ``source`` of a module in ``package``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # ``from mnemonet import node`` names the layer in the alias, not the module.
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _imports_of(path: Path) -> list[tuple[int, str]]:
    package = ".".join(("mnemonet", *path.relative_to(PACKAGE).parts[:-1]))
    return _imported_modules(path.read_text(encoding="utf-8"), package)


def _upward(module: str) -> bool:
    return any(module == f"mnemonet.{top}" or module.startswith(f"mnemonet.{top}.") for top in UPPER)


def test_the_scan_sees_every_kind_of_import() -> None:
    # The rule's teeth: plain, from-, relative, function-local and TYPE_CHECKING imports are all seen.
    source = (
        "from typing import TYPE_CHECKING\n"
        "import mnemonet.cli.app\n"
        "from mnemonet import web\n"
        "from ..mcp import server\n"
        "if TYPE_CHECKING:\n"
        "    from mnemonet.node.peer_node import PeerNode\n"
        "def f():\n"
        "    from .membership import Member\n"
    )
    modules = {m for _, m in _imported_modules(source, "mnemonet.p2p")}
    assert {m for m in modules if _upward(m)} == {
        "mnemonet.cli.app", "mnemonet.web", "mnemonet.mcp", "mnemonet.mcp.server", "mnemonet.node.peer_node",
        "mnemonet.node.peer_node.PeerNode",
    }
    assert "mnemonet.p2p.membership" in modules


@pytest.mark.parametrize("layer", LOWER)
def test_lower_layers_never_import_the_adapters_or_the_node(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, layer
    upward = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in files
        for line, module in _imports_of(path)
        if _upward(module)
    ]
    assert upward == []


def test_the_truth_rules_import_only_the_model() -> None:
    # One pure home for the truth rules (issue 32): the service, the workers and the offline model call
    # it; it knows nothing of them, of settings or of any I/O layer.
    files = sorted((PACKAGE / "truth").rglob("*.py"))
    assert files
    outside = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in files
        for line, module in _imports_of(path)
        if module.startswith("mnemonet") and not module.startswith(("mnemonet.model", "mnemonet.truth"))
    ]
    assert outside == []
