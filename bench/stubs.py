"""Stand-ins for the remote services a deployment calls, served by a process of their own for the benches.

    python bench/stubs.py [--model-latency 0.5] [--calls 20]       # checks the stubs and prints a table
    python bench/stubs.py --serve --port P [--model-latency 0.5]   # what ``start`` runs

- ``POST /v1/embeddings``: an OpenAI-compatible embeddings endpoint that answers at once (a stand-in
  for a GPU embedding server): a deterministic unit vector per text, ``STUB_DIMENSION`` wide.
- ``POST /v1/messages``: an Anthropic Messages endpoint answering after a fixed latency (a stand-in
  for Claude, whose calls take hundreds of milliseconds). It answers the inference prompt's tool
  (``record_inferred_claims``) the way a model would for the benches' observations: "PersonN works at
  CompanyN." supports "CompanyN employs PersonN"; anything else supports nothing. Other tools are
  refused (HTTP 400): no bench uses them.
- ``GET /stats``: requests served, by endpoint.

``start`` runs them as a separate process, so their CPU (JSON, the HTTP server) is not counted in, or
taken from, the process of the node being measured, as with real remote services.
Run alone, this module starts them that way, calls each through the clients mnemonet uses (the
``anthropic`` SDK, httpx) and prints the latencies it sees.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

STUB_DIMENSION = 384
READY_WITHIN = 60.0  # seconds for the stub process to import and listen, on a loaded machine
INFERENCE_TOOL = "record_inferred_claims"
_WORKS_AT = re.compile(r"\b(Person\d+) works at (Company\d+)\b")


def _vector(text: str) -> list[float]:
    """A unit vector that depends only on the text (so the same text always lands in the same place)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    v = np.random.default_rng(seed).standard_normal(STUB_DIMENSION)
    return [float(x) for x in v / np.linalg.norm(v)]


def _claims(prompt: str) -> list[dict[str, Any]]:
    return [{"subject": company, "predicate": "employs", "object": person, "negated": False, "confidence": 0.8}
            for person, company in _WORKS_AT.findall(prompt)]


def app(model_latency: float) -> FastAPI:
    """The stubs' routes; ``/v1/messages`` answers ``model_latency`` seconds after a request arrives."""
    api = FastAPI()
    served = {"embeddings": 0, "messages": 0}

    @api.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict[str, Any]:
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        served["embeddings"] += 1
        return {"object": "list", "model": body.get("model", "stub"),
                "data": [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    @api.post("/v1/messages", response_model=None)
    async def messages(request: Request) -> dict[str, Any] | JSONResponse:
        body = await request.json()
        tool = (body.get("tool_choice") or {}).get("name")
        if tool != INFERENCE_TOOL:
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error", "message":
                                 f"the bench's model stub answers only {INFERENCE_TOOL}, not {tool!r}"}}, 400)
        await asyncio.sleep(model_latency)
        served["messages"] += 1
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        call = {"type": "tool_use", "id": "toolu_stub", "name": tool, "input": {"claims": _claims(prompt)}}
        return {"id": f"msg_stub_{served['messages']}", "type": "message", "role": "assistant",
                "model": body.get("model", "stub"), "stop_reason": "tool_use", "stop_sequence": None,
                "content": [call],
                "usage": {"input_tokens": len(prompt) // 4, "output_tokens": 20}}

    @api.get("/stats")
    async def stats() -> dict[str, int]:
        return served

    return api


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Stubs:
    """The stub process and its address."""

    process: subprocess.Popen[bytes]
    url: str  # http://127.0.0.1:PORT
    model_latency: float

    def embed_settings(self) -> dict[str, Any]:
        """Settings that point a node's embedder at the stub."""
        return {"embed": "openai", "embed_base_url": f"{self.url}/v1", "embed_model": "stub",
                "embed_dimension": STUB_DIMENSION}

    def model_settings(self) -> dict[str, Any]:
        """Settings that point a node's language model at the stub (the API key comes from ``model_env``)."""
        return {"llm": "anthropic", "anthropic_base_url": self.url, "anthropic_model": "stub"}

    def model_env(self) -> dict[str, str]:
        """``model_settings`` as a node process's environment, with the key the Anthropic provider needs."""
        return {"ANTHROPIC_API_KEY": "bench-stub-key", "MNEMONET_LLM": "anthropic",
                "MNEMONET_ANTHROPIC_BASE_URL": self.url, "MNEMONET_ANTHROPIC_MODEL": "stub"}

    def served(self) -> dict[str, int]:
        """Requests the stubs have answered so far, by endpoint."""
        return dict(httpx.get(f"{self.url}/stats", timeout=10).json())

    def stop(self) -> None:
        """End the stub process."""
        self.process.terminate()
        self.process.wait(30)


def start(model_latency: float = 0.0) -> Stubs:
    """The stubs in a process of their own on a free local port, once they answer."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", "--port", str(port),
         "--model-latency", str(model_latency)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stubs = Stubs(process, f"http://127.0.0.1:{port}", model_latency)
    deadline = time.monotonic() + READY_WITHIN
    while True:
        try:
            stubs.served()
            return stubs
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                stubs.process.kill()
                raise RuntimeError("the stub process did not start") from None
            time.sleep(0.1)


async def _check(stubs: Stubs, calls: int) -> tuple[list[float], list[float]]:
    """Seconds per model call through the ``anthropic`` SDK and per embeddings call through httpx."""
    import anthropic

    model, embeds = [], []
    async with anthropic.AsyncAnthropic(api_key="bench-stub-key", base_url=stubs.url, max_retries=0) as client, \
            httpx.AsyncClient(base_url=f"{stubs.url}/v1") as http:
        for i in range(calls):
            started = time.monotonic()
            reply = await client.messages.create(
                model="stub", max_tokens=64, messages=[{"role": "user", "content": f"Person{i} works at Company{i}."}],
                tools=[{"name": INFERENCE_TOOL, "input_schema": {"type": "object"}}],
                tool_choice={"type": "tool", "name": INFERENCE_TOOL})
            model.append(time.monotonic() - started)
            block = reply.content[0]
            if block.type != "tool_use" or block.input != {"claims": _claims(f"Person{i} works at Company{i}.")}:
                raise RuntimeError(f"the model stub answered {reply.content!r}")
            started = time.monotonic()
            (await http.post("/embeddings", json={"model": "stub", "input": [f"text {i}"] * 8})).raise_for_status()
            embeds.append(time.monotonic() - started)
    return model, embeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help="serve the stubs in this process until stopped")
    parser.add_argument("--port", type=int, default=0, help="port to serve on (--serve)")
    parser.add_argument("--model-latency", type=float, default=0.5,
                        help="seconds the model stub takes to answer each call (0.5)")
    parser.add_argument("--calls", type=int, default=20, help="calls of each stub to time (20)")
    args = parser.parse_args()
    if args.serve:
        uvicorn.run(app(args.model_latency), host="127.0.0.1", port=args.port, log_level="error")
        return
    stubs = start(args.model_latency)
    try:
        model, embeds = asyncio.run(_check(stubs, args.calls))
    finally:
        stubs.stop()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.calls} calls each, one at a time; load average {load}\n")
    print("| stub | configured | p50 | max |\n|---|---|---|---|")
    for name, values, configured in (("model (anthropic SDK, tool_use)", model, f"{args.model_latency * 1000:.0f} ms"),
                                     ("embeddings (8 texts, httpx)", embeds, "at once")):
        print(f"| {name} | {configured} | {statistics.median(values) * 1000:.1f} ms | {max(values) * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
