"""Issue 32's "what was seen", each on real nodes: a store (with the offline model and the embedder), an
inference and a validation worker, and a client, each a PeerNode of its own (in-process network: the
network is not the point here). Every case failed on the main of 2026-11-26.
"""

from __future__ import annotations

from netsupport import NodeFactory, eventually, sees_all, until

from mnemonet.node.peer_node import PeerNode
from mnemonet.service import MemoryService
from mnemonet.settings import Settings
from mnemonet.truth.answer import NOTHING

NETWORK = "memory"
POLL, REQUEST_TIMEOUT = 0.3, 60.0
TIMERS = dict(llm="offline", worker_poll_interval=POLL, worker_event_debounce=0.05, request_timeout=REQUEST_TIMEOUT)
SETTLE_BOUND = 2 * REQUEST_TIMEOUT + Settings().validation_judge_wait + 2 * POLL


async def _network(make_node: NodeFactory, store_service: MemoryService) -> PeerNode:
    """Store, inference and validation nodes and a client; the client, once all see each other."""
    store = await make_node({"store", "llm", "embed"}, providers={"store": store_service}, **TIMERS)
    workers = [await make_node({name}, seed=store, **TIMERS) for name in ("inference", "validation")]
    client = await make_node({"cli"}, seed=store, **TIMERS)
    await eventually(lambda: sees_all([store, *workers, client]), 10.0, "four nodes joined")
    return client


async def _say(client: PeerNode, *lines: tuple[str, str], within: float = SETTLE_BOUND) -> None:
    """Observe each (source, text) in order, then wait until the workers have nothing left."""
    for source, text in lines:
        await client.client.observe(text, source=source)

    async def settled() -> bool:
        backlog = (await client.client.stats())["backlog"]
        return all(backlog[k] == 0 for k in ("vectors", "extraction", "inference", "validation"))

    await until(settled, within, "the workers' backlogs are empty")


async def _lead(client: PeerNode, question: str, asker: str | None = None) -> str:
    return (await client.client.remember(question, source=asker)).text.partition("\n")[0]


async def test_nothing_answers_a_question_the_memory_cannot_answer(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("user", "I'm located in Berlin"), ("carol", "I live in Paris"), ("quin", "I like opera"),
               ("dave", "I don't like mornings"))
    for question in ("where does zoe live?", "what is the capital of France?"):
        answer = await client.client.remember(question)
        assert answer.text.startswith(NOTHING), (question, answer.text)
        assert answer.confidence < 0.5
    await store_service.forget(source="dave")  # an admin's erasure (the client node holds no admin token)
    lead = await _lead(client, "what does dave like?", "user")
    assert lead == NOTHING, lead  # not the asker's own dislike of mornings


async def test_another_persons_fact_is_never_given_as_yours(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("bob", "I'm at Globex, my boss is Dave"), ("alice", "I work at Acme"),
               ("bob", "My mother lives in Lyon"))
    lead = await _lead(client, "where do I work?", "bob")
    assert "Acme" not in lead and "alice" not in lead and "Globex" in lead, lead
    based = await _lead(client, "where am I based?", "bob")
    assert "Lyon" not in based, based  # a relative's city is not bob's


async def test_answers_read_as_sentences(make_node: NodeFactory, store_service: MemoryService) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("alice", "I live in Lyon"), ("bob", "I am allergic to peanuts"),
               ("bob", "My manager is Dave"), ("carol", "I am not a morning person"))
    home = (await client.client.remember("where is my home?", source="alice")).text
    assert home.startswith("From memory: you live in Lyon") and "you located" not in home.casefold(), home
    assert "you are allergic to peanuts" in (await _lead(client, "what am I allergic to?", "bob")).casefold()
    assert "your manager is Dave" in await _lead(client, "who is my manager?", "bob")
    carol = (await client.client.remember("is carol a morning person?")).text
    assert "carol is not a morning person" in carol and "not is" not in carol, carol
    unlike = (await client.client.remember("does carol like mornings?")).text
    assert "not likes" not in unlike and "not is" not in unlike, unlike


async def test_the_subject_speaks_for_themselves(make_node: NodeFactory, store_service: MemoryService) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("bob", "Alice lives in Leeds"), ("alice", "I live in York"))
    answer = (await client.client.remember("where does alice live?")).text
    lead, _, rest = answer.partition("\n")
    assert "York" in lead and "Leeds" not in lead and "Unresolved" not in lead, answer
    assert "alice lives in leeds" in rest.partition("Changed:")[2].casefold(), answer  # both shown: earlier changed


async def test_a_fact_that_coexists_never_retires_another(make_node: NodeFactory, store_service: MemoryService) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("user", "I like short meetings"), ("user", "I hate meetings on Fridays"))
    statements = [s for s in await client.client.get_recent_statements(limit=50) if s.source == "user"]
    assert statements and not any(s.superseded_by or s.contradicted_by for s in statements), statements
    answer = (await client.client.remember("what are my meeting preferences?", source="user")).text
    shown = answer.partition("Changed:")[0]
    assert "short meetings" in shown and "Changed:" not in answer, answer


async def test_a_retracted_statement_takes_its_inferred_twin_with_it(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    client = await _network(make_node, store_service)
    await _say(client, ("alice", "I live in Rome"))
    statements = await client.client.get_recent_statements(limit=20)
    [home] = [s for s in statements if s.source == "alice" and s.object == "Rome"]
    twins = [s for s in statements if s.source == "inference-agent" and s.object == "Rome"]
    assert twins, statements  # the inferred "alice located in Rome"
    result = await store_service.retract(home.id, "wrong city", source="alice")
    assert {t.id for t in twins} <= set(result.flagged)
    answer = (await client.client.remember("where does alice live?")).text
    assert "Rome" not in answer.partition("\n")[0], answer
    assert "Retracted:" in answer and "wrong city" in answer, answer  # the answer cites the retraction


async def test_after_a_bulk_import_the_inferred_twins_follow_the_moves(  # seen with 240 lines
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    client = await _network(make_node, store_service)
    cities = ["Lyon", "Nantes", "Lille", "Nice", "Dijon", "Brest", "Metz", "Pau", "Tours", "Rome"]
    chatter = ["the weather is grey today", "we should book the room", "lunch was good", "the build is green"]
    lines = []
    for i in range(120):  # the seen import had 240 lines; half keeps the volume and order at half the cost
        if i % 12 == 0:
            lines.append(f"alice: I live in {cities[i // 12]}")
        else:
            lines.append(f"{('bob', 'carol', 'dan')[i % 3]}: {chatter[i % len(chatter)]} ({i})")
    for start in range(0, len(lines), 100):  # import_request_max_lines a request, as run_node.py import sends it
        report = await client.client.import_file("\n".join(lines[start:start + 100]), format="chat")
        assert report.ok == len(lines[start:start + 100]), report
    await _say(client, within=4 * SETTLE_BOUND)  # the workers catch up with 120 lines (minutes on two busy cores)
    homes = [s for s in await store_service.graph.recent_statements(500)
             if s.subject == "alice" and s.predicate in ("lives_in", "located_in") and not s.summary]
    current = {(s.predicate, s.object) for s in homes if not s.superseded_by and not s.withdrawn}
    assert current == {("lives_in", "Rome"), ("located_in", "Rome")}, current
    for question, asker in (("where do I live?", "alice"), ("where does alice live?", None)):
        lead = await _lead(client, question, asker)
        assert "Rome" in lead and not any(c in lead for c in cities[:-1]), (question, lead)
