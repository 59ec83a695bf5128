"""Search quality on the real embedded databases: resolution, two-step retrieval, graph re-ranking, remember."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from mnemonet.embed.base import Embedder, EmbedKind
from mnemonet.model.records import ObservationRecord, SourceSpec, StatementSpec
from mnemonet.model.views import SearchHit, StatementView
from mnemonet.service import MemoryService
from mnemonet.service.retrieval import SEARCH_MODES, Retriever


def narrow(service: MemoryService, candidates: int, **overrides: object) -> Retriever:
    """A retriever whose flat lists hold only ``candidates`` items, so the graph has something to add.

    The rules ranking unless ``search_ranking`` says otherwise: these tests pin its bonuses and paths
    (the fitted ranking has its own, tests/service/test_fitted_rank.py).
    """
    overrides = {"search_ranking": "rules", **overrides}
    settings = service.settings.model_copy(
        update={"search_candidates": candidates, "hybrid_candidate_factor": 1, **overrides}
    )
    return Retriever(service.graph, service.vectors, service.embedder, settings, caught_up=service.indexer.caught_up)


async def test_superseded_statement_is_never_returned_as_current(service: MemoryService) -> None:
    first = await service.observe("I prefer morning meetings", source="user")
    second = await service.observe("actually I hate mornings, afternoon is better", source="user")
    [morning] = first.statements
    afternoon = next(s for s in second.statements if s.predicate == "prefers")
    query = "which meetings does the user prefer?"
    before = await service.search(query, k=20, kinds=["statement"], mode="hybrid")
    assert morning.id in {h.id for h in before}, "found while current"
    [top] = await service.search("morning meetings", k=1, kinds=["statement"], mode="keyword")
    assert top.id == morning.id

    await service.graph.link_statements(
        "SUPERSEDES", afternoon.id, morning.id, "changed their mind", SourceSpec(name="validator", kind="agent")
    )
    for mode in SEARCH_MODES:
        for kinds in (None, ["statement"]):
            hits = await service.search(query, k=20, kinds=kinds, mode=mode)
            assert morning.id not in {h.id for h in hits}, (mode, kinds)
    # With k=1 the first hit is dropped and the next statement read in its place.
    [top] = await service.search("morning meetings", k=1, kinds=["statement"], mode="keyword")
    assert top.id != morning.id and top.kind == "statement"
    recall = await service.recall(query)
    assert morning.id not in {s.id for s in recall.statements}
    assert morning.id in {s.id for s in recall.superseded}, "kept apart, to explain the change"
    assert afternoon.id in {s.id for s in recall.statements}


async def test_search_then_load_round_trip_with_provenance(service: MemoryService) -> None:
    obs = await service.observe(
        "Carol enjoys hiking in the Alps", source="carol", metadata={"session": "trip-planning"}
    )
    hits = await service.search("who enjoys hiking?", k=10)
    top = hits[0]
    assert (top.id, top.kind, top.score) == (obs.observation_id, "observation", 1.0)
    assert all(0 < h.score <= 1 and "\n" not in h.text for h in hits)
    # The statement extracted from the observation folds into it and follows the other hits.
    folded = [h for h in hits if h.kind == "statement"]
    assert folded and all(h.graph_path == f"{h.id} -DERIVED_FROM-> {obs.observation_id}" for h in folded)

    items = {i["id"]: i for i in await service.load([h.id for h in hits])}
    assert items[obs.observation_id]["source"] == "carol"
    assert items[obs.observation_id]["metadata"] == {"session": "trip-planning"}
    for h in folded:
        assert items[h.id]["derived_from"] == [obs.observation_id]
        assert items[h.id]["source"] == "carol"


async def test_graph_expansion_adds_a_neighbour_neither_list_found(service: MemoryService) -> None:
    owns = await service.claim("Dana owns a greyhound", source="scout")
    lives = await service.claim("Dana lives in Lisbon", source="scout")
    for text in ("greyhound racing draws a crowd", "the greyhound bus was late again",
                 "a greyhound can run very fast", "who owns the red bicycle outside?",
                 "greyhounds are gentle dogs", "my neighbour owns two whippets",
                 "the dog show had a greyhound class", "owners walk their greyhounds at dawn",
                 "a greyhound owner adopted a retired racer", "who owns the greyhound in the park?"):
        await service.observe(text, source="news")
    # Generous expansion, so the neighbour's place does not hang on the ids' random order.
    retriever = narrow(service, 8, search_concept_discount=1.0, search_concept_expansion=100)
    query = "who owns a greyhound?"
    flat = {h.id for mode in ("keyword", "vector", "hybrid") for h in await retriever.search(query, k=8, mode=mode)}
    assert owns.statement_id in flat
    assert lives.statement_id not in flat, "the neighbour must be one the flat lists missed"

    hits = {h.id: h for h in await retriever.search(query, k=8, mode="hybrid+graph")}
    neighbour = hits[lives.statement_id]
    assert neighbour.vector_rank is None and neighbour.keyword_rank is None
    assert neighbour.graph_path == f"{owns.statement_id} -> (Dana) <-ABOUT- {lives.statement_id}"


async def test_resolution_breaks_ties_before_it_cuts_at_k(service: MemoryService) -> None:
    # Equal scores: the more confident statement leads whatever k is, though it comes second.
    statements = (StatementSpec(id="s-less", subject="Dana", predicate="owns", object="a kayak", confidence=0.5),
                  StatementSpec(id="s-more", subject="Dana", predicate="owns", object="a canoe", confidence=0.9))
    await service.graph.write_observation(
        ObservationRecord(id="o-ties", text="Dana owns boats", source=SourceSpec(name="user"), statements=statements))
    hits = [SearchHit(id=s.id, kind="statement", text=s.id, score=1.0) for s in statements]
    assert [h.id for h in await service.retriever._resolve([hits], 1)][:1] == ["s-more"]
    assert [h.id for h in await service.retriever._resolve([hits], 2)] == ["s-more", "s-less"]


class _Timed:
    """The session's embedder, declared to take every core or not, noting whether keyword search had started when it
    finished."""

    def __init__(self, inner: Embedder, query_takes_all_cores: bool, keyword_started: asyncio.Event) -> None:
        self.model, self.dimension, self.query_takes_all_cores = inner.model, inner.dimension, query_takes_all_cores
        self._inner, self._keyword_started = inner, keyword_started
        self.keyword_had_started: list[bool] = []

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        if not self.query_takes_all_cores:
            # Times out unless keyword search runs while such an embedder works.
            await asyncio.wait_for(self._keyword_started.wait(), 10)
        vectors = await self._inner.embed(texts, kind)
        self.keyword_had_started.append(self._keyword_started.is_set())
        return vectors


@pytest.mark.parametrize("query_takes_all_cores", [True, False])
async def test_an_embedder_taking_every_core_runs_before_the_database_another_beside_it(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, query_takes_all_cores: bool
) -> None:
    await service.observe("the red bicycle is in the shed", source="user")
    keyword_started = asyncio.Event()
    keyword = service.vectors.keyword

    async def recording_keyword(*args: object) -> object:
        keyword_started.set()
        return await keyword(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(service.vectors, "keyword", recording_keyword)
    embedder = _Timed(service.embedder, query_takes_all_cores, keyword_started)
    retriever = Retriever(service.graph, service.vectors, embedder, service.settings,
                          caught_up=service.indexer.caught_up)
    hits = await retriever.search("where is the bicycle?", mode="hybrid")
    assert hits and "bicycle" in hits[0].text
    # Every core: embedded first, on cores PostgreSQL then has to itself. Otherwise: overlapped.
    assert embedder.keyword_had_started == [not query_takes_all_cores]


async def test_graph_search_reads_only_returned_statements_once_and_resolves_reached_ones(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    owns = await service.claim("Dana owns a greyhound", source="scout")
    lives = await service.claim("Dana lives in Lisbon", source="scout")
    moved = await service.claim("Dana lives in Porto", source="scout")
    await service.graph.link_statements(
        "CONTRADICTS", moved.statement_id, lives.statement_id, "one home", SourceSpec(name="validator", kind="agent")
    )
    for text in ("greyhound racing draws a crowd", "the greyhound bus was late again",
                 "a greyhound can run very fast", "who owns the red bicycle outside?",
                 "greyhounds are gentle dogs", "Erin owns two whippets",
                 "the dog show had a greyhound class", "owners walk their greyhounds at dawn"):
        await service.observe(text, source="news")
    requested: list[str] = []
    read = service.graph.get_statements

    async def recording(ids: list[str]) -> list[StatementView]:
        requested.extend(ids)
        return await read(ids)

    monkeypatch.setattr(service.graph, "get_statements", recording)
    retriever = narrow(service, 8, search_concept_discount=1.0, search_concept_expansion=100)
    hits = {h.id: h for h in await retriever.search("who owns a greyhound?", k=8, mode="hybrid+graph")}
    assert owns.statement_id in hits
    reached = [h for h in hits.values() if h.graph_path and "(Dana)" in h.graph_path]
    assert reached, "the concept step reaches Dana's other statements"
    for hit in reached:
        assert hit.id in (lives.statement_id, moved.statement_id) and hit.vector_rank is None
        assert hit.flags == ["contradicted"], "resolution sees the statements the concept step reached"
    statement_hits = {h.id for h in hits.values() if h.kind == "statement"}
    # Ranking reads no statement views; resolution reads those of the returned hits, once each.
    assert sorted(requested) == sorted(statement_hits)


async def test_adjacent_turn_of_the_same_session_joins(service: MemoryService) -> None:
    turns = [
        ("erin", "Did you go anywhere nice for the spring holidays?"),
        ("frank", "Yes! Two weeks in Kyoto, the temples were stunning."),
        ("erin", "Our cat knocked the lamp over yesterday."),
    ]
    ids = []
    for n, (speaker, text) in enumerate(turns):
        result = await service.observe(text, source=speaker, metadata={"session": "chat-1", "turn": str(n)})
        ids.append(result.observation_id)
    other = await service.observe("Spring holidays start in April", source="calendar", metadata={"session": "chat-2"})
    # Only the top hit is expanded, one turn on each side.
    retriever = narrow(service, 10, search_expansion_seeds=1, search_adjacent_turns=1)
    query = "did you go anywhere nice for the spring holidays?"
    hits = await retriever.search(query, k=10, kinds=["observation"], mode="hybrid+graph")
    by_id = {h.id: h for h in hits}
    assert hits[0].id == ids[0]
    assert by_id[ids[1]].graph_path == f"{ids[0]} -NEXT_IN_SESSION- {ids[1]}"
    assert by_id[ids[2]].graph_path is None, "only the nearest turn on each side joins"
    wider = await narrow(service, 10, search_expansion_seeds=1, search_adjacent_turns=2).search(
        query, k=10, kinds=["observation"], mode="hybrid+graph")
    assert {h.id: h.graph_path for h in wider}[ids[2]] == f"{ids[0]} -NEXT_IN_SESSION- {ids[2]}"
    assert by_id[other.observation_id].graph_path is None, "another session's turn never joins"


# Indexed "source: text" alone, with the rules ranking's read-time bonus, and in the fitted ranking.
@pytest.mark.parametrize(("ranking", "boost"), [("rules", 0.0), ("rules", 0.5), ("fitted", 0.0)])
async def test_a_speaker_named_in_the_query_ranks_first(service: MemoryService, ranking: str, boost: float) -> None:
    gina = await service.observe("I finally finished the marathon last weekend", source="Gina")
    hank = await service.observe("I finally finished the marathon last weekend!", source="Hank")
    retriever = narrow(service, service.settings.search_candidates, search_source_boost=boost, search_ranking=ranking)
    for who, expected in (("Gina", gina.observation_id), ("Hank", hank.observation_id)):
        hits = await retriever.search(f"when did {who} finish the marathon?", k=2, kinds=["observation"])
        assert hits[0].id == expected


async def test_remember_answers_the_meeting_scenario_from_retrieved_statements(service: MemoryService) -> None:
    first = await service.observe("I prefer morning meetings", source="user")
    second = await service.observe("actually I hate mornings, afternoon is better", source="user")
    afternoon = next(s for s in second.statements if s.predicate == "prefers")
    await service.claim(f"{afternoon.sentence()} contradicts {first.statements[0].sentence()}", source="validator")

    answer = await service.remember("what are my meeting preferences?")
    retrieved = {s.id for s in answer.recall.statements}
    assert afternoon.id in retrieved and first.statements[0].id in retrieved
    assert afternoon.id in answer.cited and set(answer.cited) <= retrieved | {o.id for o in answer.recall.observations}
    assert "afternoon" in answer.text.lower()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"k": 0}, "k: must be"), ({"k": 101}, "k: must be"), ({"k": True}, "k: must be"),
     ({"mode": "fuzzy"}, "mode: must be one of"), ({"kinds": ["thing"]}, "kinds: unknown"),
     ({"kinds": "statement"}, "kinds: expected"), ({"since": -1}, "since: expected")],
)
async def test_bad_search_arguments_are_refused(service: MemoryService, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await service.search("anything", **kwargs)


async def test_the_keyword_lists_statements_are_looked_up_for_folding_while_the_query_is_embedded(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.observe("Ingrid keeps the red bicycle in the shed", source="user")
    looked_up = asyncio.Event()
    extracted_from = service.graph.extracted_from
    calls: list[list[str]] = []

    async def recording(ids: list[str]) -> object:
        calls.append(list(ids))
        looked_up.set()
        return await extracted_from(ids)

    monkeypatch.setattr(service.graph, "extracted_from", recording)

    class Waiting(_Timed):
        async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
            await asyncio.wait_for(looked_up.wait(), 10)  # times out unless the lookup runs beside it
            return await self._inner.embed(texts, kind)

    embedder = Waiting(service.embedder, False, asyncio.Event())
    retriever = Retriever(service.graph, service.vectors, embedder, service.settings,
                          caught_up=service.indexer.caught_up)
    hits = await retriever.search("who keeps the red bicycle?", mode="hybrid+graph")
    assert hits and "bicycle" in hits[0].text
    assert calls and all(calls)  # the keyword list's statements; the dense list's only if any are left
    assert hits == await service.retriever.search("who keeps the red bicycle?", mode="hybrid+graph")


async def test_the_query_is_embedded_while_the_search_waits_for_acknowledged_writes_and_nothing_is_read_before(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.observe("Ingrid keeps the red bicycle in the shed", source="user")
    events: list[str] = []
    embedding = asyncio.Event()

    async def caught_up() -> None:
        await asyncio.wait_for(embedding.wait(), 10)  # times out unless the query is embedded meanwhile
        await service.indexer.caught_up()
        events.append("caught up")

    def recording(name: str) -> Any:
        read = getattr(service.vectors, name)

        def note(*args: object) -> object:
            events.append(name)
            return read(*args)
        return note

    for name in ("knn", "keyword"):
        monkeypatch.setattr(service.vectors, name, recording(name))

    class Embedding(_Timed):
        async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
            embedding.set()
            return await self._inner.embed(texts, kind)

    for takes_all_cores in (True, False):
        events.clear()
        embedding.clear()
        retriever = Retriever(service.graph, service.vectors, Embedding(service.embedder, takes_all_cores,
                                                                        asyncio.Event()),
                              service.settings, caught_up=caught_up)
        hits = await retriever.search("who keeps the red bicycle?", mode="hybrid+graph")
        assert hits and "bicycle" in hits[0].text
        assert events[0] == "caught up" and sorted(events[1:]) == ["keyword", "knn"], events
