"""Ambiguous pairs wait across passes for one ``judge_pairs`` call, so calls do not follow pass size.

Under load the validation worker's passes are small (a pass per write event), and one call per pass
with ambiguous pairs cost 0.60-0.68 calls per observation against 0.19 idle (bench/README.md). The
worker now holds those pairs (their statements stay pending in the store) until ``llm_max_pairs`` are
held or ``validation_judge_wait`` has passed since the first, then judges them all in one call.
"""

from __future__ import annotations

import asyncio

from mnemonet.agents import Ownership, ValidationAgent
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

# Two preferences of one topic (prefers has one value per topic): no rule decides these, the model does.
FEELINGS = [("user prefers morning meetings", "user prefers afternoon meetings"),
            ("user prefers jazz concerts", "user prefers rock concerts"),
            ("user prefers tea parties", "user prefers garden parties")]


async def _backlog(service: MemoryService) -> int:
    return int((await service.stats())["backlog"]["validation"])


async def test_pairs_of_many_small_passes_are_judged_in_one_call(
    service: MemoryService, agent_settings: Settings
) -> None:
    settings = agent_settings.model_copy(update={"validation_judge_wait": 600.0})
    validator = ValidationAgent(service, settings, Ownership.solo("v1"), make_language_model(settings))
    for first, second in FEELINGS:  # one small pass per pair, as under load
        await service.claim(first, source="user")
        await service.claim(second, source="user")
        await validator.run_once()
    assert validator.stats()["llm_calls"] == 0  # held, not judged pass by pass
    assert await _backlog(service) > 0  # nothing held is marked done: a crash now loses nothing

    processed = await validator.drain()  # the end of a drain judges what is held

    assert validator.stats()["llm_calls"] == 1
    assert validator.stats()["contradictions"] >= len(FEELINGS)
    assert processed > 0 and await _backlog(service) == 0


async def test_a_running_worker_judges_held_pairs_once_the_wait_has_passed(
    service: MemoryService, agent_settings: Settings
) -> None:
    settings = agent_settings.model_copy(update={"validation_judge_wait": 0.3, "worker_poll_interval": 600.0})
    validator = ValidationAgent(service, settings, Ownership.solo("v1"), make_language_model(settings))
    await validator.start()
    try:
        for claim in FEELINGS[0]:
            await service.claim(claim, source="user")
        validator.notify({"type": "claim"})  # the event a store node would flood
        async with asyncio.timeout(30):  # no poll comes within the test: only the held pairs' own timer
            while validator.stats()["contradictions"] < 1:  # noqa: ASYNC110 - the worker's counter
                await asyncio.sleep(0.02)
        assert validator.stats()["llm_calls"] == 1
        async with asyncio.timeout(30):
            while await _backlog(service):  # noqa: ASYNC110 - the backlog is in the store
                await asyncio.sleep(0.02)
    finally:
        await validator.stop()
