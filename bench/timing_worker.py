"""One side of a side-by-side latency bench (``search_baseline.py``, ``remember_latency.py``): times one
``MemoryService`` call with whichever mnemonet is on PYTHONPATH.

Started by those benches (``worker_side.WorkerSide``), never by hand: it reads its settings as one JSON line on
stdin, opens a ``MemoryService`` on the bench's running databases, answers ``{"ready": ...}`` (with the path of
the code it imported), then for every request line times one call and answers with its time in ms:
``{"call": "search", "query": ..., "k": ..., "mode": ...}`` -> ``{"ms": ..., "hits": [[id, score], ...]}``;
``{"call": "remember", "query": ..., "source": ...}`` -> ``{"ms": ..., "first": <first line of the answer>,
"confidence": ...}``. An empty line ends it. The timing is taken here, around the call alone, so the pipe to
the parent costs nothing measured.

It imports nothing from this directory and does not touch ``sys.path``: the source tree is the one the parent
put first on PYTHONPATH (this tree's ``src/`` or a baseline revision's), and only calls both have are used.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import mnemonet
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings


async def serve() -> None:
    config = json.loads(sys.stdin.readline())
    settings = Settings(**config["settings"])  # settings this code does not have are ignored (extra="ignore")
    embedder = make_embedder(settings)
    svc = await build_memory_service(settings, make_language_model(settings), embedder,
                                     vector_schema=config["schema"])
    try:
        await embedder.embed(["warm up"], kind="query")
        reply({"ready": True, "code": mnemonet.__file__})
        # Read off the event loop: the service's background work (usage counts) runs between calls.
        while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
            reply(await timed(svc, json.loads(line)))
    finally:
        await svc.close()


async def timed(svc: MemoryService, ask: dict[str, Any]) -> dict[str, object]:
    """One call as ``ask`` names it, timed, with what the bench reads of its answer."""
    t0 = time.perf_counter()
    if ask["call"] == "search":
        hits = await svc.search(ask["query"], k=ask.get("k", 10), mode=ask.get("mode", "hybrid+graph"))
        return {"ms": (time.perf_counter() - t0) * 1000, "hits": [[h.id, h.score] for h in hits]}
    answer = await svc.remember(ask["query"], source=ask.get("source"))
    return {"ms": (time.perf_counter() - t0) * 1000, "first": answer.text.split("\n", 1)[0],
            "confidence": answer.confidence}


def reply(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
