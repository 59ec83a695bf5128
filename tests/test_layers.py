"""Imports point down the layers: nothing below the adapters imports ``node``, ``cli``, ``web`` or ``mcp``.

Read from the source with ``ast``, so imports under ``if TYPE_CHECKING:`` and inside functions count too:
a type hint is no excuse for an upward arrow (DESIGN.md, layer table). Inside ``service``, the job modules
behind the ``MemoryService`` façade import neither one another nor the façade, the package never imports
``p2p`` (no sockets, no peers), and its modules import one another without a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mnemonet"
LOWER = ("p2p", "service", "store", "llm", "embed", "agents", "truth", "model")
UPPER = ("node", "cli", "web", "mcp", "integrations")
SERVICE = PACKAGE / "service"
# The modules of one job each behind ``MemoryService`` (service/memory.py), which composes them.
JOBS = ("ingest", "claims", "reads", "briefing", "erasure", "workers", "operations")
# What composes the jobs, so a job importing it closes a cycle: the façade and what builds or wraps it.
COMPOSERS = ("memory", "build", "spaces", "__init__")


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


def _in_layers(module: str, layers: tuple[str, ...]) -> bool:
    return any(module == f"mnemonet.{top}" or module.startswith(f"mnemonet.{top}.") for top in layers)


def _upward(module: str) -> bool:
    return _in_layers(module, UPPER)


def _service_modules(imports: list[tuple[int, str]]) -> set[str]:
    """The modules of ``service/`` (by file name, ``__init__`` for the package itself) that ``imports`` name."""
    stems = {path.stem for path in SERVICE.glob("*.py")}
    found: set[str] = set()
    for _, module in imports:
        if module == "mnemonet.service":
            found.add("__init__")
        elif module.startswith("mnemonet.service.") and module.split(".")[2] in stems:
            found.add(module.split(".")[2])
    return found


def _service_graph() -> dict[str, set[str]]:
    """Each module of ``service/`` with the modules of ``service/`` it imports."""
    return {path.stem: _service_modules(_imports_of(path)) - {path.stem} for path in sorted(SERVICE.glob("*.py"))}


def _a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (its modules in import order, the first again at the end), or [] if it has none."""
    acyclic: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module):], module]
        if module in acyclic:
            return []
        for imported in sorted(graph.get(module, ())):
            if cycle := visit(imported, [*path, module]):
                return cycle
        acyclic.add(module)
        return []

    return next((cycle for module in sorted(graph) if (cycle := visit(module, []))), [])


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


def test_the_service_scan_sees_its_modules_and_finds_a_cycle() -> None:
    # The service rules' teeth: every kind of import of a service module is seen, and a cycle is found
    # however long it is (and none where there is none).
    source = (
        "from typing import TYPE_CHECKING\n"
        "from mnemonet.service import reads\n"
        "from .common import now_ms\n"
        "if TYPE_CHECKING:\n"
        "    from mnemonet.service.memory import MemoryService\n"
        "def f():\n"
        "    from mnemonet.p2p.rpc import call\n"
    )
    imports = _imported_modules(source, "mnemonet.service")
    assert _service_modules(imports) == {"__init__", "reads", "common", "memory"}
    assert [m for _, m in imports if _in_layers(m, ("p2p",))] == ["mnemonet.p2p.rpc", "mnemonet.p2p.rpc.call"]
    assert _a_cycle({"memory": {"reads", "common"}, "reads": {"common", "recall"}, "recall": {"memory"}}) == [
        "memory", "reads", "recall", "memory"]
    assert _a_cycle({"memory": {"reads", "common"}, "reads": {"common"}, "common": set()}) == []


def test_the_service_modules_import_one_another_without_a_cycle() -> None:
    graph = _service_graph()
    assert {"memory", *JOBS} <= graph.keys()
    assert _a_cycle(graph) == []


def test_the_service_never_imports_the_network() -> None:
    network = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in sorted(SERVICE.rglob("*.py"))
        for line, module in _imports_of(path)
        if _in_layers(module, ("p2p",))
    ]
    assert network == []


@pytest.mark.parametrize("job", JOBS)
def test_a_job_module_imports_neither_another_job_nor_the_facade(job: str) -> None:
    # What a job needs of another's work is handed in where the façade composes them (``stats`` is given
    # ``extraction_infers``), so each job reads alone and no job can close a cycle through the others.
    imported = _service_modules(_imports_of(SERVICE / f"{job}.py"))
    assert sorted(imported & ({*JOBS, *COMPOSERS} - {job})) == []
