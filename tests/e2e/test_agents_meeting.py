"""The meeting scenario across separate nodes (on the in-memory network): store+llm+embed, inference,
validation, consolidation, a client."""

from __future__ import annotations

from netsupport import NodeFactory, eventually, sees_all, until

from mnemonet.model.api import MemoryAPI
from mnemonet.service import MemoryService
from mnemonet.settings import Settings

NETWORK = "memory"  # agents between real nodes: ownership and exactly-once are the point, not the sockets
# request_timeout: an observe (extraction, its claims, their embeddings on the CPU) may take seconds on a
# loaded machine; the test profile's 5 s timed out at load 15.
WORKER_TIMERS = dict(llm="offline", worker_poll_interval=0.5, worker_event_debounce=0.05, request_timeout=60.0)
_DEFAULTS = Settings()
# Consolidation cycles in 60 s without writes at the default timers: one once writes have been quiet for
# consolidation_quiet_period, then one per worker pass (every worker_poll_interval) while it stays quiet.
IDLE_CYCLES = 1 + int((60 - _DEFAULTS.consolidation_quiet_period) // _DEFAULTS.worker_poll_interval)


async def test_meeting_preferences_change_across_nodes(make_node: NodeFactory, store_service: MemoryService) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **WORKER_TIMERS)
    inference = await make_node({"inference"}, seed=store, **WORKER_TIMERS)
    validation = await make_node({"validation"}, seed=store, **WORKER_TIMERS)
    client = await make_node({"cli"}, seed=store, **WORKER_TIMERS)
    nodes = [store, inference, validation, client]
    await eventually(lambda: sees_all(nodes), 5.0, "all four nodes joined")

    await client.client.observe("I prefer morning meetings")
    hate = await client.client.observe("actually I hate mornings, afternoon is better")

    def resolved() -> bool:
        stats = {w["worker"]: w for w in validation.worker_stats()}
        return stats["validation"]["supersessions"] >= 1

    await eventually(resolved, 20.0, "the validation worker resolved the change")
    statements = {s.sentence(): s for s in await client.client.get_recent_statements(limit=50)}
    morning, afternoon = statements["user prefers morning meetings"], statements["user prefers afternoon"]
    disliked = statements["user dislikes morning"]  # "mornings" met the existing "morning" concept
    # The claim the inference worker stands for, derived from its observation, once.
    inferred = [s for s in statements.values() if s.source == "inference-agent"]
    assert [(s.sentence(), s.derived_from) for s in inferred] == [("user not likes morning", [hate.observation_id])]
    # One model call per observation: the store knows the inference node, so each extraction inferred the
    # claims too (infer_with_extraction auto), and the inference worker found nothing left to ask about.
    assert dict(store_service.llm_calls) == {"observe": 2}
    assert await store_service.pending_observations("inference-agent") == []
    [worker] = inference.worker_stats()
    assert worker["llm_calls"] == 0 and worker["processed"] == 0 and worker["failed"] == 0
    # "actually ..." marks the afternoon preference as a correction of the same topic: it supersedes. Disliking
    # mornings and preferring morning meetings could both hold: neither contradicts nor retires the other.
    assert morning.superseded_by == [afternoon.id]
    assert afternoon.id in morning.contradicted_by and disliked.id not in morning.contradicted_by
    health = {w["worker"]: w for w in validation.health()["workers"]}
    assert health["validation"]["llm_calls"] == 1 and health["validation"]["failed"] == 0

    answer = await client.client.remember("what are my meeting preferences?")
    lead, _, rest = answer.text.partition("\n")
    assert "afternoon" in lead and "morning" not in lead
    assert "user prefers morning meetings" in rest.partition("Changed:")[2]
    # Worker counters also show in the stats of the node that runs them.
    [remote] = (await inference.client.stats())["workers"]
    assert (remote["worker"], remote["llm_calls"]) == ("inference", 0)


async def stale_summaries(api: MemoryAPI) -> tuple[int, list[str]]:
    """(current summaries, the superseded facts any of them still states)."""
    statements = await api.get_recent_statements(limit=200)
    current = [s.summary or "" for s in statements if s.summary and not s.superseded_by]
    superseded = [s.sentence() for s in statements if s.superseded_by and not s.summary]
    return len(current), [fact for fact in superseded for text in current if fact in text]


async def test_consolidation_never_resurrects_a_superseded_preference(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    # The README's meeting example plus two statements, with consolidation on at its default threshold (5 new
    # statements) and its timers short: a cycle after 0.3 s of quiet (default 30 s), passes every 0.5 s
    # (default 5 s). Requests may wait long on a loaded machine.
    timers = dict(WORKER_TIMERS, consolidation_quiet_period=0.3, consolidation_max_interval=1.0)
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **timers)
    workers = [await make_node({name}, seed=store, **timers) for name in ("inference", "validation", "consolidation")]
    client = await make_node({"cli"}, seed=store, **timers)
    nodes = [store, *workers, client]
    await eventually(lambda: sees_all(nodes), 5.0, "all five nodes joined")
    consolidation = workers[2]

    for text in ("I prefer morning meetings", "actually I hate mornings, afternoon is better",
                 "I like green tea", "I work at Acme"):
        await client.client.observe(text)

    def counters(name: str) -> dict[str, int]:
        return next(w for n in workers for w in n.worker_stats() if w.get("worker") == name)

    async def inferred() -> bool:
        return not await store_service.pending_observations("inference-agent")

    await until(inferred, 60.0, "every observation's claims inferred")
    await eventually(lambda: counters("validation")["supersessions"] >= 1, 60.0, "the validation worker did its part")

    async def settled() -> bool:
        count, stale = await stale_summaries(client.client)
        return count >= 1 and not stale

    await until(settled, 60.0, "a current summary that states no superseded fact")
    # Idle for what 60 s are at the default timers: nothing consolidation writes may bring the old preference back.
    passes = counters("consolidation")["passes"]
    await eventually(lambda: counters("consolidation")["passes"] >= passes + IDLE_CYCLES, 60.0,
                     f"{IDLE_CYCLES} more consolidation cycles (60 s idle at the defaults)")
    count, stale = await stale_summaries(client.client)
    assert count >= 1 and stale == []
    summaries = [s for s in await client.client.get_recent_statements(limit=200) if s.summary]
    user_current = [s for s in summaries if s.subject == "user" and not s.superseded_by]
    assert len(user_current) == 1  # one current summary of a concept; older ones superseded
    assert "afternoon" in (user_current[0].summary or "") and "morning meetings" not in (user_current[0].summary or "")

    answer = await client.client.remember("what are my meeting preferences?")
    lead = answer.text.partition("\n")[0]
    assert "afternoon" in lead and "morning" not in lead
    assert not answer.recall.statements[0].summary  # summaries rank below the statements that answer
    assert consolidation.health()["workers"][0]["failed"] == 0
