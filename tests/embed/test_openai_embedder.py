"""OpenAIEmbedder against a real HTTP server on a local port (a scripted FastAPI fake)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mnemonet.embed import EmbeddingError, OpenAIEmbedder, make_embedder
from mnemonet.settings import Settings


def _embedder(fake: Any, **overrides: Any) -> OpenAIEmbedder:
    settings = Settings(
        embed="openai",
        embed_base_url=fake.url,
        embed_model="fake-embed",
        embed_dimension=fake.dim,
        embed_batch_size=3,
        embed_retry_backoff=0.01,
        **overrides,
    )
    return OpenAIEmbedder(settings)


async def test_batches_orders_and_normalises(fake: Any) -> None:
    emb = _embedder(fake)
    texts = [f"text number {i}" for i in range(7)]
    vectors = await emb.embed(texts)
    assert len(vectors) == 7 and all(len(v) == fake.dim for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-9) for v in vectors)
    assert [len(r["input"]) for r in fake.requests] == [3, 3, 1]
    assert fake.requests[0]["model"] == "fake-embed"
    # Order is restored from "index" (the fake replies reversed): same text, same vector.
    again = await emb.embed([texts[5]])
    assert again[0] == pytest.approx(vectors[5])
    await emb.aclose()


async def test_retries_after_429_and_503(fake: Any) -> None:
    emb = _embedder(fake)
    fake.plan[:] = ["429", "503"]
    vectors = await emb.embed(["hello"])
    assert len(vectors) == 1 and len(fake.requests) == 3
    await emb.aclose()


async def test_gives_up_after_max_retries(fake: Any) -> None:
    emb = _embedder(fake, embed_max_retries=1)
    fake.plan[:] = ["503", "503", "503"]
    with pytest.raises(EmbeddingError, match="503"):
        await emb.embed(["hello"])
    assert len(fake.requests) == 2
    await emb.aclose()


async def test_client_error_is_not_retried(fake: Any) -> None:
    emb = _embedder(fake)
    fake.plan[:] = ["400"]
    with pytest.raises(EmbeddingError, match="400.*model not found"):
        await emb.embed(["hello"])
    assert len(fake.requests) == 1
    await emb.aclose()


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("wrong_dim", "returned 16-d vectors but embed_dimension is 8"),
        ("malformed", "malformed"),
        ("short", "2 vectors for 3"),
    ],
)
async def test_bad_replies_are_refused(fake: Any, action: str, message: str) -> None:
    emb = _embedder(fake)
    fake.plan[:] = [action]
    with pytest.raises(EmbeddingError, match=message):
        await emb.embed(["a", "b", "c"])
    await emb.aclose()


async def test_unreachable_server_fails_clearly() -> None:
    settings = Settings(
        embed="openai", embed_base_url="http://127.0.0.1:9/v1", embed_dimension=8, embed_max_retries=1,
        embed_retry_backoff=0.01,
    )
    emb = OpenAIEmbedder(settings)
    with pytest.raises(EmbeddingError, match="failed"):
        await emb.embed(["hello"])
    await emb.aclose()


def test_factory_picks_provider(fake: Any) -> None:
    emb = make_embedder(Settings(embed="openai", embed_base_url=fake.url, embed_model="m", embed_dimension=5))
    assert isinstance(emb, OpenAIEmbedder) and (emb.model, emb.dimension) == ("m", 5)
    with pytest.raises(ValueError, match="embed_dimension"):
        OpenAIEmbedder(Settings(embed="openai", embed_dimension=0))
