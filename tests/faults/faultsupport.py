"""Helpers of the fault tests: bounds, the transport-level partition injector, the fake language-model server.

Test modules import them from here, not from ``conftest``: when pytest is
given several test directories, ``conftest`` names the last one it loaded.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.envelope import TAG_CHARS
from mnemonet.p2p.transport import PeerTimeout, PeerUnavailable, Transport
from mnemonet.settings import Settings

# Timers run late on two loaded cores: bounds derived from the settings get this factor.
BOUND_MARGIN = 2.0


def reconverge_bound(settings: Settings) -> float:
    """Seconds from healing a partition until every node lists every other as alive again.

    Each side holds the other dead and probes only its own. Within one
    ``push_pull_interval`` a node exchanges state with a dead member (Serf's
    reconnect; one still cut off costs ``control_timeout``), which learns it was
    declared dead and refutes; the refutations then spread by gossip, and a
    suspicion raised around the healing has ``suspicion_timeout`` to be refuted.
    """
    return BOUND_MARGIN * (2 * settings.push_pull_interval + settings.control_timeout + settings.suspicion_timeout)


def llm_fake_server() -> ModuleType:
    """The scripted fake Anthropic/OpenAI server of tests/llm, loaded once under its own name."""
    name = "llm_fake_server"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parent.parent / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


FakeServer = llm_fake_server().FakeServer


def _sender(raw: bytes | str) -> str | None:
    try:
        body = json.loads(raw[TAG_CHARS:])
    except (ValueError, TypeError):
        return None
    return body.get("sender") if isinstance(body, dict) else None


class Partition:
    """Cuts every node of one group off from every node of the other, then heals.

    Linux network namespaces would do this below the process, but in-process
    nodes share one network stack, so the cut is made at the transport: an
    envelope from the other side is dropped on arrival (as a lost packet is),
    an HTTP post or a new link to the other side fails after its timeout. Open
    WebSocket links stay up, as TCP connections do during a real partition.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._side: dict[str, int] = {}
        self._by_url: dict[str, str] = {}
        self.dropped = 0
        partition = self
        on_message, post_url, dial = Transport._on_message, Transport.post_url, Transport.dial

        async def cut_on_message(self: Transport, link: Any, raw: bytes) -> None:
            if partition.cut(self.node_id, _sender(raw)):
                partition.dropped += 1
                return
            await on_message(self, link, raw)

        async def cut_post_url(self: Transport, url: str, path: str, env: Any, timeout: float) -> Any:
            if partition.cut(self.node_id, partition._by_url.get(url.rstrip("/"))):
                partition.dropped += 1
                await asyncio.sleep(timeout)
                raise PeerTimeout(f"{url} unreachable (partition)")
            return await post_url(self, url, path, env, timeout)

        async def cut_dial(self: Transport, member: Any) -> Any:
            if partition.cut(self.node_id, member.node_id):
                raise PeerUnavailable(f"{member.node_id} unreachable (partition)")
            return await dial(self, member)

        monkeypatch.setattr(Transport, "_on_message", cut_on_message)
        monkeypatch.setattr(Transport, "post_url", cut_post_url)
        monkeypatch.setattr(Transport, "dial", cut_dial)

    def split(self, *groups: Iterable[PeerNode]) -> None:
        """Cut the groups off from each other."""
        for index, group in enumerate(groups):
            for node in group:
                self._side[node.node_id] = index
                self._by_url[node.url] = node.node_id

    def heal(self) -> None:
        """Let everything through again."""
        self._side.clear()

    def cut(self, here: str, there: str | None) -> bool:
        """True while ``here`` and ``there`` are on different sides."""
        a, b = self._side.get(here), self._side.get(there or "")
        return a is not None and b is not None and a != b
