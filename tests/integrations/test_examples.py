"""The example agents in ``examples/`` run offline against a real node, as the README says."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from netsupport import client_token

from mnemonet.node.peer_node import PeerNode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def test_the_langgraph_agent_stores_and_recalls_through_the_network(store_node: PeerNode) -> None:
    agent = _example("langgraph_agent")
    token = client_token("read,write", name="example")
    first = await asyncio.to_thread(agent.converse, store_node.url, token, "sam",
                                    ["I keep bees on the roof of the library", "My sister lives in Porto"])
    assert first == ["noted", "noted"]
    # A second run (a new store, a new graph): the memory is the network's, not the process's.
    second = await asyncio.to_thread(agent.converse, store_node.url, token, "sam",
                                     ["Where does my sister live?", "What do I keep on the roof?"])
    assert second == ["My sister lives in Porto", "I keep bees on the roof of the library"]
    other = await asyncio.to_thread(agent.converse, store_node.url, token, "kim", ["Where does my sister live?"])
    assert other == ["I do not remember anything about that"]  # another user's namespace
