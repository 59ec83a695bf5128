"""``load`` takes the short ids the CLI prints (``obs-1a2b3c4d``), on the real embedded databases."""

from __future__ import annotations

import itertools

import pytest

from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import keyed_id, short_id
from mnemonet.service import MemoryService


def _keys_sharing_a_prefix(chars: int) -> tuple[str, str, str]:
    """Two idempotency keys whose observation ids start with the same ``chars`` hex digits, and that prefix."""
    seen: dict[str, str] = {}
    for n in itertools.count():
        key = f"k{n}"
        prefix = keyed_id("obs", key, "user")[: len("obs-") + chars]  # observed as the default source
        if prefix in seen:
            return seen[prefix], key, prefix
        seen[prefix] = key
    raise AssertionError("unreachable")


async def test_a_short_id_loads_its_item(service: MemoryService) -> None:
    written = await service.observe("Dana moved the standup to 10am", idempotency_key="standup")
    items = await service.load([short_id(written.observation_id)])
    assert [(i["kind"], i["id"]) for i in items] == [("observation", written.observation_id)]
    assert items[0]["text"] == "Dana moved the standup to 10am"


async def test_an_ambiguous_short_id_is_refused_naming_the_candidates(service: MemoryService) -> None:
    min_chars = service.settings.short_id_min_chars
    first, second, prefix = _keys_sharing_a_prefix(min_chars)
    a = await service.observe("the build uses make", idempotency_key=first)
    b = await service.observe("the tests use pytest", idempotency_key=second)
    with pytest.raises(InvalidInput) as refused:
        await service.load([prefix])
    assert str(refused.value) == (
        f"ids: {prefix!r} is ambiguous, it starts {', '.join(sorted([a.observation_id, b.observation_id]))}; "
        "give more of the id")
    # One more digit than they share tells them apart.
    assert [i["id"] for i in await service.load([a.observation_id[: len(prefix) + 1]])] == [a.observation_id]


async def test_too_short_or_unknown_ids_load_nothing(service: MemoryService) -> None:
    written = await service.observe("the office is closed on Friday")
    too_short = written.observation_id[: len("obs-") + service.settings.short_id_min_chars - 1]
    assert await service.load([too_short, "obs-00000000", "st-ffffffff"]) == []
