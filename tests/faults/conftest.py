"""Fault tests reuse the network helpers of ``tests/p2p/netsupport.py``.

Their own helpers are in ``faultsupport.py``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))
pytest.register_assert_rewrite("partition_scenario")  # its asserts explain themselves like a test's

from faultsupport import Partition, llm_fake_server  # noqa: E402
from netsupport import NodeFactory, node_factory  # noqa: E402

_llm = llm_fake_server()
_fake_server_session = _llm._fake_server_session
fake_server = _llm.fake_server


@pytest.fixture
async def make_node() -> AsyncIterator[NodeFactory]:
    """Start nodes on free local ports; each still running is killed after the test."""
    async with node_factory() as make:
        yield make


@pytest.fixture
def partition(monkeypatch: pytest.MonkeyPatch) -> Partition:
    """A partition injector on every node's transport (inactive until ``split``)."""
    return Partition(monkeypatch)
