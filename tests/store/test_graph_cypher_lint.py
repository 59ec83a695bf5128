"""Every Cypher text the Neo4j dialect and the store can send passes Neo4j's own front-end.

No Neo4j server runs here, so the texts go through ``@neo4j-cypher/language-support``
(``tools/cypher-lint``, run with Node.js). Undefined-parameter notices are
expected (parameters arrive at run time); anything else fails the test.

Why this is slow, and what keeps it off the suite's clock: the front-end's
semantic analysis (Neo4j's own, compiled to JavaScript) takes 0.4-4 s per
text on these cores, growing faster than the text (the 16 ``claim_write``
variants are ~25 of ~31 s idle, ~80 texts in all). Its result is a pure
function of the text and the installed linter, so the diagnostics are kept in
``node_modules/.cache/`` keyed by both (a changed text, ``lint.mjs`` or lock
file is linted again; a fresh install starts empty). The linter is given no
budget of its own beyond pytest's per-test timeout: a fixed 120 s budget
failed on a loaded machine with the linter still working.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from mnemonet.store.dialects.neo4j import emitted_cypher

LINT_DIR = Path(__file__).resolve().parents[2] / "tools" / "cypher-lint"
CACHE = LINT_DIR / "node_modules" / ".cache" / "mnemonet-cypher-lint.json"
NPM_TIMEOUT = 300.0
# Below pytest's per-test timeout (pyproject.toml), so a hung linter is killed by us, not left running.
LINT_TIMEOUT = 540.0

Diagnostics = dict[str, list[dict[str, object]]]
Lint = Callable[..., Awaitable[Diagnostics]]


async def _run(args: list[str], stdin: bytes | None, timeout: float) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        *args, cwd=LINT_DIR, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, f"{' '.join(args)} failed: {err.decode()[-2000:]}"
    return out


def _linter_id() -> str:
    """What the diagnostics depend on besides the text: the lint script and the exact package versions."""
    digest = hashlib.sha256()
    for name in ("lint.mjs", "package-lock.json"):
        digest.update((LINT_DIR / name).read_bytes())
    return digest.hexdigest()


def _key(linter: str, text: str) -> str:
    return hashlib.sha256(f"{linter}\0{text}".encode()).hexdigest()


@pytest.fixture(scope="module")
async def lint() -> Lint:
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "Node.js and npm are needed to lint the Neo4j dialect's Cypher"
    if not (LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        await _run([npm, "ci", "--silent", "--no-audit", "--no-fund"], None, NPM_TIMEOUT)
    linter = _linter_id()

    async def run(texts: dict[str, str], *, cached: bool = True) -> Diagnostics:
        """Diagnostics per name; with ``cached``, texts linted before by this same linter are not linted again."""
        cache: dict[str, list[dict[str, object]]] = json.loads(CACHE.read_text()) if cached and CACHE.exists() else {}
        keys = {name: _key(linter, text) for name, text in texts.items()}
        todo = {name: text for name, text in texts.items() if keys[name] not in cache}
        if todo:
            payload = json.dumps([{"name": k, "text": v} for k, v in todo.items()]).encode()
            out = await _run([node, "lint.mjs"], payload, LINT_TIMEOUT)
            fresh = {r["name"]: r["diagnostics"] for r in json.loads(out)}
            assert set(fresh) == set(todo)
            cache.update({keys[name]: diagnostics for name, diagnostics in fresh.items()})
            if cached:
                CACHE.parent.mkdir(exist_ok=True)
                tmp = CACHE.with_suffix(f".{os.getpid()}.tmp")  # two runs at once never share a half-written file
                tmp.write_text(json.dumps(cache))
                tmp.replace(CACHE)
        return {name: cache[keys[name]] for name in texts}

    return run


def _real(diagnostics: list[dict[str, object]]) -> list[dict[str, object]]:
    return [d for d in diagnostics if not str(d["message"]).startswith("Parameter $")]


async def test_linter_catches_errors(lint: Lint) -> None:
    """The linter has teeth (run afresh, never from the cache): the constructs the portable subset avoids."""
    result = await lint({
        "undefined": "MATCH (n) RETURN m",
        "typo": "MATCH (n) RETRUN n",
        "old_subquery": "MATCH (n) CALL { WITH n RETURN n AS m } RETURN m",
    }, cached=False)
    assert all(_real(diags) for diags in result.values()), result


# The one deprecation accepted, and where: FalkorDB parses only the importing-WITH form of a subquery
# (``CALL { WITH c ... }``; ``CALL (c) { ... }`` is a syntax error there), which Neo4j 5 runs and marks as
# deprecated. The shared-concept read needs a subquery to stop counting a hub's links at the cap.
ACCEPTED_DEPRECATIONS = {"SHARED_CONCEPT_NEIGHBOURS": "CALL subquery without a variable scope clause is deprecated"}


async def test_every_emitted_cypher_text_passes_neo4j_front_end(lint: Lint) -> None:
    texts = emitted_cypher()
    assert len(texts) > 35  # all distinct write variants, reads, DDL and clear
    result = await lint(texts)
    assert set(result) == set(texts)

    def failing(name: str, diags: list[dict[str, object]]) -> list[dict[str, object]]:
        accepted = ACCEPTED_DEPRECATIONS.get(name)
        return [d for d in _real(diags) if accepted is None or not str(d["message"]).startswith(accepted)]

    failures = {name: failing(name, diags) for name, diags in result.items() if failing(name, diags)}
    assert failures == {}
    for name, message in ACCEPTED_DEPRECATIONS.items():  # accepted only while it is still needed
        assert any(str(d["message"]).startswith(message) for d in result[name]), name


async def test_a_changed_text_is_linted_again(lint: Lint) -> None:
    """The cache cannot hide an error: a text differing by one character from a clean one is linted afresh."""
    # The shortest clean text with a RETURN: the linter's time grows faster than the text (the module
    # docstring), and one character changed proves the point as well in 60 characters as in 3,000.
    name, text = min(((n, t) for n, t in emitted_cypher().items() if "RETURN" in t), key=lambda item: len(item[1]))
    assert _real((await lint({name: text}))[name]) == []
    broken = text.replace("RETURN", "RETRUN", 1)
    assert _real((await lint({name: broken}))[name])
