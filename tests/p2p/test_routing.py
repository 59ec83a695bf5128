"""Method allowlist, argument validation and peer choice."""

from __future__ import annotations

import random
import time

import pytest

from mnemonet.llm.base import CandidatePair
from mnemonet.model.api import ObserveResult
from mnemonet.p2p.errors import UnknownMethod
from mnemonet.p2p.membership import Member, Membership, MembershipConfig, MemberState
from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.routing import METHOD_CAPABILITY, Router, capability_of


def test_capabilities_of_methods() -> None:
    assert capability_of("observe") == "store"
    assert capability_of("get_concept_statements") == "store"
    assert capability_of("infer") == "llm"
    assert capability_of("llm.judge_pairs") == "llm"
    assert capability_of("embed.embed") == "embed"
    for name in ("close", "_llm", "sync_vectors", "llm.usage", "__init__"):
        with pytest.raises(UnknownMethod):
            capability_of(name)


def test_every_allowed_method_has_a_spec() -> None:
    for name in METHOD_CAPABILITY:
        assert method_spec(name).capability == METHOD_CAPABILITY[name]


def test_bind_validates_into_interface_types() -> None:
    spec = method_spec("llm.judge_pairs")
    bound = spec.bind({"pairs": [{"a": "x", "b": "y"}]}, 32)
    assert bound == {"pairs": [CandidatePair(a="x", b="y")]}
    with pytest.raises(ValueError, match="unexpected keyword"):
        method_spec("stats").bind({"x": 1}, 32)
    with pytest.raises(ValueError, match="missing a required argument"):
        method_spec("observe").bind({}, 32)
    with pytest.raises(ValueError, match="'limit'"):
        method_spec("get_concepts").bind({"limit": "many"}, 32)
    with pytest.raises(ValueError, match="JSON object"):
        method_spec("stats").bind([1], 32)


def test_bind_refuses_nul_and_deep_nesting_with_a_clear_error() -> None:
    spec = method_spec("observe")
    for kwargs in ({"text": "a\x00b"}, {"text": "t", "metadata": {"k\x00": "v"}}, {"text": "t", "source": "\x00"}):
        with pytest.raises(ValueError, match="NUL"):
            spec.bind(kwargs, 32)
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ValueError, match="deeper than 32"):
        spec.bind({"text": "t", "metadata": deep}, 32)
    assert spec.bind({"text": "t", "metadata": {"k": "v"}}, 32)["metadata"] == {"k": "v"}


def test_results_round_trip_through_json() -> None:
    spec = method_spec("observe")
    result = ObserveResult(observation_id="obs-1", created=True)
    assert spec.load_result(spec.dump_result(result)) == result


def _membership() -> Membership:
    local = Member("me", "http://127.0.0.1:1", frozenset({"cli"}), 0, MemberState.ALIVE, 0.0)
    membership = Membership(local, MembershipConfig(), time.monotonic)
    for name in ("a", "b", "c"):
        membership.apply({"node_id": name, "url": f"http://127.0.0.1:{ord(name)}", "capabilities": ["store"],
                          "incarnation": 0, "state": "alive"})
    membership.apply({"node_id": "l", "url": "http://127.0.0.1:9", "capabilities": ["llm"],
                      "incarnation": 0, "state": "alive"})
    return membership


def test_router_prefers_least_in_flight_then_lowest_latency() -> None:
    router = Router(_membership(), ewma_alpha=0.5, rng=random.Random(1))
    for peer, latency in (("a", 0.3), ("b", 0.1), ("c", 0.2)):
        router.started(peer)
        router.finished(peer, latency)
    assert [m.node_id for m in router.candidates("observe")] == ["b", "c", "a"]
    router.started("b")  # b now has a request in flight
    assert [m.node_id for m in router.candidates("observe")] == ["c", "a", "b"]
    assert [m.node_id for m in router.candidates("observe", exclude={"c"})] == ["a", "b"]
    assert [m.node_id for m in router.candidates("infer")] == ["l"]


def test_router_latency_is_smoothed() -> None:
    router = Router(_membership(), ewma_alpha=0.5)
    router.started("a")
    router.finished("a", 1.0)
    router.started("a")
    router.finished("a", 0.0)
    load = router.load_of("a")
    assert load is not None and load.latency == pytest.approx(0.5) and load.in_flight == 0


def test_router_skips_dead_members() -> None:
    membership = _membership()
    membership.mark_dead("a")
    router = Router(membership, ewma_alpha=0.5)
    assert {m.node_id for m in router.candidates("observe")} == {"b", "c"}


def test_router_tries_suspects_last() -> None:
    # A suspect most likely cannot answer (a partition, a crash not yet confirmed): a call sent there waits
    # out its timeout while an alive peer would have answered. Suspects stay candidates, as a last resort.
    membership = _membership()
    membership.suspect("b")
    router = Router(membership, ewma_alpha=0.5, rng=random.Random(1))
    for peer, latency in (("a", 0.3), ("b", 0.01), ("c", 0.2)):
        router.started(peer)
        router.finished(peer, latency)
    router.started("c")  # even busier than the suspect
    assert [m.node_id for m in router.candidates("observe")] == ["a", "c", "b"]
