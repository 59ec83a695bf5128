"""A scripted fake HTTP server for the remote providers: FastAPI on uvicorn, on a free local port.

It answers ``POST /v1/messages`` (Anthropic) and ``POST /v1/chat/completions``
(OpenAI-compatible) from a queue of scripted replies and records every request
it received, so tests drive the real SDK / httpx client over a real socket.
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from mnemonet.settings import Settings


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: str | None = None


@dataclass
class FakeServer:
    url: str
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def push(self, status: int = 200, body: Any = None, *, headers: dict[str, str] | None = None,
             delay: float = 0.0, raw: str | None = None) -> None:
        self.replies.append(Reply(status, body, headers or {}, delay, raw))

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "anthropic_base_url": self.url,
            "openai_base_url": f"{self.url}/v1",
            "llm_retry_backoff": 0.001,
            "llm_retry_max_delay": 0.05,
            "llm_max_retries": 2,
            "llm_timeout": 5.0,
        }
        values.update(overrides)
        return Settings(**values)


def _app(server: FakeServer) -> FastAPI:
    app = FastAPI()

    async def handle(request: Request) -> Response:
        server.requests.append({"path": request.url.path,
            "headers": dict(request.headers), "json": await request.json()})
        if not server.replies:
            return JSONResponse({"error": {"type": "test_error", "message": "no scripted reply left"}}, status_code=418)
        reply = server.replies.popleft()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw is not None:
            return Response(reply.raw, status_code=reply.status, headers=reply.headers, media_type="application/json")
        return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)

    app.add_api_route("/v1/messages", handle, methods=["POST"])
    app.add_api_route("/v1/chat/completions", handle, methods=["POST"])
    return app


@pytest.fixture(scope="session")
async def _fake_server_session() -> AsyncIterator[FakeServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    fake = FakeServer(url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    server = uvicorn.Server(uvicorn.Config(_app(fake), log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    yield fake
    server.should_exit = True
    await task
    sock.close()


@pytest.fixture
def fake_server(_fake_server_session: FakeServer) -> FakeServer:
    """The session's fake server with an empty script and request log."""
    _fake_server_session.replies.clear()
    _fake_server_session.requests.clear()
    return _fake_server_session
