"""Forget leaves no byte of the erased text on disk: grep over dedicated embedded servers' data directories.

Each test starts its own FalkorDB and PostgreSQL in their own directories (``datadirs``), serves the
memory from a real node, and erases through the client HTTP API with an admin token; a control text that
stays is found by the same grep.
"""

from __future__ import annotations

import sys
from pathlib import Path

import asyncpg
import pytest
from datadirs import found_in, own_servers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import CLUSTER_KEY, client_token, eventually, node_factory, until

from mnemonet.llm import make_language_model
from mnemonet.model.errors import Forbidden, InvalidInput
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, build_memory_service

# The erased source's texts and name; each must be gone from every file of both servers.
ERASED = ("Zorbulon lives in Vexmoor", "Zorbulon prefers Glimmerwick tea", "zorbulon", "glimmerwick")
# A single word of the text that FalkorDB 4.16 keeps: the key of an erased concept stays in the
# rewritten file (next to its GraphBLAS matrices), though no node, edge, property key, label or
# index holds it and a restart does not drop it. PostgreSQL's files are clean of it.
ENGINE_RESIDUE = "vexmoor"
KEPT = "paris"


async def test_forget_a_source_leaves_none_of_its_text_in_the_data_directories(
    test_data_dir: Path, unique_name: str, embedder: object,
) -> None:
    root = test_data_dir / f"forget-{unique_name}"
    async with own_servers(root, unique_name) as settings:
        service = await build_memory_service(settings, make_language_model(settings), embedder,  # type: ignore[arg-type]
                                             vector_schema=unique_name)
        try:
            await service.observe("Zorbulon lives in Vexmoor", source="zorbulon")
            await service.observe("Zorbulon prefers Glimmerwick tea", source="zorbulon")
            await service.observe("Alice lives in Paris", source="alice")
            await service.indexer.drained()  # indexed behind the writes (index_in_background)
            for needle in (*ERASED, ENGINE_RESIDUE, KEPT):
                assert found_in(root / "falkordb", needle), f"{needle} not in the AOF before forget"
                assert found_in(root / "postgres", needle), f"{needle} not in PostgreSQL's files before forget"

            async with node_factory() as make:
                node = await make({"store"}, providers={"store": service})
                writer = HttpMemoryClient(node.url, client_token("read,write", name="writer"))
                admin = HttpMemoryClient(node.url, client_token("read,write,admin", name="dpo"))
                async with writer, admin:
                    with pytest.raises(Forbidden, match="admin"):
                        await writer.forget(source="zorbulon")
                    report = await admin.forget(source="zorbulon", by="someone-else")
                    assert report.by == "dpo" and report.observations == 2  # the token's name, not what it said
                    assert report.graph_compacted and report.vectors_compacted
                    [tomb] = await admin.tombstones()
                    assert tomb.id == report.tombstone_id and tomb.by == "dpo"
                    assert await admin.search("Vexmoor Glimmerwick", k=10) == [] or all(
                        "vexmoor" not in h.text.lower() for h in await admin.search("Vexmoor Glimmerwick", k=10))

            def leftovers() -> list[str]:
                found = [f"{n}: {d}/{f}" for n in ERASED for d in ("falkordb", "postgres")
                         for f in found_in(root / d, n)]
                return found + [f"{ENGINE_RESIDUE}: postgres/{f}" for f in found_in(root / "postgres", ENGINE_RESIDUE)]

            # Old AOF files and WAL segments are unlinked just after the rewrite and the checkpoint.
            try:
                await eventually(lambda: not leftovers(), 30.0, "the erased text gone from the data dirs")
            except AssertionError:
                pytest.fail(f"still on disk: {leftovers()}")
            assert found_in(root / "falkordb", KEPT), "the control text must still be found in the rewritten AOF"
            assert found_in(root / "postgres", KEPT), "the control text must still be found in the vacuumed table"
            # Recorded, not hidden: the one erased word FalkorDB keeps (see ENGINE_RESIDUE). When an engine
            # upgrade drops it, this line fails and the residue note goes.
            assert found_in(root / "falkordb", ENGINE_RESIDUE) == ["appendonlydir/appendonly.aof.2.base.rdb"]
            rows = await service.graph.read_query("MATCH (t:Tombstone) RETURN t.kind AS kind, t.by AS by")
            assert rows == [{"kind": "source", "by": "dpo"}]
        finally:
            await service.close()


# A whole space's texts, its speaker and its words: each must be gone from every file of both servers.
SPACE_TEXTS = ("Quenthorpe keeps the Brindlemoss ledger", "Quenthorpe meets Ostrovane at dawn")
SPACE_ERASED = (*SPACE_TEXTS, "quenthorpe", "brindlemoss", "ostrovane")
SPACE = "secrets"


async def test_forget_a_whole_space_leaves_none_of_its_text_and_a_tombstone_in_default(
    test_data_dir: Path, unique_name: str, embedder: object,
) -> None:
    root = test_data_dir / f"forget-space-{unique_name}"
    async with own_servers(root, unique_name) as settings:
        service = await build_memory_service(settings, make_language_model(settings), embedder,  # type: ignore[arg-type]
                                             vector_schema=unique_name)
        try:
            async with node_factory() as make:
                node = await make({"store"}, providers={"store": service})
                # Tokens of every space, so the writer is refused for its scope alone.
                writer = HttpMemoryClient(node.url, create_token(CLUSTER_KEY, "writer", ["read", "write"], 3600,
                                                                 spaces="*")[0])
                admin = HttpMemoryClient(node.url, create_token(CLUSTER_KEY, "dpo", ["read", "write", "admin",
                                                                                    "speak-for"], 3600, spaces="*")[0])
                async with writer, admin:
                    await admin.create_space(SPACE)
                    await admin.create_space("other")
                    for text in SPACE_TEXTS:
                        await admin.observe(text, source="quenthorpe", space=SPACE)
                    await admin.observe("Alice lives in Paris", source="alice")
                    await admin.observe("Bob lives in Paris too", source="bob", space="other")
                    # Rows are indexed behind the writes (index_in_background): the files hold them once
                    # each space's backlog is empty (reading them before was this test's own race).
                    for space in (SPACE, None, "other"):
                        async def indexed(space: str | None = space) -> bool:
                            return not (await admin.stats(space=space))["backlog"]["vectors"]
                        await until(indexed, 60.0, f"space {space}: every row indexed behind its write")
                    for needle in (*SPACE_ERASED, KEPT):
                        assert found_in(root / "falkordb", needle), f"{needle} not in the AOF before forget"
                        assert found_in(root / "postgres", needle), f"{needle} not in PostgreSQL's files before"
                    held = (await admin.stats(space=SPACE))["graph"]

                    with pytest.raises(Forbidden, match="admin"):
                        await writer.forget(whole_space=True, space=SPACE)
                    # An erasure never falls back on the token's first space: it must be named.
                    team_admin = HttpMemoryClient(node.url, create_token(CLUSTER_KEY, "dpo", ["read", "admin"], 3600,
                                                                         spaces=f"{SPACE},other")[0])
                    async with team_admin:
                        with pytest.raises(InvalidInput, match="name it"):
                            await team_admin.forget(whole_space=True)
                    assert SPACE in {s.name for s in await admin.spaces()}
                    report = await admin.forget(whole_space=True, space=SPACE, by="someone-else")
                    assert report.kind == "space" and report.space == SPACE and report.by == "dpo"
                    assert (report.observations, report.statements, report.concepts, report.sources) == (
                        held["Observation"], held["Statement"], held["Concept"], held["Source"])
                    assert report.observations == 2 and report.vectors >= 2
                    assert report.graph_compacted and report.vectors_compacted
                    assert SPACE not in {s.name for s in await admin.spaces()}
                    # The tombstone is in the default space (the erased one has no graph left to hold it).
                    [tomb] = await admin.tombstones()
                    assert (tomb.id, tomb.kind, tomb.space, tomb.by) == (report.tombstone_id, "space", SPACE, "dpo")
                    assert (tomb.observations, tomb.statements, tomb.concepts, tomb.vectors) == (
                        report.observations, report.statements, report.concepts, report.vectors)
                    # Erasing it again erases nothing and leaves no second tombstone (a retry).
                    again = await admin.forget(whole_space=True, space=SPACE)
                    assert again.tombstone_id is None and again.observations == 0
                    assert len(await admin.tombstones()) == 1
                    for space in (None, "other"):
                        hits = await admin.search("Quenthorpe Brindlemoss Ostrovane ledger dawn", k=20, space=space)
                        assert not any(w in h.text.lower() for h in hits for w in SPACE_ERASED[2:])

            graphs = await service.graph.driver._client.execute_command("GRAPH.LIST")  # type: ignore[attr-defined]
            assert f"{unique_name}__{SPACE}" not in graphs and f"{unique_name}__other" in graphs
            for key in graphs:  # raw graph reads: no node of any graph holds the erased words
                rows = await service.graph.for_space(key).read_query(
                    "MATCH (n) WHERE any(v IN [n.raw_content, n.sentence, n.summary, n.name, n.source, n.subject, "
                    "n.object] WHERE toLower(toString(v)) CONTAINS $w) RETURN count(n) AS n", {"w": "quenthorpe"})
                assert rows == [{"n": 0}], key
            conn = await asyncpg.connect(settings.database_url)
            try:  # pg table scans: the schema is gone, and no row of any table left holds the words
                schemas = {r["nspname"] for r in await conn.fetch("SELECT nspname FROM pg_namespace")}
                assert f"{unique_name}__{SPACE}" not in schemas and f"{unique_name}__other" in schemas
                for schema in (unique_name, f"{unique_name}__other"):
                    assert await conn.fetchval(
                        f'SELECT count(*) FROM "{schema}".embeddings WHERE lower(text || context) LIKE $1',
                        "%quenthorpe%") == 0
            finally:
                await conn.close()

            def leftovers() -> list[str]:
                return [f"{n}: {d}/{f}" for n in SPACE_ERASED for d in ("falkordb", "postgres")
                        for f in found_in(root / d, n)]

            try:
                await eventually(lambda: not leftovers(), 30.0, "the erased space's text gone from the data dirs")
            except AssertionError:
                pytest.fail(f"still on disk: {leftovers()}")
            assert found_in(root / "falkordb", KEPT), "the control text must still be found in the rewritten AOF"
            assert found_in(root / "postgres", KEPT), "the control text must still be found in PostgreSQL's files"
        finally:
            await service.close()


async def _sampled(service: MemoryService) -> str:
    """The values PostgreSQL's statistics hold for the memory's tables (what ANALYZE sampled), as one string."""
    async with service.vectors.acquire() as conn:
        rows = await conn.fetch(
            """SELECT concat_ws(' ', most_common_vals::text, histogram_bounds::text, most_common_elems::text) AS v
               FROM pg_catalog.pg_stats WHERE schemaname = $1""", service.vectors.schema)
    return " ".join(r["v"] or "" for r in rows).lower()


async def test_forget_leaves_no_erased_value_in_postgresql_s_statistics(
    test_data_dir: Path, unique_name: str, embedder: object,
) -> None:
    """ANALYZE (autovacuum's too) keeps sampled values of text columns in ``pg_statistic``: the erased text was
    found there by the grep of an erasure under load. An erasure that empties a table is the hard case:
    ANALYZE leaves an empty table's old statistics as they were."""
    root = test_data_dir / f"forget-stats-{unique_name}"
    async with own_servers(root, unique_name) as settings:
        service = await build_memory_service(settings, make_language_model(settings), embedder,  # type: ignore[arg-type]
                                             vector_schema=unique_name)
        try:
            for i in range(30):
                await service.observe(f"Zorbulon counted Vexmoor crates, batch {i}", source="zorbulon",
                                      defer_extraction=True)
            await service.indexer.drained()
            async with service.vectors.acquire() as conn:
                await conn.execute(f'ANALYZE "{unique_name}".embeddings, "{unique_name}".keyword_lexemes')
            assert "vexmoor" in await _sampled(service), "sampled into the statistics, as autovacuum does"
            report = await service.forget(source="zorbulon", by="dpo")  # every row of the index goes
            assert report.observations == 30 and report.vectors_compacted
            assert "vexmoor" not in await _sampled(service)
            try:
                await eventually(lambda: not found_in(root / "postgres", "vexmoor"), 30.0, "gone from PostgreSQL")
            except AssertionError:
                pytest.fail(f"still in PostgreSQL's files: {found_in(root / 'postgres', 'vexmoor')}")
        finally:
            await service.close()
