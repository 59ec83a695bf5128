"""Rendezvous hashing: one owner per item, an even split, and little movement when a worker dies."""

from __future__ import annotations

from collections import Counter

import pytest

from mnemonet.agents import Ownership, rendezvous_owner

ITEMS = [f"obs-{i}" for i in range(3000)]


def test_every_worker_agrees_on_one_owner_and_the_split_is_even() -> None:
    members = ["a", "b", "c"]
    views = {m: Ownership(m, lambda: list(reversed(members))) for m in members}
    for item in ITEMS[:300]:
        assert sum(v.owns(item) for v in views.values()) == 1
    shares = Counter(rendezvous_owner(i, members) for i in ITEMS)
    assert set(shares) == set(members) and min(shares.values()) > 0.28 * len(ITEMS)


def test_only_the_dead_workers_items_move() -> None:
    before = {i: rendezvous_owner(i, ["a", "b", "c"]) for i in ITEMS}
    after = {i: rendezvous_owner(i, ["a", "c"]) for i in ITEMS}
    moved = [i for i in ITEMS if before[i] != after[i]]
    assert moved and all(before[i] == "b" for i in moved)
    assert len(moved) == sum(1 for o in before.values() if o == "b")


def test_a_worker_counts_itself_live_and_alone_owns_all() -> None:
    lonely = Ownership("a", lambda: [])  # before gossip lists it
    solo = Ownership.solo("x")
    assert all(lonely.owns(i) and solo.owns(i) for i in ITEMS[:50])
    assert rendezvous_owner("obs-1", []) is None
    with pytest.raises(ValueError, match="self_id"):
        Ownership("", lambda: [])
