"""The service's read limits are settings, passed in, not module constants (issue 20)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings


@pytest.fixture
async def small_service(service_settings: Settings, embedder, unique_name: str) -> AsyncIterator[MemoryService]:
    settings = service_settings.model_copy(update={"search_max_k": 3})
    svc = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema=unique_name)
    yield svc
    await svc.close()


async def test_search_k_is_bounded_by_the_setting(small_service: MemoryService) -> None:
    await small_service.observe("Alice lives in Paris.", source="alice")
    assert len(await small_service.search("Alice", k=3)) <= 3
    with pytest.raises(ValueError, match="k: must be an integer between 1 and 3"):
        await small_service.search("Alice", k=4)


def test_the_recall_limits_are_settings_with_their_old_values() -> None:
    settings = Settings()
    assert (settings.search_max_k, settings.recall_opened_hits, settings.recall_contradiction_scan) == (100, 10, 500)
