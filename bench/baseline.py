"""A baseline revision checked out beside this one, so a bench can run both in one window of the machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def baseline_tree(revision: str) -> Path:
    """A git worktree of ``revision`` under .data/bench/ (made once, detached), for its src/ and run_node.py."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", revision], check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = REPO / ".data" / "bench" / f"baseline-{sha}"
    if not (tree / "src" / "mnemonet").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True)
    return tree
