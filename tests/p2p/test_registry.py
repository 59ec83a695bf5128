"""The registry declares which served writes flood an event; the results name the ids it carries."""

from __future__ import annotations

from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.registry import REGISTRY

# A result as it comes off the wire, and the ids its write event names.
WRITES = {
    "observe": ({"observation_id": "o1", "created": False}, ["o1"]),  # a retried write is told again
    "claim": ({"statement_id": "s1", "created": True}, ["s1"]),
    "record_inference": ({"id": "o1", "created": True, "statement_ids": ["s1", "s2"]}, ["s1", "s2"]),
    "record_summary": ({"id": "c1", "created": False, "statement_ids": ["s3"]}, []),  # a worker's repeat: none
    # What the dashboard shows live: the item taken back and the retraction (a retry's too), the tombstone.
    "retract": ({"retraction_id": "r1", "target_id": "s1", "kind": "statement", "created": False, "reason": "typo",
                 "source": "alice", "created_at": 1}, ["s1", "r1"]),
    "forget": ({"kind": "source", "tombstone_id": "t1"}, ["t1"]),
}
# An erasure of what was gone already wrote nothing: no event.
NOTHING_ERASED = {"kind": "observation", "tombstone_id": None}


def test_the_writes_that_wake_workers_and_dashboards_declare_their_event() -> None:
    events = {name: remote.event for name, remote in REGISTRY.items() if remote.event is not None}
    assert events == {"observe": "observation", "claim": "claim", "record_inference": "claim",
                      "record_summary": "claim", "retract": "retraction", "forget": "erasure"}
    assert all(method_spec(name).event == event for name, event in events.items())


def test_each_write_result_names_the_ids_its_event_carries() -> None:
    for name, (wire, ids) in WRITES.items():
        assert method_spec(name).load_result(wire).written_ids() == ids, name
    assert method_spec("forget").load_result(NOTHING_ERASED).written_ids() == []
