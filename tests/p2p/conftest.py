"""Network test fixtures; the helpers live in ``netsupport`` (pytest puts this folder on sys.path)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from netsupport import NodeFactory, node_factory


@pytest.fixture
async def make_node() -> AsyncIterator[NodeFactory]:
    """Start nodes on free local ports; each still running is killed after the test."""
    async with node_factory() as make:
        yield make
