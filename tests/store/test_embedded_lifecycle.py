"""One embedded FalkorDB per directory: the data directory's lock, orphans, repair after a crash.

Issue 14: after ``kill -9`` of a node its FalkorDB kept running and the
restarted node started a second server on the same append-only files; two
nodes could share one data directory. These run real servers in-process;
``tests/faults/test_data_dir.py`` does the same through ``run_node.py``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemonet.store.datadir import DataDirInUse, DataDirLock, hold, holder_pid
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB
from mnemonet.store.server_process import alive, processes_in


async def _graph_count(server: EmbeddedFalkorDB, graph: str) -> int:
    client = server.client()
    try:
        reply = await client.execute_command("GRAPH.RO_QUERY", graph, "MATCH (n:N) RETURN count(n)")
    finally:
        await client.aclose()
    return int(reply[1][0][0])


async def _write(server: EmbeddedFalkorDB, graph: str, n: int) -> None:
    client = server.client()
    try:
        for i in range(n):
            await client.execute_command("GRAPH.QUERY", graph, f"CREATE (:N {{i: {i}}})")
    finally:
        await client.aclose()


def test_a_second_lock_on_a_directory_is_refused_naming_it_and_the_holder(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(DataDirInUse) as refused:
            DataDirLock(tmp_path).acquire()  # a second node in this process: its own open file, refused
        assert str(tmp_path.resolve()) in str(refused.value) and f"process {os.getpid()}" in str(refused.value)
        assert holder_pid(tmp_path) == os.getpid()
        shared = hold(tmp_path)  # a store opened inside the holder shares its lock
        assert shared is first
        shared.release()
        assert first.held  # the node's own hold is still there
    finally:
        first.release()
    again = DataDirLock(tmp_path)
    again.acquire()  # free once released
    again.release()


def test_a_lock_held_by_another_process_names_its_pid(tmp_path: Path) -> None:
    code = (f"import sys; from mnemonet.store.datadir import DataDirLock; l = DataDirLock({str(tmp_path)!r}); "
            "l.acquire(); print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(DataDirInUse, match=f"process {holder.pid} "):
            DataDirLock(tmp_path).acquire()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
    lock = DataDirLock(tmp_path)
    lock.acquire()  # the holder is gone: the kernel dropped its lock
    lock.release()


async def test_a_server_left_by_a_dead_owner_is_stopped_before_a_new_one_starts(tmp_path: Path) -> None:
    """The orphan is shut down cleanly (its writes kept), and only then does the new server start."""
    lock = DataDirLock(tmp_path)
    lock.acquire()
    orphan = EmbeddedFalkorDB(tmp_path / "falkordb")
    await orphan.start()
    await _write(orphan, "g", 5)
    # The owner "dies" without stopping its server; the next owner takes the lock.
    lock.release()
    lock = DataDirLock(tmp_path)
    lock.acquire()
    server = EmbeddedFalkorDB(tmp_path / "falkordb")
    try:
        await server.start()
        assert orphan.process is not None and orphan.process.wait(5) == 0  # SHUTDOWN, not a kill
        assert server.process is not None
        assert processes_in(tmp_path / "falkordb") == [server.process.pid]
        assert await _graph_count(server, "g") == 5
    finally:
        await server.stop()
        lock.release()
    assert not (tmp_path / "falkordb" / "redis.pid").exists()  # a clean stop leaves no crash mark


async def test_a_server_running_in_an_unlocked_directory_is_never_joined_by_a_second(tmp_path: Path) -> None:
    running = EmbeddedFalkorDB(tmp_path / "falkordb")
    await running.start()
    try:
        second = EmbeddedFalkorDB(tmp_path / "falkordb")
        with pytest.raises(RuntimeError, match="already runs in .*refusing to start a second"):
            await second.start()
        assert running.process is not None and alive(running.process.pid)
        assert second.process is None
    finally:
        await running.stop()


async def test_a_torn_append_only_tail_is_cut_with_redis_check_aof_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = EmbeddedFalkorDB(tmp_path / "falkordb")
    await server.start()
    await _write(server, "g", 20)
    server.kill()  # kill -9: the pid file stays, the mark of an unclean stop
    incr = next((tmp_path / "falkordb" / "appendonlydir").glob("*.incr.aof"))
    with incr.open("r+b") as f:  # a write torn by the crash: its last bytes never reached the disk
        f.truncate(incr.stat().st_size - 7)
    restarted = EmbeddedFalkorDB(tmp_path / "falkordb")
    lock = DataDirLock(tmp_path)
    lock.acquire()
    try:
        with caplog.at_level(logging.WARNING, logger="mnemonet.store.embedded_falkordb"):
            await restarted.start()
        assert await _graph_count(restarted, "g") == 19  # the torn last write is gone, the rest kept
    finally:
        await restarted.stop()
        lock.release()
    repairs = [r.getMessage() for r in caplog.records if "falkordb.repair" in r.getMessage()]
    assert len(repairs) == 1 and "truncated" in repairs[0].lower(), repairs


def _manifest(server: EmbeddedFalkorDB) -> Path:
    return server.data_dir / "appendonlydir" / "appendonly.aof.manifest"


async def test_a_stale_manifest_left_by_an_orphan_is_rebuilt_from_the_files_present_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 14, seen: an orphaned server stopping after a newer one rewrote the append-only files wrote
    # back its manifest, naming files the rewrite had deleted; the next start failed ("Unable to obtain
    # the AOF file appendonly.aof.1.base.rdb length") with the data on disk.
    server = EmbeddedFalkorDB(tmp_path / "falkordb")
    await server.start()
    await _write(server, "g", 10)
    stale = _manifest(server).read_text()  # names base 1 and incr 1
    await server.compact()  # base 2 holds those 10; incr 1 is history, deleted
    await _write(server, "h", 5)  # in incr 2
    await server.stop()
    _manifest(server).write_text(stale)  # what the orphan's SHUTDOWN wrote back
    restarted = EmbeddedFalkorDB(tmp_path / "falkordb")
    try:
        with caplog.at_level(logging.WARNING, logger="mnemonet.store.embedded_falkordb"):
            await restarted.start()
        assert await _graph_count(restarted, "g") == 10  # every write once: none lost, none replayed twice
        assert await _graph_count(restarted, "h") == 5
    finally:
        await restarted.stop()
    rebuilt = [r.getMessage() for r in caplog.records if "falkordb.manifest" in r.getMessage()]
    assert len(rebuilt) == 1 and "appendonly.aof.1.base.rdb" in rebuilt[0], rebuilt
    assert (tmp_path / "falkordb" / "appendonly.aof.manifest.stale").read_text() == stale  # kept for a human


async def test_a_manifest_naming_a_file_really_missing_is_refused_naming_it(tmp_path: Path) -> None:
    server = EmbeddedFalkorDB(tmp_path / "falkordb")
    await server.start()
    await _write(server, "g", 3)
    await server.stop()
    lost = next((tmp_path / "falkordb" / "appendonlydir").glob("*.incr.aof"))
    base = next((tmp_path / "falkordb" / "appendonlydir").glob("*.base.*"))
    base.unlink()  # the newest base itself is gone: nothing present can stand in for it
    restarted = EmbeddedFalkorDB(tmp_path / "falkordb")
    with pytest.raises(RuntimeError, match=base.name) as refused:
        await restarted.start()
    assert "missing" in str(refused.value) and restarted.process is None
    assert lost.exists()  # nothing deleted or rewritten by the refusal
