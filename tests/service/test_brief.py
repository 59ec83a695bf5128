"""``brief`` on the real embedded databases: its reads (changes since, retractions, use counts, spaces) and
its refusals."""

from __future__ import annotations

import time

import pytest

from mnemonet.model.errors import InvalidInput, NotFound
from mnemonet.service import MemoryService, SpacedMemory


async def test_changes_since_a_time_about_a_subject_and_for_the_team(service: MemoryService) -> None:
    morning = await service.claim("user prefers morning meetings", source="user", idempotency_key="m1")
    start = int(time.time() * 1000)
    afternoon = await service.claim("user prefers afternoon meetings instead of morning meetings", source="user",
                                    idempotency_key="m2")
    tea = await service.claim("Dana likes tea", source="bob", idempotency_key="t1")
    assert afternoon.supersedes == [morning.statement_id]
    taken = await service.retract(tea.statement_id, "bob meant Dan", source="bob")

    about = await service.brief("user", since=start)
    assert [f.ids for f in about.facts] == [[afternoon.statement_id]] and about.facts[0].new
    assert [(c.kind, c.ids) for c in about.changes] == [("superseded", [morning.statement_id, afternoon.statement_id])]
    team = await service.brief(since=start)
    assert [(c.kind, c.ids) for c in team.changes] == [
        ("retracted", [tea.statement_id, taken.retraction_id]),
        ("superseded", [morning.statement_id, afternoon.statement_id])]
    assert "taken back: Dana likes tea" in team.text and "bob meant Dan" in team.text
    assert "Dana" not in {f.subject for f in team.facts}
    later = await service.brief(since=int(time.time() * 1000) + 60_000)
    assert later.changes == [] and not any(f.new for f in later.facts)

    # Retracting the correction brings the earlier preference back, as it does in the answers.
    await service.retract(afternoon.statement_id, "said by mistake", source="user")
    again = await service.brief("user", since=start)
    assert [f.ids for f in again.facts] == [[morning.statement_id]]
    assert [c.kind for c in again.changes] == ["retracted"]


async def test_the_most_used_concepts_count_current_statements_and_searches(service: MemoryService) -> None:
    for text in ("Dana likes tea", "Dana works at Acme", "Sam likes tea"):
        await service.observe(text, source="user")
    await service.indexer.drained()  # indexed behind the writes (index_in_background)
    for _ in range(3):
        hits = await service.search("Dana", kinds=["concept"])
    assert hits[0].text == "Dana"
    await service.usage.flush()
    used = {c.name: c for c in (await service.brief()).concepts}
    assert (used["Dana"].statements, used["tea"].statements, used["Acme"].statements) == (2, 2, 1)
    assert used["Dana"].searches == 3 and used["Sam"].searches == 0
    assert list(used)[:2] == ["tea", "Dana"]  # most statements first, then the newest


async def test_a_brief_reads_its_own_space_only(spaced: SpacedMemory) -> None:
    await spaced.claim("Dana likes tea", source="user", space="alpha")
    await spaced.claim("Dana likes coffee", source="user", space="beta")
    alpha = await spaced.brief("Dana", space="alpha")
    assert [f.sentence for f in alpha.facts] == ["Dana likes tea"]
    with pytest.raises(NotFound):
        await spaced.brief(space="gamma")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"budget": 99}, "budget: must be an integer from 100 to 8000"),
    ({"budget": 8001}, "budget: must be an integer from 100 to 8000"),
    ({"budget": True}, "budget: must be an integer"),
    ({"since": -1}, "since: must be a non-negative epoch-ms integer"),
    ({"since": 1.5}, "since: must be a non-negative epoch-ms integer"),
    ({"subject": "  "}, "subject: must not be empty"),
    ({"subject": "x" * 201}, "subject: longer than 200 characters"),
])
async def test_bad_arguments_are_refused_by_name(service: MemoryService, kwargs: dict[str, object],
                                                 message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await service.brief(**kwargs)  # type: ignore[arg-type]
