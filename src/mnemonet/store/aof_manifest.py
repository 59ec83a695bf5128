"""Redis multi-part append-only manifest: find one that names missing files, rebuild it from the files present.

A manifest lists one base file (the snapshot of a rewrite) and the
incremental files written after it. A rewrite makes base N+1 and keeps only
the incremental files opened since it began; the older ones become history
and are deleted. So a manifest naming an *older* base than the newest one on
disk is stale (an orphaned server wrote it back at its shutdown, issue 14):
every incremental file it names is covered by the newer base, and the files
that belong are that base plus the incremental files numbered after all of
the stale manifest's. Anything else missing (the newest base itself, or an
incremental file after it) is data really gone: refused, naming the file.
``redis-check-aof`` validates a manifest but cannot rebuild one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "appendonly.aof.manifest"
_FILE = re.compile(r"^appendonly\.aof\.(\d+)\.(base\.rdb|base\.aof|incr\.aof)$")


class ManifestError(RuntimeError):
    """The append-only files cannot be made consistent without losing data; the message says which."""


@dataclass(frozen=True)
class AofFile:
    """One file named by a manifest or found on disk."""

    name: str
    seq: int
    kind: str  # "b" base, "i" incremental, "h" history

    def line(self) -> str:
        return f"file {self.name} seq {self.seq} type {self.kind}\n"


def parse(text: str) -> list[AofFile]:
    """The files a manifest names (unknown keys such as ``startoffset`` ignored)."""
    out = []
    for raw in text.splitlines():
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        fields = dict(zip(words[::2], words[1::2], strict=False))
        try:
            out.append(AofFile(fields["file"], int(fields["seq"]), fields["type"]))
        except (KeyError, ValueError) as exc:
            raise ManifestError(f"unreadable manifest line {raw!r}") from exc
    return out


def on_disk(directory: Path) -> list[AofFile]:
    """The base and incremental files present in ``directory``."""
    found = []
    for path in directory.iterdir():
        match = _FILE.match(path.name)
        if match:
            found.append(AofFile(path.name, int(match[1]), "b" if match[2].startswith("base") else "i"))
    return found


def missing(directory: Path) -> list[str]:
    """Files the manifest in ``directory`` names (history excepted) that are not there."""
    manifest = directory / MANIFEST
    if not manifest.exists():
        return []
    return [f.name for f in parse(manifest.read_text()) if f.kind != "h" and not (directory / f.name).exists()]


def rebuilt(directory: Path) -> str:
    """The manifest the files present call for, when the current one is stale; ``ManifestError`` otherwise."""
    named = [f for f in parse((directory / MANIFEST).read_text()) if f.kind != "h"]
    present = on_disk(directory)
    bases = sorted((f for f in present if f.kind == "b"), key=lambda f: f.seq)
    gone = [f.name for f in named if not (directory / f.name).exists()]
    stale_bases = [f.seq for f in named if f.kind == "b"]
    if not bases or (stale_bases and max(stale_bases) >= bases[-1].seq):
        raise ManifestError(
            f"the append-only manifest in {directory} names {', '.join(gone)}, missing, and no newer base file "
            f"present stands in for it (present: {', '.join(sorted(f.name for f in present)) or 'none'}): "
            "writes in the missing file cannot be recovered; restore it or move the directory aside"
        )
    newest = bases[-1]
    covered = max((f.seq for f in named if f.kind == "i"), default=0)
    incrs = sorted((f for f in present if f.kind == "i" and f.seq > covered), key=lambda f: f.seq)
    return "".join(f.line() for f in [newest, *incrs])
