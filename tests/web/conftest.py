"""Dashboard tests run against a real network: see ``livenet.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from livenet import make_node, service  # noqa: F401  (fixtures)
