"""A LangGraph agent whose long-term memory is mnemonet, with no language-model API: it runs offline.

Each turn goes through a two-node graph: ``remember`` stores what the user says as a memory of that user
(``("users", USER, "memories")``), ``respond`` answers a question from the memories the store finds by
meaning. The nodes are plain functions (where a real agent would call a chat model); the memory is
the network's, so what one run stored, the next run (or another agent) recalls.

    python run_node.py demo                        # or any network; prints a client token
    MNEMONET_TOKEN=<token> python examples/langgraph_agent.py --url http://127.0.0.1:9000

Needs ``pip install 'mnemonet[langgraph]'``.
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Sequence
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from mnemonet.integrations.langgraph import MnemonetStore


class Turn(TypedDict):
    user: str
    said: str
    reply: str


def remember(state: Turn, *, store: BaseStore) -> dict[str, str]:
    """Keep what the user states (not their questions) as one memory."""
    if not state["said"].rstrip().endswith("?"):
        store.put(("users", state["user"], "memories"), uuid.uuid4().hex, {"text": state["said"]})
    return {}


def respond(state: Turn, *, store: BaseStore) -> dict[str, str]:
    """Answer a question with the memory that matches it best; acknowledge a statement."""
    said = state["said"].strip()
    if not said.endswith("?"):
        return {"reply": "noted"}
    found = store.search(("users", state["user"], "memories"), query=said, limit=1)
    return {"reply": found[0].value["text"] if found else "I do not remember anything about that"}


def build(store: BaseStore) -> Any:  # a CompiledStateGraph, generic in LangGraph's own types
    """The agent's graph, compiled with ``store`` as its long-term memory."""
    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "respond")
    graph.add_edge("respond", END)
    return graph.compile(store=store)


def converse(url: str, token: str, user: str, lines: Sequence[str]) -> list[str]:
    """Run each line through the agent as ``user``; the agent's replies."""
    with MnemonetStore(url, token) as store:
        agent = build(store)
        return [agent.invoke({"user": user, "said": line, "reply": ""})["reply"] for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:9000", help="any node of the network")
    parser.add_argument("--user", default="sam", help="whose memories (default: sam)")
    args = parser.parse_args()
    lines = ["I keep bees on the roof of the library", "My sister lives in Porto", "Where does my sister live?",
             "What do I keep on the roof?"]
    for line, reply in zip(lines, converse(args.url, os.environ.get("MNEMONET_TOKEN", ""), args.user, lines),
                           strict=True):
        print(f"{args.user}> {line}\nagent> {reply}")


if __name__ == "__main__":
    main()
