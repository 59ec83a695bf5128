"""One side of ``search_baseline.py``: times ``MemoryService.search`` with whichever mnemonet is on PYTHONPATH.

Started by ``search_baseline.py``, never by hand: it reads its settings as one JSON line on stdin, opens a
``MemoryService`` on the bench's running databases, answers ``{"ready": ...}`` (with the path of the code it
imported), then for every ``{"query": ..., "k": ..., "mode": ...}`` line times one ``search`` and answers
``{"ms": ..., "hits": [[id, score], ...]}``; an empty line ends it. The timing is taken here, around the call
alone, so the pipe to the parent costs nothing measured.

It imports nothing from this directory and does not touch ``sys.path``: the source tree is the one the parent
put first on PYTHONPATH (this branch's ``src/`` or a baseline revision's), and only calls both have are used.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import mnemonet
from mnemonet.embed import make_embedder
from mnemonet.llm import make_language_model
from mnemonet.service import build_memory_service
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
        # Read off the event loop: the service's background work (usage counts) runs between searches.
        while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
            ask = json.loads(line)
            t0 = time.perf_counter()
            hits = await svc.search(ask["query"], k=ask.get("k", 10), mode=ask.get("mode", "hybrid+graph"))
            ms = (time.perf_counter() - t0) * 1000
            reply({"ms": ms, "hits": [[h.id, h.score] for h in hits]})
    finally:
        await svc.close()


def reply(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
