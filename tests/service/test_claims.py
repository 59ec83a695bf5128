"""``claim`` with the design's vocabulary: supersession in words, basis by shared concept, contradictions
between any two statements (superseded ones included), and the speaking source reaching the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mnemonet.embed.base import Embedder
from mnemonet.llm import make_language_model
from mnemonet.llm.base import Extraction, ParsedClaim
from mnemonet.llm.claims import parse_canonical_claim, split_supersession
from mnemonet.model.errors import InvalidInput
from mnemonet.service import MemoryService, build_memory_service
from mnemonet.settings import Settings


async def test_superseding_in_words_replaces_the_matching_current_statement(service: MemoryService) -> None:
    morning = await service.claim("user prefers morning meetings", source="user", idempotency_key="c1")
    lunch = await service.claim("user likes lunch meetings", source="user", idempotency_key="c2")
    result = await service.claim("user prefers afternoon meetings, superseding the morning claim", source="user",
                                 idempotency_key="c3")
    assert result.statement is not None and result.statement.sentence() == "user prefers afternoon meetings"
    assert result.supersedes == [morning.statement_id]
    [old] = await service.graph.get_statements([morning.statement_id])
    assert old.superseded_by == [result.statement_id]
    [other] = await service.graph.get_statements([lunch.statement_id])
    assert other.superseded_by == []  # another predicate: untouched
    rows = await service.graph.read_query("MATCH ()-[r:SUPERSEDES]->() RETURN r.reason AS reason, r.source AS source")
    assert rows == [{"reason": "user: user prefers afternoon meetings, superseding the morning claim",
                     "source": "user"}]


async def test_instead_of_and_no_longer(service: MemoryService) -> None:
    paris = await service.claim("Bob lives in Paris", idempotency_key="b1")
    rome = await service.claim("Bob lives in Rome instead of Paris", idempotency_key="b2")
    assert rome.supersedes == [paris.statement_id]
    gone = await service.claim("Bob no longer lives in Rome", idempotency_key="b3")
    assert gone.statement is not None and gone.statement.negated and gone.statement.object == "Rome"
    assert gone.supersedes == [rome.statement_id]
    current = [s for s in await service.get_concept_statements("Bob") if not s.superseded_by]
    assert [s.sentence() for s in current] == ["Bob not lives in Rome"]


async def test_superseding_nothing_is_a_clear_error_and_writes_nothing(service: MemoryService) -> None:
    await service.claim("Carol likes tea", idempotency_key="t1")
    with pytest.raises(ValueError, match=r"nothing current about Carol likes matches 'coffee' to supersede"):
        await service.claim("Carol likes green tea instead of coffee", idempotency_key="t2")
    with pytest.raises(ValueError, match="nothing current about Dan lives in matches"):
        await service.claim("Dan no longer lives in Oslo", idempotency_key="t3")
    assert (await service.stats())["graph"]["Statement"] == 1


def test_split_supersession_keeps_a_stated_confidence_with_the_claim() -> None:
    said = split_supersession("user prefers afternoon meetings instead of morning meetings (confidence 0.8).")
    assert said is not None and said.kind == "instead_of"
    assert (said.claim, said.target) == ("user prefers afternoon meetings (confidence 0.8)", "morning meetings")
    assert split_supersession("Bob likes tea") is None


async def test_basis_only_from_hits_sharing_a_concept(service: MemoryService) -> None:
    meeting = await service.observe("Ann prefers morning meetings", source="ann")
    coffee = await service.observe("Ann drinks coffee every morning", source="ann")
    unrelated = await service.claim("Bob prefers coffee", idempotency_key="u1")
    # Search finds the coffee observation (shared concept "coffee"), never the meeting one.
    assert meeting.observation_id not in unrelated.derived_from
    assert set(unrelated.derived_from) <= {coffee.observation_id}
    nothing = await service.claim("Zed likes stamps", idempotency_key="u2")
    assert nothing.derived_from == []  # no hit shares a concept: no basis is a valid answer


async def test_contradicts_reaches_superseded_statements_with_clear_errors(service: MemoryService) -> None:
    morning = await service.claim("user prefers morning meetings", source="user", idempotency_key="m1")
    afternoon = await service.claim("user prefers afternoon meetings instead of morning meetings", source="user",
                                    idempotency_key="m2")
    assert afternoon.supersedes == [morning.statement_id]
    linked = await service.claim("user prefers afternoon meetings contradicts user prefers morning meetings",
                                 source="validator")
    assert set(linked.contradicts) == {morning.statement_id, afternoon.statement_id}  # the superseded side found
    with pytest.raises(ValueError, match=r"both sides are the same statement"):
        await service.claim("user prefers morning meetings contradicts user prefers morning meetings")


class RecordingModel:
    """The offline model, recording the source each call is made for."""

    def __init__(self, settings: Settings) -> None:
        self.inner = make_language_model(settings)
        self.sources: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        self.sources.append(("extract_observation", source))
        return await self.inner.extract_observation(text, source, said_at, infer)

    async def parse_claim(self, text: str, source: str) -> ParsedClaim:
        self.sources.append(("parse_claim", source))
        return await self.inner.parse_claim(text, source)


@pytest.fixture
async def recording(service_settings: Settings, embedder: Embedder, unique_name: str
                    ) -> AsyncIterator[tuple[MemoryService, RecordingModel]]:
    model = RecordingModel(service_settings)
    svc = await build_memory_service(service_settings, model, embedder, vector_schema=unique_name)
    yield svc, model
    await svc.close()


async def test_the_speaking_source_reaches_the_model_and_first_person_claims(
    recording: tuple[MemoryService, RecordingModel],
) -> None:
    svc, model = recording
    await svc.observe("Dana works at Initech", source="alice")
    result = await svc.claim("Erin likes tea", source="bob")
    assert model.sources == [("extract_observation", "alice"), ("parse_claim", "bob")]
    assert result.statement is not None and result.statement.source == "bob"


def test_a_canonical_first_person_claim_is_the_speakers() -> None:
    triple = parse_canonical_claim("I likes tea (confidence 0.8)", "bob")
    assert triple is not None and (triple.subject, triple.confidence) == ("bob", 0.8)
    assert parse_canonical_claim("me likes tea") is not None  # no speaker given: the default source
    assert parse_canonical_claim("me likes tea").subject == "user"  # type: ignore[union-attr]


async def test_a_referenced_claim_resolves_to_its_meaning_or_is_refused_naming_the_candidates(
    service: MemoryService,
) -> None:
    # Issue 32, seen case 7: the reference linked "user probably prefers tea", another statement entirely.
    await service.claim("user probably prefers tea", source="user", idempotency_key="t")
    await service.claim("quin likes opera", source="user", idempotency_key="q")
    with pytest.raises(InvalidInput, match=r"no statement in memory says 'ned likes tea'.*the closest: .*prefers tea"):
        await service.claim("the claim that ned likes tea contradicts the claim that quin likes opera", source="v")
    ned = await service.claim("ned loves tea", source="user", idempotency_key="n")  # likes, by the vocabulary
    linked = await service.claim("the claim that ned likes tea contradicts the claim that quin likes opera",
                                 source="v")
    assert ned.statement_id in linked.contradicts and len(linked.contradicts) == 2
    [tea] = [s for s in await service.get_recent_statements(20) if s.object == "tea" and s.subject == "user"]
    assert (tea.subject, tea.predicate, tea.confidence) == ("user", "prefers", 0.7)  # "probably" is confidence
