"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` server (TEI, Ollama, llama.cpp, vLLM)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any

import httpx

from mnemonet.embed.base import EmbedKind
from mnemonet.embed.errors import EmbeddingError
from mnemonet.embed.validation import batches, validate_texts
from mnemonet.settings import Settings

log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class OpenAIEmbedder:
    """``Embedder`` over HTTP: batches, a timeout per request, retries with backoff on 429/5xx.

    The model name and dimension come from settings; a reply whose vectors
    have another dimension is refused rather than stored in the wrong index.
    """

    def __init__(self, settings: Settings, *, client: httpx.AsyncClient | None = None) -> None:
        if settings.embed_dimension <= 0:
            raise ValueError("embed_dimension: must be positive")
        if not settings.embed_model.strip():
            raise ValueError("embed_model: must not be empty")
        self._settings = settings
        self._url = settings.embed_base_url.rstrip("/") + "/embeddings"
        headers = {"Authorization": f"Bearer {settings.embed_api_key}"} if settings.embed_api_key else {}
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(timeout=settings.embed_timeout, headers=headers)

    @property
    def model(self) -> str:
        return self._settings.embed_model

    @property
    def dimension(self) -> int:
        return self._settings.embed_dimension

    @property
    def query_takes_all_cores(self) -> bool:
        return False

    async def aclose(self) -> None:
        """Close the HTTP client if this embedder created it."""
        if self._own_client:
            await self._client.aclose()

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        """Unit-length vectors, one per text, in order; raises ``EmbeddingError`` when the server fails."""
        s = self._settings
        items = validate_texts(texts, kind, max_texts=s.embed_max_texts, max_chars=s.max_text_chars)
        out: list[list[float]] = []
        for batch in batches(items, s.embed_batch_size):
            out.extend(await self._embed_batch(batch))
        return out

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        s = self._settings
        payload = {"model": s.embed_model, "input": texts}
        attempt = 0
        while True:
            delay = s.embed_retry_backoff * (2**attempt)
            try:
                resp = await self._client.post(self._url, json=payload)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                if attempt >= s.embed_max_retries:
                    raise EmbeddingError(f"embeddings request to {self._url} failed: {exc!r}") from exc
            else:
                if resp.status_code < 400:
                    return self._parse(resp, len(texts))
                if resp.status_code not in _RETRY_STATUS or attempt >= s.embed_max_retries:
                    raise EmbeddingError(
                        f"embeddings server {self._url} answered {resp.status_code}: {resp.text[:300]}"
                    )
                delay = _retry_after(resp) or delay
            attempt += 1
            wait = min(delay, s.embed_retry_max_delay)
            log.warning("embed.retry attempt=%d wait=%.2fs url=%s", attempt, wait, self._url)
            await asyncio.sleep(wait)

    def _parse(self, resp: httpx.Response, n: int) -> list[list[float]]:
        try:
            body: Any = resp.json()
            data = body["data"]
            if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
                raise TypeError("data is not a list of objects")
            # Sorting is stable, so a server that omits "index" keeps its order.
            vectors = [d["embedding"] for d in sorted(data, key=lambda d: int(d.get("index", 0)))]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"malformed embeddings reply from {self._url}: {resp.text[:300]}") from exc
        if len(vectors) != n:
            raise EmbeddingError(f"embeddings reply from {self._url} has {len(vectors)} vectors for {n} texts")
        return [self._normalise(v, i) for i, v in enumerate(vectors)]

    def _normalise(self, vector: Any, i: int) -> list[float]:
        if not isinstance(vector, list) or not all(isinstance(x, (int, float)) for x in vector):
            raise EmbeddingError(f"malformed embeddings reply from {self._url}: data[{i}].embedding is not a list of "
                "numbers")
        if len(vector) != self.dimension:
            raise EmbeddingError(
                f"model {self.model!r} at {self._url} returned {len(vector)}-d vectors but embed_dimension is "
                f"{self.dimension}; set MNEMONET_EMBED_DIMENSION={len(vector)} (and re-embed with "
                "`python run_node.py reembed` if vectors were already stored)"
            )
        norm = math.sqrt(sum(x * x for x in vector))
        if not math.isfinite(norm) or norm == 0.0:
            raise EmbeddingError(f"embeddings reply from {self._url}: data[{i}].embedding has zero or non-finite norm")
        # Servers differ on whether they normalise; cosine search wants unit vectors either way.
        return [x / norm for x in vector]


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
