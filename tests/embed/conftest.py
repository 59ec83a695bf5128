"""A fake OpenAI-compatible embeddings server on a real local socket, scripted per test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response


@dataclass
class FakeEmbeddings:
    """Replies are taken from ``plan`` in order ("ok" once it runs out); requests are recorded."""

    url: str = ""
    dim: int = 8
    plan: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _vector(text: str, dim: int) -> list[float]:
    # Deterministic and text-dependent, deliberately not unit length (the client normalises).
    return [float((ord(text[i % len(text)]) * (i + 1)) % 17 + 1) for i in range(dim)]


def _app(state: FakeEmbeddings) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> Response:
        body = await request.json()
        state.requests.append(body)
        action = state.plan.pop(0) if state.plan else "ok"
        texts = body["input"]
        if action == "429":
            return JSONResponse({"error": "slow down"}, status_code=429, headers={"Retry-After": "0.05"})
        if action == "503":
            return JSONResponse({"error": "warming up"}, status_code=503)
        if action == "400":
            return JSONResponse({"error": {"message": "model not found"}}, status_code=400)
        if action == "malformed":
            return PlainTextResponse("this is not json")
        if action == "short":
            texts = texts[:-1]
        dim = state.dim * 2 if action == "wrong_dim" else state.dim
        # Reversed with explicit indexes: the client must put them back in order.
        data = [{"object": "embedding", "index": i, "embedding": _vector(t, dim)} for i, t in enumerate(texts)]
        return JSONResponse({"object": "list", "model": body["model"], "data": data[::-1]})

    return app


@pytest.fixture(scope="module")
async def fake_server() -> AsyncIterator[FakeEmbeddings]:
    state = FakeEmbeddings()
    server = uvicorn.Server(uvicorn.Config(_app(state), host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag to poll, no event to await
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    state.url = f"http://127.0.0.1:{port}/v1"
    yield state
    server.should_exit = True
    await task


@pytest.fixture
def fake(fake_server: FakeEmbeddings) -> FakeEmbeddings:
    """The module's server with a fresh plan and request log."""
    fake_server.plan.clear()
    fake_server.requests.clear()
    return fake_server
