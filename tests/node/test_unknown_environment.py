"""``MNEMONET_*`` variables that are no setting are warned about at start (pydantic would ignore them silently)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mnemonet.node import cli_entry, logs
from mnemonet.settings import Settings, unknown_environment


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.upper().startswith("MNEMONET_")]:
        monkeypatch.delenv(name)


def test_a_typo_is_named_with_the_setting_it_resembles_and_known_names_pass() -> None:
    messages = unknown_environment({
        "MNEMONET_CLUSTR_KEY": "secret-value", "MNEMONET_PORT": "9000", "mnemonet_log_level": "DEBUG",
        "MNEMONET_PROBE_TIMOUT": "1", "MNEMONET_WHATEVER": "x", "PATH": "/bin", "MNEMONETX": "y",
    })
    assert len(messages) == 3, messages
    clustr, probe, whatever = messages
    assert "MNEMONET_CLUSTR_KEY" in clustr and "did you mean MNEMONET_CLUSTER_KEY" in clustr
    assert "did you mean MNEMONET_PROBE_TIMEOUT?" in probe
    assert "MNEMONET_WHATEVER" in whatever and "did you mean" not in whatever
    assert not any("secret-value" in m for m in messages)  # names only: a value may be a secret


def test_every_setting_variable_is_known() -> None:
    assert unknown_environment({f"MNEMONET_{name.upper()}": "" for name in Settings.model_fields}) == []


def test_a_node_warns_at_start(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                               capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setattr(logs, "setup_logging", lambda level="INFO": None)  # keep caplog's handler in place
    monkeypatch.setenv("MNEMONET_CLUSTR_KEY", "k")
    caplog.set_level(logging.WARNING, logger="mnemonet.node")
    # No key on a public address: the node refuses to start (exit 2) right after the warning.
    code = cli_entry.main(["--host", "0.0.0.0", "--capabilities", "inference", "--data-dir", str(tmp_path)])
    assert code == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("MNEMONET_CLUSTR_KEY is not a mnemonet setting" in m and "MNEMONET_CLUSTER_KEY" in m
               for m in warnings), warnings
    assert "refusing to bind" in capsys.readouterr().err  # the refusal: one plain line on stderr


def test_no_warning_when_every_variable_is_a_setting(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", "k")
    monkeypatch.setenv("MNEMONET_PROFILE", "wan")
    caplog.set_level(logging.WARNING, logger="mnemonet.node")
    cli_entry.warn_unknown_environment()
    assert caplog.records == []


def test_a_one_shot_command_warns_on_stderr(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNEMONET_TOKN", "mnt1.x")
    assert cli_entry.main(["token", "create", "bob", "--cluster-key", "k" * 32]) == 0
    out, err = capsys.readouterr()
    assert "warning: environment variable MNEMONET_TOKN is not a mnemonet setting" in err
    assert "MNEMONET_TOKEN" in err  # the closest name
    assert out.splitlines()[-1].startswith("mnt1.")  # the output stays the token alone on its last line
