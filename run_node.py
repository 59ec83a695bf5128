#!/usr/bin/env python3
"""Run one mnemonet peer node: ``python run_node.py --help``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # run from a checkout without installing

from mnemonet.node.cli_entry import main

if __name__ == "__main__":
    sys.exit(main())
