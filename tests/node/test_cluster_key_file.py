"""The cluster key can stay out of ``ps``: read from a file or the environment, with a warning for the flag.

Issue 17 (Medium): ``--cluster-key`` showed in ``ps`` to every user of the machine.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mnemonet.node.cli_entry import parse_args
from mnemonet.settings import Settings


def test_the_key_is_read_from_a_file_named_by_flag_or_environment(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "cluster.key"
    key_file.write_text("s3cret-key\n")
    monkeypatch.delenv("MNEMONET_CLUSTER_KEY", raising=False)
    settings, _ = parse_args(["--cluster-key-file", str(key_file)])
    assert settings.cluster_key == "s3cret-key" and settings.cluster_key_file is None
    assert Settings(**settings.model_dump()).cluster_key == "s3cret-key"  # a copy carries the key, read once
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY_FILE", str(key_file))
    assert Settings().cluster_key == "s3cret-key"


def test_a_missing_empty_or_doubled_key_source_is_a_clear_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMONET_CLUSTER_KEY", raising=False)
    empty = tmp_path / "empty.key"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="cannot read"):
        Settings(cluster_key_file=tmp_path / "missing.key")
    with pytest.raises(ValueError, match="is empty"):
        Settings(cluster_key_file=empty)
    empty.write_text("k")
    with pytest.raises(ValueError, match="give one"):
        Settings(cluster_key="k2", cluster_key_file=empty)


def test_the_key_on_the_command_line_is_warned_about(caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMONET_CLUSTER_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="mnemonet.node"):
        settings, _ = parse_args(["--cluster-key", "visible"])
    assert settings.cluster_key == "visible"
    assert any("visible to every user" in r.getMessage() and "--cluster-key-file" in r.getMessage()
               for r in caplog.records)
    caplog.clear()
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", "from-env")
    with caplog.at_level(logging.WARNING, logger="mnemonet.node"):
        assert parse_args([])[0].cluster_key == "from-env"
    assert not caplog.records
