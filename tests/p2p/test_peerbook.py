"""Which seeds and remembered peers a node re-contacts, its backoff, and the peer file."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mnemonet.p2p.membership import Member, MemberState
from mnemonet.p2p.peerbook import PeerBook, RejoinConfig
from mnemonet.p2p.simulation import SimClock

CONFIG = RejoinConfig(backoff_initial=0.5, backoff_max=4.0, jitter=0.2, max_remembered=3, remembered_ttl=100.0)


def member(node_id: str, url: str, state: MemberState = MemberState.ALIVE) -> Member:
    return Member(node_id, url, frozenset({"store"}), 0, state, 0.0)


def book(seeds: list[str], path: Path | None = None, clock: SimClock | None = None) -> PeerBook:
    clock = clock or SimClock(1000.0)
    return PeerBook(seeds, path, CONFIG, clock, random.Random(1), wall_clock=clock)


def test_a_seed_is_due_until_an_alive_member_answers_at_it() -> None:
    b = book(["http://s:1/"])
    assert b.due([]) == ["http://s:1"]
    assert b.due([member("s", "http://s:1")]) == []
    # Seen as suspect: it may be the dead process of a restarted node, so call the seed again.
    assert b.due([member("s", "http://s:1", MemberState.SUSPECT)]) == ["http://s:1"]


def test_a_seed_answered_by_a_node_advertising_another_url_is_not_due_while_that_node_is_alive() -> None:
    clock = SimClock(1000.0)
    b = book(["http://store:9000"], clock=clock)
    b.answered("http://store:9000", "n1", "me")
    clock.now += CONFIG.backoff_initial
    assert b.due([member("n1", "http://172.18.0.5:9000")]) == []
    assert b.due([member("n1", "http://172.18.0.5:9000", MemberState.DEAD)]) == ["http://store:9000"]


def test_failures_back_off_doubling_up_to_the_cap_with_bounded_jitter() -> None:
    clock = SimClock(1000.0)
    b = book(["http://s:1"], clock=clock)
    waits = [b.failed("http://s:1") for _ in range(6)]
    for wait, base in zip(waits, [0.5, 1.0, 2.0, 4.0, 4.0, 4.0], strict=True):
        assert base <= wait <= base * (1 + CONFIG.jitter)
    assert b.due([]) == []
    clock.now += CONFIG.retry_bound()
    assert b.due([]) == ["http://s:1"]
    b.answered("http://s:1", "s", "me")  # a welcome resets the backoff
    assert CONFIG.backoff_initial <= b.failed("http://s:1") <= CONFIG.backoff_initial * (1 + CONFIG.jitter)


def test_our_own_url_among_the_seeds_is_never_tried_again() -> None:
    clock = SimClock(1000.0)
    b = book(["http://me:1", "http://s:1"], clock=clock)
    b.answered("http://me:1", "me", "me")
    clock.now += 100
    assert b.due([]) == ["http://s:1"]


def test_remembered_peers_survive_a_restart_in_an_atomically_written_file(tmp_path: Path) -> None:
    path = tmp_path / "peers" / "port-9000.json"
    clock = SimClock(1000.0)
    b = book([], path, clock)
    b.observe([member("me", "http://me:1"), member("a", "http://a:1"),
               member("b", "http://b:1", MemberState.SUSPECT)], "me")
    content = b.pending_save()
    assert content is not None and [p["url"] for p in content["peers"]] == ["http://a:1"]
    b.save(content)
    assert b.pending_save() is None  # nothing changed since
    assert [f.name for f in path.parent.iterdir()] == ["port-9000.json"]  # no temporary file left
    restarted = book([], path, clock)
    assert restarted.remembered() == ["http://a:1"] and restarted.due([]) == ["http://a:1"]


def test_peers_unseen_for_the_ttl_or_beyond_the_cap_are_forgotten(tmp_path: Path) -> None:
    clock = SimClock(1000.0)
    b = book(["http://s:1"], tmp_path / "p.json", clock)
    for i in range(5):
        clock.now += 1
        b.observe([member(f"n{i}", f"http://n{i}:1")], "me")
    assert sorted(b.remembered()) == ["http://n2:1", "http://n3:1", "http://n4:1"]  # the 3 most recently seen
    clock.now += CONFIG.remembered_ttl + 1
    b.observe([], "me")
    assert b.remembered() == [] and b.seeds == ["http://s:1"]  # seeds are never forgotten


def test_a_peer_that_left_is_forgotten_but_a_seed_that_left_is_called_again() -> None:
    b = book(["http://s:1"])
    b.observe([member("a", "http://a:1"), member("s", "http://s:1")], "me")
    b.observe([member("a", "http://a:1", MemberState.LEFT), member("s", "http://s:1", MemberState.LEFT)], "me")
    assert b.remembered() == [] and b.due([]) == ["http://s:1"]


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"peers": 3}',
    json.dumps({"peers": [{"url": "ftp://x:1", "seen": 1000.0}, {"url": "http://ok:1"}, "x",
                          {"url": "http://ok:2", "seen": "yesterday"}, {"url": "http://a b:1", "seen": 1000.0}]}),
])
def test_a_damaged_or_hostile_peer_file_is_ignored_entry_by_entry(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    b = book(["http://s:1"], path)
    assert b.remembered() == [] and b.seeds == ["http://s:1"]


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RejoinConfig(backoff_initial=5.0, backoff_max=1.0)
    with pytest.raises(ValueError):
        RejoinConfig(jitter=2.0)
