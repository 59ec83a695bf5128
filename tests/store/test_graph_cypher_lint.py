"""Every Cypher text the Neo4j dialect and the store can send passes Neo4j's own front-end.

No Neo4j server runs here, so the texts go through ``@neo4j-cypher/language-support``
(``tools/cypher-lint``, run with Node.js). Undefined-parameter notices are
expected (parameters arrive at run time); anything else fails the test.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from mnemonet.store.dialects.neo4j import emitted_cypher

LINT_DIR = Path(__file__).resolve().parents[2] / "tools" / "cypher-lint"
NPM_TIMEOUT = 300.0
LINT_TIMEOUT = 120.0


async def _run(args: list[str], stdin: bytes | None, timeout: float) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        *args, cwd=LINT_DIR, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    assert proc.returncode == 0, f"{' '.join(args)} failed: {err.decode()[-2000:]}"
    return out


@pytest.fixture(scope="module")
async def lint() -> object:
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "Node.js and npm are needed to lint the Neo4j dialect's Cypher"
    if not (LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        await _run([npm, "ci", "--silent", "--no-audit", "--no-fund"], None, NPM_TIMEOUT)

    async def run(texts: dict[str, str]) -> dict[str, list[dict[str, object]]]:
        payload = json.dumps([{"name": k, "text": v} for k, v in texts.items()]).encode()
        out = await _run([node, "lint.mjs"], payload, LINT_TIMEOUT)
        return {r["name"]: r["diagnostics"] for r in json.loads(out)}

    return run


def _real(diagnostics: list[dict[str, object]]) -> list[dict[str, object]]:
    return [d for d in diagnostics if not str(d["message"]).startswith("Parameter $")]


async def test_linter_catches_errors(lint: object) -> None:
    """The linter has teeth: the constructs the portable subset avoids are flagged."""
    result = await lint({  # type: ignore[operator]
        "undefined": "MATCH (n) RETURN m",
        "typo": "MATCH (n) RETRUN n",
        "old_subquery": "MATCH (n) CALL { WITH n RETURN n AS m } RETURN m",
    })
    assert all(_real(diags) for diags in result.values()), result


async def test_every_emitted_cypher_text_passes_neo4j_front_end(lint: object) -> None:
    texts = emitted_cypher()
    assert len(texts) > 35  # all distinct write variants, reads, DDL and clear
    result = await lint(texts)  # type: ignore[operator]
    assert set(result) == set(texts)
    failures = {name: _real(diags) for name, diags in result.items() if _real(diags)}
    assert failures == {}
