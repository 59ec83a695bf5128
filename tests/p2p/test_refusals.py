"""A flood of refused envelopes, links or tokens is logged as its first refusal and a periodic summary."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from netsupport import NodeFactory, client_token, eventually

from mnemonet.p2p.envelope import Codec, Envelope, Kind
from mnemonet.p2p.refusals import OTHERS, RefusalLog
from mnemonet.p2p.simulation import SimClock
from mnemonet.p2p.transport import PEER_PATH

LOGGER = "test.refusals"


def _lines(caplog: pytest.LogCaptureFixture, logger: str = LOGGER) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_first_refusal_then_one_summary_per_interval_per_source(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    clock = SimClock(1000.0)
    refusals = RefusalLog(logging.getLogger(LOGGER), interval=60.0, max_sources=2, clock=clock)
    for i in range(1000):
        refusals.refused("10.0.0.9", f"a client token for stats: bad signature #{i}")
    refusals.refused("10.0.0.7", "a link: handshake timed out")
    assert _lines(caplog) == ["refused a client token for stats: bad signature #0 from 10.0.0.9",
                              "refused a link: handshake timed out from 10.0.0.7"]
    clock.now += 59.0
    refusals.flush()
    assert len(_lines(caplog)) == 2  # the window is not over yet
    clock.now += 1.0
    refusals.flush()
    assert _lines(caplog)[2:] == [
        "refused 999 more from 10.0.0.9 in the last 60.0s (the last: a client token for stats: bad signature #999)"]
    # A new window starts with a logged refusal again; a quiet source leaves nothing to summarise.
    refusals.refused("10.0.0.9", "a client token for stats: expired")
    assert _lines(caplog)[3:] == ["refused a client token for stats: expired from 10.0.0.9"]


def test_sources_past_the_bound_share_one_entry_and_stop_summarises(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    refusals = RefusalLog(logging.getLogger(LOGGER), interval=60.0, max_sources=2, clock=SimClock(1000.0))
    for i in range(500):
        refusals.refused(f"10.1.{i // 256}.{i % 256}", "an envelope over HTTP: bad_mac")
    refusals.close()
    assert _lines(caplog) == [
        "refused an envelope over HTTP: bad_mac from 10.1.0.0",
        "refused an envelope over HTTP: bad_mac from 10.1.0.1",
        f"refused an envelope over HTTP: bad_mac from {OTHERS}",
        f"refused 497 more from {OTHERS} in the last 0.0s (the last: an envelope over HTTP: bad_mac)",
    ]


async def test_a_live_node_flooded_with_bad_tags_and_tokens_logs_a_few_lines(
        make_node: NodeFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "mnemonet.p2p.transport")
    node = await make_node({"cli"}, refusal_log_interval=3.0)
    forger = Codec("not-the-cluster-key", max_bytes=1 << 20, max_age=60.0, replay_entries=16)
    bad_token = client_token("read", key="not-the-cluster-key")
    # Ten at a time: the point is the count of refusals, not a connection pool exhausted on loaded cores.
    gate = asyncio.Semaphore(10)
    async with httpx.AsyncClient(base_url=node.url, timeout=30.0) as http:
        async def bad_tag() -> int:
            env = Envelope(kind=Kind.PING, sender="mallory", target=node.node_id, payload={})
            async with gate:
                return (await http.post(PEER_PATH, content=forger.encode(env))).status_code

        async def bad_bearer() -> int:
            async with gate:
                return (await http.post("/v1/stats", json={},
                                        headers={"authorization": f"Bearer {bad_token}"})).status_code

        statuses = await asyncio.gather(*(bad_tag() for _ in range(150)), *(bad_bearer() for _ in range(150)))
    assert set(statuses) == {401}

    def accounted() -> int:
        """Refusals the log tells of: one per first-refusal line, N per summary line."""
        lines = _lines(caplog, "mnemonet.p2p.transport")
        return sum(int(line.split()[1]) if " more from " in line else 1 for line in lines)

    await eventually(lambda: accounted() == 300, 20.0, "every refusal told of, in summaries")
    lines = _lines(caplog, "mnemonet.p2p.transport")
    assert all(line.endswith("from 127.0.0.1") or " more from 127.0.0.1 " in line for line in lines), lines
    assert len(lines) <= 10, lines  # a first refusal and a summary per window, not 300 lines
