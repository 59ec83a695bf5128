"""Issue 15's speaker and conflict must-shows on real nodes: store+llm+embed, inference, validation,
consolidation and a client, each a node of its own on real sockets, the offline model.

- alice "I live in Paris", bob "I live in Rome": two subjects, no contradiction.
- carol "My manager is Tom", then "My manager is Priya": an unknown predicate (not in the schema),
  the newer supersedes, the answer is Priya.
- The same change from two sources (erin: Dana's manager is Tom; frank: Dana's manager is Priya,
  seconds apart, equal trust): an open conflict, named in the answer.
"""

from __future__ import annotations

from netsupport import NodeFactory, eventually, sees_all, until

from mnemonet.service import MemoryService
from mnemonet.settings import Settings

# Consolidation cycles after 1 s of quiet (as the demo's scenario runs do) so the memory settles quickly;
# requests may wait long on a loaded machine (observe embeds on the CPU that six nodes share).
POLL, QUIET, REQUEST_TIMEOUT = 0.5, 1.0, 60.0
TIMERS = dict(llm="offline", worker_poll_interval=POLL, worker_event_debounce=0.05, consolidation_quiet_period=QUIET,
              request_timeout=REQUEST_TIMEOUT)
# Settled: every worker's backlog is empty. A pass is a routed call or two (each within request_timeout);
# validation holds an ambiguous pair up to validation_judge_wait; consolidation waits for quiet.
SETTLE_BOUND = 2 * REQUEST_TIMEOUT + Settings().validation_judge_wait + QUIET + 2 * POLL


async def test_speakers_are_distinct_a_change_supersedes_and_a_disagreement_is_named(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **TIMERS)
    workers = [await make_node({name}, seed=store, **TIMERS) for name in ("inference", "validation", "consolidation")]
    client = await make_node({"cli"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, *workers, client]), 5.0, "five nodes joined")
    api = client.client

    for source, text in [("alice", "I live in Paris"), ("bob", "I live in Rome"),
                         ("carol", "My manager is Tom"), ("carol", "My manager is Priya"),
                         ("erin", "Dana's manager is Tom"), ("frank", "Dana's manager is Priya")]:
        await api.observe(text, source=source)

    async def settled() -> bool:
        return all(n == 0 for n in (await api.stats())["backlog"].values())

    await until(settled, SETTLE_BOUND, "the workers' backlogs are empty")
    statements = {s.sentence(): s for s in await api.get_recent_statements(limit=100)}
    contradicted = {s.sentence() for s in statements.values() if s.contradicted_by}
    superseded = {s.sentence() for s in statements.values() if s.superseded_by and not s.summary}

    # Two speakers, two subjects: each "I" is its own source, so the homes never meet.
    assert {"alice lives in Paris", "bob lives in Rome"} <= set(statements)
    assert statements["alice lives in Paris"].source == "alice" and statements["bob lives in Rome"].source == "bob"
    assert not {"alice lives in Paris", "bob lives in Rome"} & (contradicted | superseded)
    lead = (await api.remember("where do I live?", source="alice")).text.partition("\n")[0]
    assert "Paris" in lead and "Rome" not in lead, lead

    # The same speaker's newer manager supersedes the older (has_manager is outside the schema).
    tom, priya = statements["carol has manager Tom"], statements["carol has manager Priya"]
    assert tom.superseded_by == [priya.id] and not priya.superseded_by
    lead = (await api.remember("who is my manager?", source="carol")).text.partition("\n")[0]
    assert "Priya" in lead and "Tom" not in lead, lead

    # Two sources of equal trust, seconds apart: the conflict stays open, and the answer says so in words.
    dana_tom, dana_priya = statements["Dana has manager Tom"], statements["Dana has manager Priya"]
    assert not dana_tom.superseded_by and not dana_priya.superseded_by
    open_pairs = {frozenset((c.a.id, c.b.id)) for c in await api.get_unresolved_contradictions(50)}
    assert frozenset((dana_tom.id, dana_priya.id)) in open_pairs
    lead = (await api.remember("who is Dana's manager?")).text.partition("\n")[0]
    assert "Unresolved" in lead and all(word in lead for word in ("erin", "Tom", "frank", "Priya")), lead
    assert all(w["failed"] == 0 for n in workers for w in n.worker_stats())

