"""``make clean`` keeps the memory; only ``make wipe-data CONFIRM=yes`` deletes it (issue 21 item 5)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _checkout(tmp_path: Path) -> Path:
    """A copy of the Makefile beside a fake virtualenv and a data directory with one file in it."""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".data" / "falkordb").mkdir(parents=True)
    (tmp_path / ".data" / "falkordb" / "appendonly.aof").write_text("memories")
    return tmp_path


def _make(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_clean_keeps_the_data_directory(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    assert _make(checkout, "clean").returncode == 0
    assert not (checkout / ".venv").exists()
    assert (checkout / ".data" / "falkordb" / "appendonly.aof").read_text() == "memories"


def test_wipe_data_warns_and_needs_confirmation(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    refused = _make(checkout, "wipe-data")
    assert refused.returncode != 0
    assert "deletes .data: every observation, statement and vector" in refused.stderr
    assert "make wipe-data CONFIRM=yes" in refused.stderr
    assert (checkout / ".data" / "falkordb" / "appendonly.aof").exists()
    done = _make(checkout, "wipe-data", "CONFIRM=yes")
    assert done.returncode == 0 and "deleting .data (all local memory)" in done.stderr
    assert not (checkout / ".data").exists()
