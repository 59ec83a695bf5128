"""The observation is the record: kept and acknowledged when no language model answers, extracted once later."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from mnemonet.embed.base import Embedder
from mnemonet.llm import OfflineLanguageModel, make_language_model
from mnemonet.llm.base import Extraction, LanguageModel
from mnemonet.llm.errors import LanguageModelError, LanguageModelUnavailable
from mnemonet.model.errors import InvalidInput
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings


class SwitchableModel:
    """The offline model behind a switch: ``down`` raises as a provider past its retries would."""

    def __init__(self, settings: Settings, inner: LanguageModel | None = None) -> None:
        self.inner = inner or make_language_model(settings)
        self.down: type[LanguageModelError] | None = LanguageModelUnavailable
        self.extractions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        if self.down is not None:
            raise self.down("anthropic: gave up after 3 attempt(s): HTTP 529: overloaded")
        self.extractions += 1
        return await self.inner.extract_observation(text, source, said_at, infer)


@pytest.fixture
async def switchable(
    service_settings: Settings, embedder: Embedder, unique_name: str
) -> AsyncIterator[tuple[MemoryService, SwitchableModel]]:
    settings = service_settings.model_copy(update={"extraction_grace": 0.0})
    model = SwitchableModel(settings)
    svc = await build_memory_service(settings, model, embedder, vector_schema=unique_name)
    yield svc, model
    await svc.close()


async def test_observe_without_a_model_is_kept_acknowledged_and_pending(
    switchable: tuple[MemoryService, SwitchableModel],
) -> None:
    svc, model = switchable
    result = await svc.observe("Dana works at Initech", source="alice", idempotency_key="k1",
                               metadata={"channel": "chat"})
    assert result.created and result.pending and result.statements == []
    assert "no language model answered" in (result.extraction_error or "")
    [kept] = await svc.graph.get_observations([result.observation_id])
    assert (kept.text, kept.source, kept.metadata) == ("Dana works at Initech", "alice", {"channel": "chat"})
    assert (await svc.stats())["extractions_pending"] == 1
    assert [o.id for o in await svc.pending_extractions()] == [result.observation_id]
    # Search finds it already: the raw text is indexed on the first write.
    hits = await svc.search("Initech", kinds=["observation"], mode="hybrid")
    assert [h.id for h in hits] == [result.observation_id]


@pytest.mark.parametrize("together", [False, True], ids=["no-worker-known", "inference-worker-known"])
async def test_pending_extraction_is_done_exactly_once_when_the_model_returns(
    switchable: tuple[MemoryService, SwitchableModel], together: bool
) -> None:
    svc, model = switchable
    svc.inference_runs = lambda: together  # as a node sets it from its membership (infer_with_extraction auto)
    obs = await svc.observe("Dana works at Initech", source="alice", idempotency_key="k1")
    assert obs.pending
    still = await svc.complete_extraction(obs.observation_id)  # the model is still down
    assert still.pending and await svc.graph.extraction_state(obs.observation_id) == "pending"

    model.down = None
    done = await svc.complete_extraction(obs.observation_id)
    assert not done.pending and [s.sentence() for s in done.statements] == ["Dana works at Initech"]
    [statement] = done.statements
    assert statement.source == "alice" and statement.derived_from == [obs.observation_id]
    [kept] = await svc.graph.get_observations([obs.observation_id])
    assert statement.created_at == kept.created_at  # it holds from when it was said
    assert "initech" in kept.topics  # topics arrive with the extraction

    again = await svc.complete_extraction(obs.observation_id)  # a second worker, or a retry
    retried = await svc.observe("Dana works at Initech", source="alice", idempotency_key="k1")
    assert [s.id for s in again.statements] == [s.id for s in retried.statements] == [statement.id]
    assert model.extractions == 1  # done once: neither the repeat nor the retried observe asked again
    assert not retried.created and not retried.pending
    assert (await svc.stats())["extractions_pending"] == 0
    assert await svc.pending_extractions() == []
    counts = (await svc.stats())["graph"]
    # With an inference worker about, the one late extraction call inferred its claim too, once.
    claims = await svc.graph.statements_by_source("inference-agent", [obs.observation_id])
    assert [(c.sentence(), c.derived_from) for c in claims] == (
        [("Initech employs Dana", [obs.observation_id])] if together else [])
    assert counts["Statement"] == 1 + len(claims)


@pytest.mark.parametrize("together", [False, True], ids=["worker-infers", "extraction-infers"])
async def test_a_repeat_returns_the_observations_own_statements_not_the_inferred_claims(
    switchable: tuple[MemoryService, SwitchableModel], together: bool
) -> None:
    svc, model = switchable
    svc.inference_runs = lambda: together
    model.down = None
    first = await svc.observe("Dana works at Initech", source="alice", idempotency_key="k1")
    if not together:  # the inference worker's own call
        await svc.record_inference(first.observation_id, await svc.infer("Dana works at Initech", "alice"),
                                   "inference-agent")
    [claim] = await svc.graph.statements_by_source("inference-agent", [first.observation_id])
    assert claim.sentence() == "Initech employs Dana"
    retried = await svc.observe("Dana works at Initech", source="alice", idempotency_key="k1")
    again = await svc.complete_extraction(first.observation_id)
    assert [s.sentence() for s in first.statements] == ["Dana works at Initech"]
    assert [s.id for s in retried.statements] == [s.id for s in again.statements] == [s.id for s in first.statements]
    assert model.extractions == 1


async def test_a_retried_observe_finishes_a_pending_extraction(
    switchable: tuple[MemoryService, SwitchableModel],
) -> None:
    svc, model = switchable
    first = await svc.observe("Bob lives in Paris", idempotency_key="req-1")
    assert first.pending
    model.down = None
    second = await svc.observe("Bob lives in Paris", idempotency_key="req-1")
    assert not second.created and not second.pending
    assert [s.sentence() for s in second.statements] == ["Bob lives in Paris"]


async def test_a_malformed_result_is_retried_once_by_the_worker_then_recorded(
    switchable: tuple[MemoryService, SwitchableModel],
) -> None:
    svc, model = switchable
    model.down = LanguageModelError
    obs = await svc.observe("Erin likes tea", idempotency_key="m1")
    assert obs.pending and "the language model failed" in (obs.extraction_error or "")
    final = await svc.complete_extraction(obs.observation_id)
    assert not final.pending and final.extraction_error
    assert await svc.graph.extraction_state(obs.observation_id) == "failed"
    assert await svc.pending_extractions() == []  # not retried forever


async def test_complete_extraction_refuses_an_unknown_observation(
    switchable: tuple[MemoryService, SwitchableModel],
) -> None:
    svc, _ = switchable
    with pytest.raises(ValueError, match="observation_id: no observation"):
        await svc.complete_extraction("obs-0123456789abcdef0123456789abcdef")
    with pytest.raises(ValueError, match="observation_id"):
        await svc.complete_extraction("not an id; MATCH (n) DETACH DELETE n")


async def test_inline_extraction_leaves_nothing_pending(service: MemoryService) -> None:
    result = await service.observe("Carol lives in Rome")
    assert not result.pending and result.extraction_error is None
    assert [s.sentence() for s in result.statements] == ["Carol lives in Rome"]
    assert await service.graph.extraction_state(result.observation_id) == "done"
    assert (await service.stats())["extractions_pending"] == 0


async def test_deferred_extraction_reads_dates_from_the_day_it_was_said(
    service_settings: Settings, embedder: Embedder, unique_name: str
) -> None:
    # The extraction runs "nine days later" (the offline model's clock), the observation was made today.
    later = date.today() + timedelta(days=9)
    settings = service_settings.model_copy(update={"extraction_grace": 0.0})
    model = SwitchableModel(settings, OfflineLanguageModel(settings, today=lambda: later))
    svc = await build_memory_service(settings, model, embedder, vector_schema=unique_name)
    try:
        obs = await svc.observe("Yesterday I met Bob", source="alice")
        assert obs.pending
        model.down = None
        [met] = (await svc.complete_extraction(obs.observation_id)).statements
        [kept] = await svc.graph.get_observations([obs.observation_id])
        said_day = datetime.fromtimestamp(kept.created_at / 1000).date()
        assert (met.subject, met.object, met.tense) == ("alice", "Bob", "past")
        assert met.valid_at == (said_day - timedelta(days=1)).isoformat()  # not the day before `later`

        # Inline extraction reads them from the same day: the observation's own time.
        flight = await svc.observe("Tomorrow I fly to Oslo", source="alice")
        [inline] = flight.statements
        [said] = await svc.graph.get_observations([flight.observation_id])
        said_day = datetime.fromtimestamp(said.created_at / 1000).date()
        assert inline.valid_at == (said_day + timedelta(days=1)).isoformat()
    finally:
        await svc.clear()
        await svc.close()


@pytest.mark.parametrize("said_at", [-1, True, 1.5, "2026-11-23", 10**17])
async def test_a_bad_said_at_is_refused_before_any_call(said_at: object) -> None:
    model = OfflineLanguageModel(Settings())
    with pytest.raises(ValueError, match="said_at: must be epoch milliseconds"):
        await model.extract_observation("Yesterday I met Bob", "alice", said_at)  # type: ignore[arg-type]
    assert model.usage()["calls"] == 0


async def test_observe_with_defer_extraction_returns_pending_and_the_worker_extracts_once(
    switchable: tuple[MemoryService, SwitchableModel],
) -> None:
    svc, model = switchable
    model.down = None  # a model answers, yet the caller asked not to wait for it
    result = await svc.observe("Dana works at Initech", source="alice", idempotency_key="d1", defer_extraction=True)
    assert result.created and result.pending and result.statements == [] and result.extraction_error is None
    assert model.extractions == 0  # no model call inline
    # A retry under the same key, deferred too, neither duplicates nor extracts.
    again = await svc.observe("Dana works at Initech", source="alice", idempotency_key="d1", defer_extraction=True)
    assert (again.observation_id, again.created, again.pending) == (result.observation_id, False, True)
    assert model.extractions == 0
    [waiting] = await svc.pending_extractions()
    assert waiting.id == result.observation_id
    done = await svc.complete_extraction(result.observation_id)
    assert done.statements and not done.pending and model.extractions == 1
    again = await svc.complete_extraction(result.observation_id)  # the worker racing itself: nothing twice
    assert {s.id for s in again.statements} == {s.id for s in done.statements} and model.extractions == 1
    assert await svc.pending_extractions() == []


@pytest.mark.parametrize("defer", ["yes", 1, None])
async def test_a_defer_extraction_that_is_not_a_bool_is_refused(service: MemoryService, defer: object) -> None:
    with pytest.raises(InvalidInput, match="defer_extraction"):
        await service.observe("Dana works at Initech", defer_extraction=defer)  # type: ignore[arg-type]
