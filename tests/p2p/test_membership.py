"""Merge rules, verdicts, tombstones and piggyback limits of Membership."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.p2p.simulation import SimClock

ALIVE, SUSPECT, DEAD, LEFT = MemberState.ALIVE, MemberState.SUSPECT, MemberState.DEAD, MemberState.LEFT


def wire(node_id: str, incarnation: int = 0, state: str = "alive", caps: Any = None,
         url: str | None = None) -> dict:
    return {
        "node_id": node_id,
        "url": url or f"http://{node_id}.example:9000",
        "capabilities": caps if caps is not None else ["store"],
        "incarnation": incarnation,
        "state": state,
    }


def make(config: MembershipConfig | None = None, clock: SimClock | None = None) -> tuple[Membership, SimClock]:
    clock = clock or SimClock(100.0)
    local = Member("me", "http://me.example:9000", frozenset({"llm"}), 0, ALIVE, 0.0)
    return Membership(local, config or MembershipConfig(), clock), clock


def view(m: Membership, node_id: str) -> tuple[int, MemberState] | None:
    member = m.get(node_id)
    return None if member is None else (member.incarnation, member.state)


def drain(m: Membership) -> list[dict]:
    out = []
    while batch := m.take_piggyback():
        out.extend(batch)
    return out


# -- incarnation ordering and state precedence -------------------------------

def test_new_member_is_added_and_queued() -> None:
    m, _ = make()
    assert m.apply(wire("b", 3)) is True
    assert view(m, "b") == (3, ALIVE)
    assert wire("b", 3) in m.take_piggyback()


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ((1, "alive"), (2, "alive"), (2, ALIVE)),      # higher incarnation wins
        ((1, "suspect"), (2, "alive"), (2, ALIVE)),    # refutation clears suspicion
        ((1, "dead"), (2, "alive"), (2, ALIVE)),       # a restarted node refuted its death
        ((2, "alive"), (1, "dead"), (2, ALIVE)),       # lower incarnation ignored, whatever its state
        ((2, "suspect"), (1, "alive"), (2, SUSPECT)),
        ((1, "alive"), (1, "suspect"), (1, SUSPECT)),  # equal: suspect > alive
        ((1, "suspect"), (1, "dead"), (1, DEAD)),      # equal: dead > suspect
        ((1, "alive"), (1, "left"), (1, LEFT)),        # equal: left > alive
        ((1, "suspect"), (1, "alive"), (1, SUSPECT)),  # equal: alive never clears suspect
        ((1, "dead"), (1, "alive"), (1, DEAD)),        # no resurrection at equal incarnation
        ((1, "dead"), (0, "alive"), (1, DEAD)),        # nor at lower
        ((1, "dead"), (1, "suspect"), (1, DEAD)),
        ((1, "left"), (1, "alive"), (1, LEFT)),
        ((1, "left"), (1, "dead"), (1, LEFT)),         # both final; the first verdict stays
    ],
)
def test_merge_rules(first: tuple[int, str], second: tuple[int, str], expected: tuple[int, MemberState]) -> None:
    m, _ = make()
    m.apply(wire("b", 0))  # known first: news of an unknown member's death only makes a tombstone
    m.apply(wire("b", *first))
    changed = m.apply(wire("b", *second))
    assert view(m, "b") == expected
    assert changed is (expected != (first[0], MemberState(first[1])))


def test_same_update_twice_changes_nothing_the_second_time() -> None:
    m, _ = make()
    assert m.apply(wire("b", 1, "suspect")) is True
    drain(m)
    assert m.apply(wire("b", 1, "suspect")) is False
    assert m.take_piggyback() == []


def test_forged_lower_incarnation_about_another_changes_nothing() -> None:
    m, _ = make()
    m.apply(wire("c", 5, caps=["store"]))
    drain(m)
    before = m.snapshot()
    forged = wire("c", 4, "dead", caps=["llm"], url="http://evil.example:1")
    assert m.apply(forged) is False
    assert m.snapshot() == before
    assert m.take_piggyback() == [wire("c", 5, caps=["store"])]  # only the true record, sent again


def test_higher_incarnation_may_carry_a_new_address() -> None:
    m, _ = make()
    m.apply(wire("b", 1))
    m.apply(wire("b", 2, url="https://b2.example", caps=["embed", "store"]))
    member = m.get("b")
    assert member is not None
    assert (member.url, member.capabilities) == ("https://b2.example", frozenset({"embed", "store"}))


# -- refutation by the local node ----------------------------------------------

def test_suspicion_of_local_node_is_refuted_with_higher_incarnation() -> None:
    m, _ = make()
    assert m.apply(wire("me", 0, "suspect")) is True
    assert (m.local.incarnation, m.local.state) == (1, ALIVE)
    assert m.get("me") is m.local
    queued = m.take_piggyback()
    assert queued == [m.local.to_wire()]
    assert queued[0]["incarnation"] == 1 and queued[0]["state"] == "alive"


@pytest.mark.parametrize("state", ["dead", "left"])
def test_death_of_local_node_is_refuted_past_the_claimed_incarnation(state: str) -> None:
    m, _ = make()
    m.apply(wire("me", 7, state))
    assert (m.local.incarnation, m.local.state) == (8, ALIVE)


def test_stale_suspicion_of_local_node_is_answered_with_the_refutation_again() -> None:
    # The sender has not heard our refutation yet: it changes nothing here, but the refutation
    # goes out again, first, instead of waiting behind newer news (N = 1000 at 30% loss lost
    # members whose refutation had stopped being sent while suspicions of them still circulated).
    m, _ = make()
    m.apply(wire("me", 0, "suspect"))  # now at incarnation 1
    drain(m)
    assert m.apply(wire("me", 0, "dead")) is False
    assert m.local.incarnation == 1
    assert [(u["node_id"], u["incarnation"], u["state"]) for u in m.take_piggyback()] == [("me", 1, "alive")]


def test_stale_suspicion_of_another_is_answered_with_the_newer_record() -> None:
    m, _ = make()
    m.apply(wire("c", 1, "suspect"))
    m.apply(wire("c", 2))  # c refuted
    for _ in range(3):
        m.take_piggyback()  # the refutation went out a few times
    for i in range(40):
        m.apply(wire(f"x{i}", 0, "suspect"))  # then a crowd of newer suspicions, each sent fewer times
    assert m.apply(wire("c", 1, "suspect")) is False and view(m, "c") == (2, ALIVE)
    assert m.take_piggyback()[0] == wire("c", 2)  # fresh again: ahead of the crowd, not behind it
    drain(m)
    assert m.apply(wire("c", 1)) is False
    assert m.take_piggyback() == []  # stale good news needs no answer


def test_impostor_alive_at_higher_incarnation_is_refuted() -> None:
    m, _ = make()
    m.apply(wire("me", 4, "alive", url="http://impostor.example"))
    assert m.local.incarnation == 5
    assert m.local.url == "http://me.example:9000"


def test_only_the_local_node_raises_its_incarnation() -> None:
    m, _ = make()
    m.apply(wire("b", 2))
    m.suspect("b")
    m.mark_dead("b")
    assert view(m, "b") == (2, DEAD)  # our verdicts keep the member's incarnation


# -- leaving -------------------------------------------------------------------

def test_leave_returns_the_left_update_and_stops_refuting() -> None:
    m, _ = make()
    update = m.leave()
    assert update == {**m.local.to_wire(), "state": "left"}
    assert m.local.state is LEFT and m.local.incarnation == 0
    assert update in m.take_piggyback()
    assert m.apply(wire("me", 0, "dead")) is False
    assert m.local.state is LEFT
    assert m.alive() == []


def test_peer_left_wins_over_alive_and_is_not_routable() -> None:
    m, _ = make()
    m.apply(wire("b", 3))
    m.apply(wire("b", 3, "left"))
    assert [x.node_id for x in m.alive()] == ["me"]
    assert {x.node_id for x in m.members(include_dead=True)} == {"me", "b"}


# -- suspicion timeout ---------------------------------------------------------

def test_suspect_becomes_dead_after_suspicion_timeout() -> None:
    m, clock = make(MembershipConfig(suspicion_timeout=5.0))
    m.apply(wire("b"))
    m.suspect("b")
    clock.now += 4.9
    m.tick()
    assert view(m, "b") == (0, SUSPECT)
    clock.now += 0.1
    m.tick()
    assert view(m, "b") == (0, DEAD)


def test_suspicion_timeout_scales_with_log10_of_cluster_size() -> None:
    m, _ = make(MembershipConfig(suspicion_timeout=5.0))
    for i in range(99):
        m.apply(wire(f"n{i}"))
    assert m.suspicion_timeout() == pytest.approx(10.0)
    fixed, _ = make(MembershipConfig(suspicion_timeout=5.0, suspicion_log_scale=False))
    for i in range(99):
        fixed.apply(wire(f"n{i}"))
    assert fixed.suspicion_timeout() == 5.0


def test_new_suspicion_at_higher_incarnation_restarts_the_timer() -> None:
    m, clock = make(MembershipConfig(suspicion_timeout=5.0))
    m.apply(wire("b", 0, "suspect"))
    clock.now += 4.0
    m.apply(wire("b", 1, "suspect"))
    clock.now += 4.0
    m.tick()
    assert view(m, "b") == (1, SUSPECT)


def test_each_new_suspicion_and_death_of_a_member_is_counted_until_it_is_forgotten() -> None:
    m, clock = make(MembershipConfig(suspicion_timeout=5.0, dead_member_reap=60.0))
    m.apply(wire("b"))
    m.apply(wire("c"))
    m.suspect("b")  # our own detector's verdict
    m.suspect("b")  # found silent again: a confirmation of the same suspicion, not a new one
    m.apply({**wire("b", 0, "suspect"), "by": "c"})  # another suspecter of it: a confirmation too
    assert (m.suspicions["b"], m.deaths["b"]) == (1, 0)
    m.apply(wire("b", 1))  # b refuted
    m.apply({**wire("b", 1, "suspect"), "by": "c"})  # a suspicion gossiped to us counts as ours would
    assert m.suspicions["b"] == 2
    clock.now += 5.0
    m.tick()  # not refuted in time: dead
    m.apply(wire("b", 1, "dead"))  # the same death heard again
    assert (view(m, "b"), m.suspicions["b"], m.deaths["b"]) == ((1, DEAD), 2, 1)
    assert m.suspicions["c"] == m.deaths["c"] == 0 and m.suspicions["me"] == 0  # the others: none
    clock.now += 60.0
    m.tick()  # reaped: its counts go with it, so they stay bounded by the members listed
    assert "b" not in m.suspicions and "b" not in m.deaths


def test_local_suspect_and_mark_dead_ignore_self_and_unknown() -> None:
    m, _ = make()
    m.suspect("me")
    m.mark_dead("me")
    m.suspect("nobody")
    assert m.local.state is ALIVE and m.get("nobody") is None


# -- tombstones ----------------------------------------------------------------

def test_reaped_member_keeps_a_tombstone_that_blocks_stale_gossip() -> None:
    m, clock = make(MembershipConfig(dead_member_reap=60.0))
    m.apply(wire("b", 2))
    m.apply(wire("b", 2, "dead"))
    clock.now += 60.0
    m.tick()
    assert m.get("b") is None
    assert "b" not in {x.node_id for x in m.members(include_dead=True)}
    assert m.tombstone("b") is not None
    assert wire("b", 2, "dead") in m.snapshot()
    drain(m)
    for stale in (wire("b", 2), wire("b", 1, "suspect"), wire("b", 2, "dead")):
        assert m.apply(stale) is False
    assert m.get("b") is None and m.take_piggyback() == []
    assert m.apply(wire("b", 3)) is True  # the node came back and refuted
    assert view(m, "b") == (3, ALIVE) and m.tombstone("b") is None


def test_death_of_unknown_member_is_remembered_not_listed() -> None:
    m, _ = make()
    assert m.apply(wire("ghost", 4, "dead")) is False
    assert m.get("ghost") is None
    assert m.apply(wire("ghost", 4)) is False
    assert m.apply(wire("ghost", 5)) is True


def test_tombstones_are_bounded_oldest_first() -> None:
    m, _ = make(MembershipConfig(max_tombstones=2))
    for name in ("a", "b", "c"):
        m.apply(wire(name, 0, "dead"))
    assert m.tombstone("a") is None
    assert m.tombstone("b") is not None and m.tombstone("c") is not None


def test_restarted_node_refutes_its_own_tombstone_from_a_snapshot() -> None:
    seed, clock = make()
    seed.apply(wire("b", 3))
    seed.mark_dead("b")
    clock.now += 1000
    seed.tick()
    local = Member("b", "http://b.example:9000", frozenset({"store"}), 0, ALIVE, 0.0)
    restarted = Membership(local, MembershipConfig(), clock)
    assert restarted.apply_many(seed.snapshot()) >= 1
    assert restarted.local.incarnation == 4
    assert seed.apply(restarted.local.to_wire()) is True
    assert view(seed, "b") == (4, ALIVE)


# -- validation ----------------------------------------------------------------

INVALID = [
    "not a dict",
    None,
    {**wire("b"), "extra": 1},
    {k: v for k, v in wire("b").items() if k != "url"},
    wire(""),
    {**wire("b"), "node_id": "x" * 129},
    {**wire("b"), "node_id": "bad id"},
    {**wire("b"), "node_id": ["b"]},
    {**wire("b"), "node_id": 7},
    wire("b", url="ftp://b.example"),
    wire("b", url="http://"),
    wire("b", url="http://b.example:99999"),
    wire("b", url="http://b.example/ x"),
    wire("b", url="http://b.example/" + "a" * 2100),
    wire("b", caps="store"),
    wire("b", caps=["Store"]),
    wire("b", caps=["store;drop"]),
    wire("b", caps=[1]),
    wire("b", caps=[f"c{i}" for i in range(33)]),
    {**wire("b"), "incarnation": -1},
    {**wire("b"), "incarnation": 1.0},
    {**wire("b"), "incarnation": True},
    {**wire("b"), "incarnation": "3"},
    {**wire("b"), "incarnation": 2**64},
    {**wire("b"), "incarnation": 2**63 - 1},
    {**wire("b"), "incarnation": 2**62 + 1},
    {**wire("b", 1 + 2**20 + 1), "state": "dead"},
    {**wire("b"), "state": "zombie"},
    {**wire("b"), "state": None},
]


@pytest.mark.parametrize("bad", INVALID)
def test_invalid_update_is_refused_and_changes_nothing(bad: object) -> None:
    m, _ = make()
    m.apply(wire("b", 1))
    drain(m)
    before = m.snapshot()
    with pytest.raises(ValueError):
        m.apply(bad)  # type: ignore[arg-type]
    assert m.snapshot() == before
    assert m.take_piggyback() == []


JUMP = MembershipConfig().max_incarnation_jump


def test_a_death_claim_far_above_a_members_incarnation_is_refused() -> None:
    # Issue 17: one gossip "dead at 2**63-1" evicted a member for good (its refutation could not be higher).
    m, _ = make()
    m.apply(wire("b", 3))
    # A claim b must refute rises one less than the bound, so its refutation fits everyone's (issue 31, row 7).
    for inc in (2**63 - 1, 2**62, 3 + JUMP + 1, 3 + JUMP):
        with pytest.raises(ValueError):
            m.apply(wire("b", inc, "dead"))
        assert view(m, "b") == (3, ALIVE)
    assert m.apply(wire("b", 3 + JUMP - 1, "suspect")) is True  # a jump within the bound is a plain update
    assert view(m, "b") == (3 + JUMP - 1, SUSPECT)
    assert m.apply(wire("b", 3 + JUMP - 1 + JUMP)) is True  # an alive record (the refutation) may rise the bound
    assert view(m, "b") == (3 + 2 * JUMP - 1, ALIVE)


def test_a_claim_about_the_local_node_beyond_the_bound_is_never_adopted() -> None:
    m, _ = make()
    for inc in (JUMP + 1, JUMP):  # our refutation, one past it, would be beyond the bound for our peers
        with pytest.raises(ValueError):
            m.apply(wire("me", inc, "dead"))
    assert m.local.incarnation == 0 and m.local.state is ALIVE
    m.apply(wire("me", JUMP - 1, "dead"))  # within the bound: refuted by raising our own, one past the claim
    assert m.local.incarnation == JUMP and m.local.state is ALIVE


def test_a_restarted_node_takes_the_first_view_of_itself_whatever_the_jump_and_no_other() -> None:
    # Issue 31, row 7: the cluster held the node at an incarnation a restart (at 0) could not refute.
    m, _ = make()
    assert m.apply_many([wire("me", 3 * JUMP, "dead")]) == 0 and m.invalid_updates == 1  # gossip: bounded
    assert m.merge_view([wire("b"), wire("me", 3 * JUMP, "dead")]) == 2  # a peer's view sent back to us
    assert m.local.incarnation == 3 * JUMP + 1 and m.local.state is ALIVE
    assert m.merge_view([wire("me", 6 * JUMP, "dead")]) == 0 and m.invalid_updates == 2  # once only
    assert m.local.incarnation == 3 * JUMP + 1
    fresh, _ = make()
    assert fresh.merge_view([wire("me", 2**62, "dead")]) == 0 and fresh.invalid_updates == 1  # never past refuting
    assert fresh.local.incarnation == 0 and not fresh.own_record_seen


def test_a_tombstone_bounds_the_incarnation_a_member_may_come_back_with() -> None:
    m, clock = make(MembershipConfig(dead_member_reap=1.0))
    m.apply(wire("b", 3))
    m.apply(wire("b", 3, "dead"))
    clock.now += 2
    m.tick()
    assert m.get("b") is None and m.tombstone("b") is not None
    with pytest.raises(ValueError):
        m.apply(wire("b", 3 + JUMP + 1))
    assert m.apply(wire("b", 4)) is True


def test_a_message_over_the_update_cap_is_refused_whole() -> None:
    m, _ = make(MembershipConfig(max_updates_per_message=3))
    with pytest.raises(ValueError, match="limit 3"):
        m.apply_many([wire(f"n{i}") for i in range(4)])
    assert [x.node_id for x in m.members()] == ["me"]
    assert m.apply_many([wire(f"n{i}") for i in range(3)]) == 3


def test_members_are_capped_in_total() -> None:
    m, _ = make(MembershipConfig(max_members=3))
    assert m.apply_many([wire(f"n{i}") for i in range(5)]) == 2  # "me" takes one place
    assert m.invalid_updates == 3 and len(m.members()) == 3


def test_snapshot_is_cut_to_the_update_cap_keeping_the_newest_tombstones() -> None:
    m, clock = make(MembershipConfig(max_updates_per_message=4, dead_member_reap=1.0))
    for i in range(4):
        m.apply(wire(f"d{i}", 0, "dead"))  # deaths of unknown members: tombstones, oldest first
    m.apply(wire("b"))
    snap = m.snapshot()
    assert [u["node_id"] for u in snap] == ["me", "b", "d2", "d3"]


ADMIT = MembershipConfig(admission_timeout=5.0, max_pending_members=2)


def test_a_member_heard_of_second_hand_is_pending_until_it_answers_itself() -> None:
    m, _ = make(ADMIT)
    drain(m)
    assert m.apply(wire("b", 1, caps=["store"])) is True
    assert [x.node_id for x in m.pending()] == ["b"]
    # Pending: not routed to, not probed by the detector (alive), not relayed, not in snapshots.
    assert m.alive("store") == [] and [x.node_id for x in m.members()] == ["me"]
    assert m.take_piggyback() == [] and [u["node_id"] for u in m.snapshot()] == ["me"]
    assert m.get("b") is not None  # but known, so updates about it merge as usual
    m.apply(wire("b", 2, caps=["store"]))
    assert m.admit("b") is True and m.admit("b") is False
    assert [x.node_id for x in m.alive("store")] == ["b"] and m.pending() == []
    assert m.take_piggyback() == [wire("b", 2, caps=["store"])]


def test_pending_members_are_capped_and_forgotten_when_they_never_answer() -> None:
    m, clock = make(ADMIT)
    assert m.apply_many([wire("b"), wire("c"), wire("d")]) == 2
    assert m.invalid_updates == 1
    clock.now += 5.0
    m.tick()
    assert m.pending() == [] and m.get("b") is None and m.tombstone("b") is None
    assert m.apply(wire("d")) is True  # room again; heard of again, pending again


def test_a_pending_member_declared_dead_is_no_longer_pending() -> None:
    m, _ = make(ADMIT)
    m.apply(wire("b"))
    m.apply(wire("b", 0, "dead"))
    member = m.get("b")
    assert m.pending() == [] and member is not None and member.state is DEAD
    assert m.alive() == [m.local]


def test_apply_many_skips_and_counts_invalid_updates() -> None:
    m, _ = make()
    assert m.apply_many([wire("b"), {"junk": True}, wire("c", url="gopher://c"), wire("d")]) == 2
    assert m.invalid_updates == 2
    assert {x.node_id for x in m.members()} == {"me", "b", "d"}
    with pytest.raises(ValueError):
        m.apply_many({"node_id": "b"})  # type: ignore[arg-type]


def test_wire_round_trip() -> None:
    d = wire("node-1.a:b@c", 9, "suspect", caps=["store", "embed"], url="https://h.example/p")
    member = Member.from_wire(d, now=3.0)
    assert member.to_wire() == {**d, "capabilities": ["embed", "store"]}
    assert member.state_since == 3.0


def test_local_member_must_be_valid_and_alive() -> None:
    with pytest.raises(ValueError):
        Membership(Member("me", "ftp://x", frozenset(), 0, ALIVE, 0.0), MembershipConfig(), SimClock(100.0))
    with pytest.raises(ValueError):
        Membership(Member("me", "http://x", frozenset(), 0, DEAD, 0.0), MembershipConfig(), SimClock(100.0))


# -- reading and listeners -----------------------------------------------------

def test_alive_filters_by_capability_and_local() -> None:
    m, _ = make()
    m.apply(wire("b", caps=["store"]))
    m.apply(wire("c", caps=["llm"]))
    m.apply(wire("d", caps=["llm"]))
    m.suspect("d")
    m.apply(wire("e", 0, "dead", caps=["llm"]))
    assert {x.node_id for x in m.alive("llm")} == {"me", "c", "d"}  # suspects stay routable
    assert {x.node_id for x in m.alive("llm", include_local=False)} == {"c", "d"}
    assert {x.node_id for x in m.alive()} == {"me", "b", "c", "d"}


def test_listeners_see_every_change_with_the_old_state() -> None:
    m, _ = make()
    seen: list[tuple[str, MemberState, MemberState | None]] = []
    m.add_listener(lambda member, old: seen.append((member.node_id, member.state, old)))
    m.apply(wire("b"))
    m.suspect("b")
    m.apply(wire("b", 0, "suspect"))  # no change, no call
    m.mark_dead("b")
    m.apply(wire("me", 0, "suspect"))
    assert seen == [("b", ALIVE, None), ("b", SUSPECT, ALIVE), ("b", DEAD, SUSPECT), ("me", ALIVE, ALIVE)]


# -- piggyback queue -----------------------------------------------------------

def test_each_update_is_sent_retransmit_mult_times_log_n_then_dropped() -> None:
    m, _ = make(MembershipConfig(retransmit_mult=3))
    for i in range(6):  # 7 alive members with us
        m.apply(wire(f"n{i}"))
    limit = 3 * math.ceil(math.log2(7 + 1))
    assert m.max_transmits() == limit == 9
    drain(m)
    m.apply(wire("n0", 1))
    sends = 0
    while m.take_piggyback():
        sends += 1
    assert sends == limit
    assert m.pending_broadcasts() == 0


def test_piggyback_is_capped_and_fresh_updates_go_first() -> None:
    m, _ = make(MembershipConfig(max_piggyback=8))
    for i in range(20):
        m.apply(wire(f"n{i}"))
    first = m.take_piggyback()
    assert len(first) == 8
    second = m.take_piggyback()
    assert len(second) == 8 and not {d["node_id"] for d in first} & {d["node_id"] for d in second}


def test_newer_update_replaces_queued_one_about_the_same_node() -> None:
    m, _ = make()
    m.apply(wire("b"))
    m.suspect("b")
    queued = [d for d in m.take_piggyback() if d["node_id"] == "b"]
    assert queued == [{**wire("b", 0, "suspect"), "by": "me"}]  # the suspicion names its suspecter


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        MembershipConfig(suspicion_timeout=0)
    with pytest.raises(ValueError):
        MembershipConfig(max_piggyback=0)


def test_own_refutation_jumps_a_long_queue() -> None:
    m, _ = make(MembershipConfig(max_piggyback=4))
    for i in range(10):
        m.apply(wire(f"n{i}"))
    m.apply(wire("me", 0, "suspect"))
    for i in range(10, 20):  # newer news arrives after the refutation
        m.apply(wire(f"n{i}"))
    assert m.take_piggyback()[0] == m.local.to_wire()


def test_preload_starts_from_a_known_view_without_gossiping_it() -> None:
    m, _ = make()
    peers = [Member.from_wire(wire(f"n{i}"), 0.0) for i in range(3)]
    m.preload([*peers, m.local])
    assert {x.node_id for x in m.alive()} == {"me", "n0", "n1", "n2"}
    assert m.take_piggyback() == []
    assert m.apply(wire("n0")) is False and m.apply(wire("n0", 1)) is True
    with pytest.raises(ValueError):
        m.preload(peers)  # only into a fresh view
    fresh, _ = make()
    with pytest.raises(ValueError):
        fresh.preload([Member.from_wire(wire("x", 0, "dead"), 0.0)])
