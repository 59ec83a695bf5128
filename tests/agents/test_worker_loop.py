"""The worker loop: woken by events, catching up by polling, failures counted and retried; API input checks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mnemonet.agents import InferenceAgent, Ownership
from mnemonet.model.api import InferredClaim
from mnemonet.p2p.errors import NoCapablePeer
from mnemonet.service import MemoryService
from mnemonet.settings import Settings


class FlakyInfer:
    """The real service, except that ``infer`` fails for texts containing 'flaky' until healed."""

    def __init__(self, service: MemoryService, error: Exception | None = None) -> None:
        self._service = service
        self.healed = False
        self.error = error or ConnectionError("llm peer unreachable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        if "flaky" in observation_text and not self.healed:
            raise self.error
        return await self._service.infer(observation_text, source)


class GatedInfer:
    """The real service, except that ``infer`` waits to be released, counting the calls in flight at once."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await self.release.wait()
            return await self._service.infer(observation_text, source)
        finally:
            self.in_flight -= 1


async def _until(check: Any, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_events_wake_it_polling_catches_up_and_failures_are_retried(
    service: MemoryService, agent_settings: Settings
) -> None:
    listeners: list[Any] = []
    api = FlakyInfer(service)
    settings = agent_settings.model_copy(update={"worker_poll_interval": 30.0})  # only events wake it here

    def subscribe(listener: Callable[[dict[str, Any]], Any]) -> Callable[[], None]:
        listeners.append(listener)
        return lambda: None

    agent = InferenceAgent(api, settings, Ownership.solo("w"), subscribe=subscribe)
    await agent.start()
    try:
        await _until(lambda: agent.stats()["passes"] == 1)  # the catch-up pass at start
        await service.observe("Bob lives in Rome.")
        await service.observe("Zed flaky lives in Oslo.")
        for listener in listeners:
            listener({"type": "observation", "ids": []})
        await _until(lambda: agent.stats()["processed"] == 1 and agent.stats()["failed"] == 1)
        assert [o.text for o in await service.pending_observations(InferenceAgent.source)] == [
            "Zed flaky lives in Oslo."]
        api.healed = True
        listeners[0]({"type": "claim", "ids": []})  # not a type inference wakes on
        await asyncio.sleep(0.2)
        assert agent.stats()["processed"] == 1
        listeners[0]({"type": "observation", "ids": []})
        await _until(lambda: agent.stats()["processed"] == 2)
    finally:
        await agent.stop()
    assert await service.pending_observations(InferenceAgent.source) == []


async def test_no_peer_to_serve_an_item_is_a_wait_not_a_failure(
    service: MemoryService, agent_settings: Settings
) -> None:
    api = FlakyInfer(service, NoCapablePeer("infer: no live peer with capability 'llm'"))
    agent = InferenceAgent(api, agent_settings, Ownership.solo("w"))
    await service.observe("Yan flaky lives in Quito.")
    await agent.run_once()
    assert (agent.stats()["waiting"], agent.stats()["failed"], agent.stats()["processed"]) == (1, 0, 0)
    assert [o.text for o in await service.pending_observations(InferenceAgent.source)] == ["Yan flaky lives in Quito."]
    api.healed = True
    await agent.run_once()
    assert agent.stats()["processed"] == 1
    assert await service.pending_observations(InferenceAgent.source) == []


async def test_worker_api_refuses_bad_input(service: MemoryService) -> None:
    with pytest.raises(ValueError, match="kind"):
        await service.link_statements("REPLACES", "st-1", "st-2", "", "validation-agent")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        await service.pending_statements("validation-agent", limit=0)
    with pytest.raises(ValueError, match="ids"):
        await service.mark_processed("validation-agent", ["ok"] * 501)
    with pytest.raises(ValueError, match="derived_from"):
        await service.record_summary("cpt-1", "a summary", [], "consolidation-agent")
    with pytest.raises(ValueError, match="text"):
        await service.record_summary("cpt-1", "", ["st-1"], "consolidation-agent")
    with pytest.raises(ValueError, match="min_new"):
        await service.pending_consolidation("consolidation-agent", 0)
    assert await service.mark_processed("validation-agent", ["st-unknown"]) == 0


async def test_a_batch_runs_its_items_at_once_up_to_worker_concurrency(
    service: MemoryService, agent_settings: Settings
) -> None:
    # Five items, one batch: done one after the other, each would wait out its own model call.
    settings = agent_settings.model_copy(update={"worker_concurrency": 3, "worker_batch_size": 20})
    for i in range(5):
        await service.observe(f"Person{i} works at Company{i}.")
    api = GatedInfer(service)
    agent = InferenceAgent(api, settings, Ownership.solo("w"))
    drain = asyncio.create_task(agent.drain())
    try:
        await _until(lambda: api.in_flight == 3)
        api.release.set()
        assert await drain == 5
    finally:
        drain.cancel()
    assert api.most == 3  # never more than worker_concurrency in flight
    assert agent.stats()["processed"] == 5
    assert await service.pending_observations(InferenceAgent.source) == []
