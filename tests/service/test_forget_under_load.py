"""Erasure under load (issue 31, row 3): ``forget(source=X)`` while X writes, 8 at a time.

Seen: 150 observes by X, 8 at a time, ``forget(source=X)`` midway reported 33 observations and 12 vectors
erased; then ``search`` returned 21 erased observations with their text (``load`` could not resolve them)
and the text was still in PostgreSQL's WAL: the rows of writes in flight, indexed behind the write,
escaped the erasure. Here every write of a round is sorted by when it started and ended against the
erasure: one acknowledged before it started must be gone from search, the graph, the vector tables and
both servers' files (WAL and append-only file included); one that started after it ended must be kept
whole; one in between, either, but whole. The report's counts must be what went. Five rounds in a row
on the same servers; each waits on conditions only (the writers' own progress), never on time.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from datadirs import matches_in, own_servers

from mnemonet.llm import make_language_model
from mnemonet.model.api import ForgetReport, ObserveResult
from mnemonet.service import MemoryService, SpacedMemory, build_memory_service

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import eventually

WRITES, AT_ONCE, FORGET_AFTER, ROUNDS = 150, 8, 50, 5
BEFORE, DURING, AFTER = "before", "during", "after"  # where a write stands against the erasure


@dataclass
class Load:
    """One round: X's writes, each with the erasure's phase when it started and when it was acknowledged."""

    source: str
    markers: list[str]
    phase: str = BEFORE
    started: dict[int, str] = field(default_factory=dict)
    acked: dict[int, str] = field(default_factory=dict)
    results: dict[int, ObserveResult] = field(default_factory=dict)
    refused: dict[int, Exception] = field(default_factory=dict)

    def text(self, i: int) -> str:
        return f"{self.source.capitalize()} noted parcel {self.markers[i]} at the depot"


async def _write_while_erasing(
    write: Callable[[int], Awaitable[ObserveResult]], load: Load, erase: Callable[[], Awaitable[ForgetReport]],
) -> ForgetReport:
    """Run ``write(i)`` for every write of ``load``, ``AT_ONCE`` at a time, and ``erase()`` once
    ``FORGET_AFTER`` are acknowledged; the erasure's report."""
    todo = list(range(WRITES))
    enough = asyncio.Event()

    async def writer() -> None:
        while todo:
            i = todo.pop(0)
            load.started[i] = load.phase
            try:
                load.results[i] = await write(i)
            except Exception as exc:  # a refusal: recorded, and checked by the caller
                load.refused[i] = exc
            load.acked[i] = load.phase
            if len(load.acked) >= FORGET_AFTER:
                enough.set()

    async def eraser() -> ForgetReport:
        await enough.wait()
        load.phase = DURING
        report = await erase()
        load.phase = AFTER
        return report

    writers = [asyncio.ensure_future(writer()) for _ in range(AT_ONCE)]
    report = await eraser()
    await asyncio.gather(*writers)
    return report


def _everywhere(text: str, pattern: str) -> set[str]:
    return set(re.findall(pattern, text.lower()))


async def _graph_text(service: MemoryService) -> str:
    """Every node's and relationship's properties, as one string (a raw graph read)."""
    rows = await service.graph.read_query("MATCH (n) RETURN properties(n) AS p")
    rows += await service.graph.read_query("MATCH ()-[r]->() RETURN properties(r) AS p")
    return repr(rows)


async def _table_text(service: MemoryService) -> str:
    """Every row of every table of the memory's vector schema but its vectors, as one string (a table scan)."""
    schema = service.vectors.schema
    async with service.vectors.acquire() as conn:
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
        rows = []
        for t in tables:
            rows += await conn.fetch(
                f"""SELECT (to_jsonb(t) - 'embedding')::text AS row FROM "{schema}"."{t['tablename']}" t""")
    return "\n".join(r["row"] for r in rows)


async def _one_round(service: MemoryService, root: Path, salt: str, n: int) -> None:
    marker = f"qzx{salt}r{n}n"
    pattern = rf"{marker}\d{{3}}"
    # A letter, not a digit: the offline model reads no statement in "Wrex4 noted parcel ...".
    load = Load(source=f"wrex{chr(ord('a') + n)}", markers=[f"{marker}{i:03d}" for i in range(WRITES)])

    async def write(i: int) -> ObserveResult:
        return await service.observe(load.text(i), source=load.source)

    report = await _write_while_erasing(write, load, lambda: service.forget(source=load.source, by="dpo"))
    await service.indexer.drained()
    assert not load.refused, load.refused
    present = {o.id for o in await service.graph.get_observations([r.observation_id for r in load.results.values()])}
    erased = {i for i, r in load.results.items() if r.observation_id not in present}
    kept = set(load.results) - erased
    before = {i for i, phase in load.acked.items() if phase == BEFORE}
    after = {i for i, phase in load.started.items() if phase == AFTER}
    assert len(before) >= FORGET_AFTER and after, "the erasure ran midway, with writes on both sides"
    assert before <= erased, "a write acknowledged before the erasure started survived it"
    assert not after & erased, "a write that started after the erasure was erased"

    # Whole or not at all: the statements of an erased observation went with it, a kept one keeps all of its
    # own, and their rows: erased ones none, kept ones every one.
    statements = {i: [s.id for s in load.results[i].statements] for i in load.results}
    gone_statements = {s for i in erased for s in statements[i]}
    kept_statements = {s for i in kept for s in statements[i]}
    gone_ids = {load.results[i].observation_id for i in erased} | gone_statements
    kept_ids = {load.results[i].observation_id for i in kept} | kept_statements
    assert not await service.graph.get_statements(sorted(gone_statements))
    assert {s.id for s in await service.graph.get_statements(sorted(kept_statements))} == kept_statements
    assert set(await service.vectors.ids_missing(sorted(gone_ids))) == gone_ids, "a row of an erased item"
    assert await service.vectors.ids_missing(sorted(kept_ids)) == [], "a kept item without its row"

    # The report counts what went: every observation, statement and concept, and one row for each.
    assert report.observations == len(erased)
    assert report.statements == sum(len(statements[i]) for i in erased)
    assert report.vectors == report.observations + report.statements + report.concepts
    assert report.graph_compacted and report.vectors_compacted

    gone = {load.markers[i] for i in erased}
    for i in sorted(erased)[:10]:  # a keyword search for an erased marker finds nothing
        assert await service.search(load.markers[i], k=5, mode="keyword") == []
    hits = await service.search(f"{load.source} noted parcel at the depot", k=50)
    assert not {h.id for h in hits} & gone_ids and not _everywhere(repr(hits), pattern) & gone
    assert load.results[min(kept)].observation_id in {
        h.id for h in await service.search(load.markers[min(kept)], k=5, mode="keyword")}
    graph, tables = await _graph_text(service), await _table_text(service)
    assert not _everywhere(graph, pattern) & gone and not any(i in graph for i in gone_ids)
    assert not _everywhere(tables, pattern) & gone and not any(i in tables for i in gone_ids)

    def on_disk() -> set[str]:
        return (matches_in(root / "falkordb", pattern) | matches_in(root / "postgres", pattern)) & gone

    # Old AOF files and WAL segments are unlinked just after the rewrite and the checkpoint.
    try:
        await eventually(lambda: not on_disk(), 30.0, "the erased text gone from both data directories")
    except AssertionError:
        pytest.fail(f"round {n}: still on disk: {sorted(on_disk())[:10]}")
    assert {load.markers[i] for i in kept} <= matches_in(root / "postgres", pattern), "the grep finds what stays"
    print(f"round {n}: {len(before)} acknowledged before the erasure, {len(erased)} erased, {len(kept)} kept "
          f"({len(after)} started after it); report: {report.observations} observations, {report.statements} "
          f"statements, {report.concepts} concepts, {report.vectors} vectors")


async def test_forget_a_source_while_it_writes_leaves_nothing_it_erased(
    test_data_dir: Path, unique_name: str, embedder: object,
) -> None:
    root = test_data_dir / f"forget-load-{unique_name}"
    async with own_servers(root, unique_name) as settings:
        service = await build_memory_service(settings, make_language_model(settings), embedder,  # type: ignore[arg-type]
                                             vector_schema=unique_name)
        try:
            for n in range(ROUNDS):
                await _one_round(service, root, unique_name[-6:], n)
                await service.clear()  # the next round starts empty: its scans and compactions stay small
        finally:
            await service.close()


async def test_erasing_a_space_while_it_is_written_leaves_nothing_and_refuses_what_comes_after(
    test_data_dir: Path, unique_name: str, embedder: object,
) -> None:
    root = test_data_dir / f"forget-space-load-{unique_name}"
    async with own_servers(root, unique_name) as settings:
        default = await build_memory_service(settings, make_language_model(settings), embedder,  # type: ignore[arg-type]
                                             vector_schema=unique_name)
        memory = SpacedMemory(default)
        try:
            await memory.create_space("doomed")
            marker = f"qzx{unique_name[-6:]}s"
            pattern = rf"{marker}\d{{3}}"
            load = Load(source="wrex", markers=[f"{marker}{i:03d}" for i in range(WRITES)])

            async def write(i: int) -> ObserveResult:
                return await memory.observe(load.text(i), source=load.source, space="doomed")

            report = await _write_while_erasing(
                write, load, lambda: memory.forget(whole_space=True, space="doomed", by="dpo"))
            before = {i for i, phase in load.acked.items() if phase == BEFORE}
            after = {i for i, phase in load.started.items() if phase == AFTER}
            assert len(before) >= FORGET_AFTER and after
            # Every write the erasure let finish was erased and counted; every later one refused, none lost
            # in a dropped graph.
            assert set(load.results) | set(load.refused) == set(range(WRITES))
            assert report.observations == len(load.results) and before <= set(load.results)
            assert after <= set(load.refused) and all("'doomed'" in str(e) for e in load.refused.values())
            assert report.vectors == report.observations + report.statements + report.concepts
            graphs = await default.graph.driver._client.execute_command("GRAPH.LIST")  # type: ignore[attr-defined]
            assert f"{unique_name}__doomed" not in graphs
            gone = set(load.markers)
            assert not _everywhere(await _table_text(default), pattern) & gone

            def on_disk() -> set[str]:
                return (matches_in(root / "falkordb", pattern) | matches_in(root / "postgres", pattern)) & gone

            try:
                await eventually(lambda: not on_disk(), 30.0, "the erased space's text gone from the data dirs")
            except AssertionError:
                pytest.fail(f"still on disk: {sorted(on_disk())[:10]}")
            print(f"space: {len(before)} acknowledged before the erasure, {report.observations} erased, "
                  f"{len(load.refused)} refused ({len(after)} started after it); report: {report.statements} "
                  f"statements, {report.concepts} concepts, {report.vectors} vectors")
        finally:
            await memory.close()
