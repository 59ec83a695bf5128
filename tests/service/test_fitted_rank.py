"""The fitted ranking of hybrid+graph search on the real embedded databases: each way it connects turns.

Small hand-written conversations in which the right turn is found only through
the mechanism under test: a session window (the reply next to the turn the
question matches), a date the question names, a time the turn states, a
concept shared with a top hit, the query without the speaker it names; and
the store query that reads the windows.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from mnemonet.model.views import SearchHit
from mnemonet.service import MemoryService
from mnemonet.service.fitted_rank import FEATURES, NEIGHBOUR_FEATURES, Trees, without_names
from mnemonet.service.rank_time import asks_when, question_span, said_on, states_time
from mnemonet.service.rank_weights import TREE_DEPTH, TREE_NODES
from mnemonet.service.retrieval import Retriever
from mnemonet.store.vector_context import session_windows

FILLER = ("the weather was grey all week", "my laptop battery died again", "the train was late this morning",
          "we painted the fence on saturday", "the soup needed more salt", "my cousin moved to a new flat",
          "the printer jammed twice", "the library closed early", "someone left an umbrella on the bus",
          "the bakery ran out of rye bread")


@pytest.fixture(params=["fitted", "logistic"])
def ranking(request: pytest.FixtureRequest) -> str:
    """Both fitted models: the trees (the default) and the logistic regressions they replaced."""
    return str(request.param)


def retriever(service: MemoryService, ranking: str, **overrides: object) -> Retriever:
    """The service's retriever with the fitted ranking ``ranking`` and ``overrides``."""
    settings = service.settings.model_copy(update={"search_ranking": ranking, **overrides})
    return Retriever(service.graph, service.vectors, service.embedder, settings, caught_up=service.indexer.caught_up)


async def ranked(retriever: Retriever, query: str, per_list: int) -> dict[str, SearchHit]:
    """Every candidate of the fitted ranking's pool when the k-NN and keyword lists are ``per_list`` long."""
    return {h.id: h for h in retriever.fitted.rank(await retriever.candidate_pool(query, per_list)).hits}


async def conversation(service: MemoryService, session: str, turns: list[tuple[str, str]],
                       **metadata: str) -> list[str]:
    ids = []
    for speaker, text in turns:
        result = await service.observe(text, source=speaker, metadata={"session": session, **metadata})
        ids.append(result.observation_id)
    return ids


async def test_a_reply_is_found_through_the_window_of_the_turn_the_question_matches(
    service: MemoryService, ranking: str
) -> None:
    for n, text in enumerate(FILLER):
        await conversation(service, f"other-{n}", [("Ivo", text)])
    answer, asked = await conversation(service, "chat-1", [
        ("Tim", "Edinburgh would be magical: castles, old streets and great history."),
        ("John", "Good idea for the team trip next month, we want to explore a new city!"),
    ])
    query = "which city did Tim suggest for the team trip next month?"
    fitted = retriever(service, ranking)
    flat = {h.id for mode in ("keyword", "vector") for h in await fitted.search(query, k=1, mode=mode)}
    assert flat == {asked}, "lists of one find only the turn the question matches"

    hits = await ranked(fitted, query, 1)
    assert hits[answer].graph_path == f"{asked} -NEXT_IN_SESSION- {answer}"
    assert hits[answer].vector_rank is None and hits[answer].keyword_rank is None
    unwindowed = retriever(service, ranking, search_window_turns=0)
    assert answer not in await ranked(unwindowed, query, 1), "no window, no reply"


async def test_a_date_in_the_question_picks_the_turn_said_that_day(service: MemoryService, ranking: str) -> None:
    # The same words said in two sessions: only the session's date tells them apart.
    may = await conversation(service, "s1", [("Gina", "I went to the pottery class with my sister")],
                             session_date="1:56 pm on 8 May, 2023")
    july = await conversation(service, "s2", [("Gina", "I went to the pottery class with my sister")],
                              session_date="10:02 am on 3 July, 2023")
    fitted = retriever(service, ranking)
    for query, expected in (("What did Gina do on 3 July, 2023?", july), ("What did Gina do in May 2023?", may),
                            ("What did Gina do in July 2023?", july)):
        hits = await fitted.search(query, k=2, kinds=["observation"])
        assert [h.id for h in hits][:1] == expected, query
    # Without the said-at key both were said the day they were recorded: the older one leads on a tie.
    undated = retriever(service, ranking, search_time_key="")
    assert [h.id for h in await undated.search("What did Gina do on 3 July, 2023?", k=1)] == may


async def test_a_when_question_prefers_the_turn_that_says_when(service: MemoryService, ranking: str) -> None:
    timed = await conversation(service, "s1", [("Nate", "I won the chess tournament last weekend")])
    untimed = await conversation(service, "s2", [("Nate", "I won the chess tournament with my sister")])
    fitted = retriever(service, ranking)

    async def lead(query: str) -> float:
        """How far the timed turn's score is above the untimed one's (a ratio of the two)."""
        scores = {h.id: h.score for h in await fitted.search(query, k=2, kinds=["observation"])}
        return scores[timed[0]] / scores[untimed[0]]

    # A turn that says when leads for any question (LoCoMo's evidence states times more often than
    # other turns do), and further when the question asks when.
    plain = await lead("Did Nate win the chess tournament?")
    asked_when = await lead("When did Nate win the chess tournament?")
    assert plain > 1.0 and asked_when > plain


async def test_a_statement_sharing_a_concept_with_a_top_hit_joins(service: MemoryService, ranking: str) -> None:
    owns = await service.claim("Dana owns a greyhound", source="scout")
    lives = await service.claim("Dana lives in Lisbon", source="scout")
    for text in FILLER:
        await service.observe(text, source="news")
    query = "who owns a greyhound?"
    fitted = retriever(service, ranking, search_concept_expansion=100)
    flat = {h.id for mode in ("keyword", "vector") for h in await fitted.search(query, k=2, mode=mode)}
    assert owns.statement_id in flat and lives.statement_id not in flat

    hits = await ranked(fitted, query, 2)
    assert hits[lives.statement_id].graph_path == f"{owns.statement_id} -> (Dana) <-ABOUT- {lives.statement_id}"
    assert lives.statement_id not in await ranked(retriever(service, ranking, search_concept_expansion=0), query, 2)


async def test_a_query_naming_a_speaker_is_also_compared_without_the_name(service: MemoryService) -> None:
    [camped] = await conversation(service, "trip", [("Caroline", "We pitched the tent by a lake and cooked on a fire")])
    for n, text in enumerate(FILLER):
        await conversation(service, f"chat-{n}", [("Melanie", f"Hi Caroline, {text}")])
    query = "Where has Melanie camped?"
    fitted = retriever(service, "fitted")
    [top] = await fitted.search(query, k=1, mode="vector")
    assert top.id != camped, "the name pulls the query's vector towards Melanie's turns"

    unnamed, dense = FEATURES.index("unnamed_dense"), FEATURES.index("dense")
    pool = await fitted.candidate_pool(query, 20)
    row = pool.features[pool.ids().index(camped)]
    assert row[unnamed] == 0.0 and row[dense] < 0.0, "nearest to the query without the name, not to the query"
    off = await retriever(service, "fitted", search_unnamed_query=False).candidate_pool(query, 20)
    assert (off.features[:, unnamed] == off.features[:, dense]).all(), "off: the query's own similarity"


def test_without_names_takes_out_every_word_of_the_names_and_a_possessive() -> None:
    assert without_names("What do Melanie's kids like?", {"Melanie"}) == "What do kids like?"
    assert without_names("How do JON and Jolene destress?", {"Jon", "Jolene"}) == "How do and destress?"
    assert without_names("What did Ada Stone say to Adam?", {"Ada Stone"}) == "What did say to Adam?"
    assert without_names("Melanie?", {"Melanie"}) is None, "nothing left to embed"
    assert without_names("What does Melanie like?", set()) is None, "no name, no second query"


async def test_session_windows_read_neighbours_with_their_offsets_and_similarity(service: MemoryService) -> None:
    ids = await conversation(service, "chat", [("a", f"turn number {n} about {word}") for n, word in
                                               enumerate(("apples", "boats", "clouds", "dogs", "eggs"))])
    [other] = await conversation(service, "elsewhere", [("b", "a turn of another session")])
    await service.indexer.caught_up()
    [vector] = await service.embedder.embed(["dogs"], kind="query")
    pool = [ids[2], ids[3], other]
    rows = await session_windows(service.vectors, pool, [ids[2], other], "session", 1, 86_400_000, vector)
    offsets = {(w.seed, w.row.id): w.offset for w in rows}
    assert offsets == {(ids[2], ids[2]): 0, (ids[2], ids[1]): -1, (ids[2], ids[3]): 1, (ids[3], ids[3]): 0,
                       (other, other): 0}, "windows of the seeds only; every id's own row"
    similarity = {w.row.id: w.similarity for w in rows}
    assert similarity[ids[3]] is not None and similarity[ids[3]] > similarity[ids[1]]  # type: ignore[operator]
    texts = {(w.seed, w.row.id): w.row.text for w in rows}
    assert texts[(ids[2], ids[1])] == "a: turn number 1 about boats" and texts[(ids[2], ids[3])] == "", \
        "a neighbour already in the pool comes without its text"
    assert await session_windows(service.vectors, pool, [ids[2]], "session", 0, 86_400_000, vector) == [
        w for w in rows if w.offset == 0]
    assert all(w.unnamed_similarity is None for w in rows)
    [eggs] = await service.embedder.embed(["eggs"], kind="query")
    both = await session_windows(service.vectors, pool, [ids[2]], "session", 1, 86_400_000, vector, eggs)
    unnamed = {w.row.id: w.unnamed_similarity for w in both}
    assert {w.row.id: w.similarity for w in both} == {w.row.id: w.similarity for w in rows}
    assert unnamed[ids[3]] is not None and unnamed[ids[1]] is not None and unnamed[ids[3]] != similarity[ids[3]]


def test_dates_and_times_read_from_questions_and_metadata() -> None:
    today = date(2026, 11, 26)
    assert question_span("What did Maria do on October 13, 2023?", today) == (date(2023, 10, 13),) * 2
    assert question_span("Who visited on 1 February, 2023?", today) == (date(2023, 2, 1),) * 2
    assert question_span("What happened in December 2023?", today) == (date(2023, 12, 1), date(2023, 12, 31))
    assert question_span("How often at the beach in 2022?", today) == (date(2022, 1, 1), date(2022, 12, 31))
    # A phrase with its own year wins over a relative one; a relative one alone is read from today.
    assert question_span("What did she do last weekend before April 10, 2023?", today) == (date(2023, 4, 10),) * 2
    assert question_span("Where did John go last year?", today) == (date(2025, 1, 1), date(2025, 12, 31))
    assert question_span("What does Maria like?", today) is None
    assert said_on("1:56 pm on 8 May, 2023") == date(2023, 5, 8)
    assert said_on("2023-05-08T10:00:00Z") == date(2023, 5, 8)
    assert said_on("sometime") is None
    assert states_time("I went there two weeks ago") and not states_time("I love pottery")
    # Words are the runs of a-z of the lower-cased text, whatever surrounds them; a year stands alone.
    for text, told in [("See you TODAY!", True), ("in 2023 we moved", True), ("2weeks later", True),
                       ("todays news", False), ("x_today_y", True), ("Chicago agony", False), ("l'été today", True),
                       ("cafétoday", True), ("İstanbul yesterday", True), ("year2023", True), ("12023", False),
                       ("born 1999,", True), ("room 1920b", False), ("ÉTÉ", False), ("", False)]:
        assert states_time(text) == told, text
    assert asks_when("When did Gina go?") and asks_when("How long has she lived there?")
    assert not asks_when("What did Gina see when she went?")


def test_trees_sum_the_leaf_each_row_reaches() -> None:
    # x0 <= 0.5 -> -1; else x1 <= 2 -> 2, else 5; plus a tree of one leaf (0.25) on every row.
    trees = Trees.of([[(0, 0.5, 1, 2, 0.0), (0, 0.0, 1, 1, -1.0), (1, 2.0, 3, 4, 0.0), (0, 0.0, 3, 3, 2.0),
                       (0, 0.0, 4, 4, 5.0)], [(0, 0.0, 0, 0, 0.25)]], depth=2)
    x = np.array([[0.2, 9.0], [0.5, 0.0], [0.7, 2.0], [0.7, 2.5]])
    assert trees(x).tolist() == [-0.75, -0.75, 2.25, 5.25]
    assert trees(np.zeros((0, 2))).tolist() == []


def test_the_written_trees_read_the_tree_inputs_and_stay_within_their_depth() -> None:
    width = len(FEATURES) + len(NEIGHBOUR_FEATURES)
    for tree in TREE_NODES:
        for at, (feature, _, left, right, _) in enumerate(tree):
            assert 0 <= feature < width and 0 <= left < len(tree) and 0 <= right < len(tree)
            assert (left == right == at) or (left > at and right > at), "children after their parent, leaves loop"
        # Every row reaches a leaf within TREE_DEPTH steps from the root.
        frontier, steps = {0}, 0
        while any(tree[n][2] != n for n in frontier):
            frontier = {c for n in frontier for c in (tree[n][2], tree[n][3])}
            steps += 1
        assert steps <= TREE_DEPTH
