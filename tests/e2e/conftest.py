"""Multi-node scenarios reuse the network test helpers of ``tests/p2p/netsupport.py``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import NodeFactory, node_factory


@pytest.fixture
async def make_node() -> AsyncIterator[NodeFactory]:
    """Start nodes on free local ports; each still running is killed after the test."""
    async with node_factory() as make:
        yield make
