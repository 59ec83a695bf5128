"""Sharing one memory space into another, on the real embedded databases: read-only, cited, not transitive."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mnemonet.model.errors import InvalidInput, NotFound
from mnemonet.service import SpacedMemory

QUESTION = "where does Dana work?"


async def test_a_shared_space_is_searched_and_answered_from_with_its_name(spaced: SpacedMemory) -> None:
    await spaced.observe("Dana works at Globex", "alice", space="beta")
    await spaced.observe("I prefer tea", "bob", space="alpha")
    assert not any("Globex" in h.text for h in await spaced.search(QUESTION, space="alpha"))

    view = await spaced.share_space("alpha", "beta", by="ops")
    assert view.name == "alpha" and view.reads == ["beta"]
    assert {s.name: s.reads for s in await spaced.spaces()} == {"default": [], "alpha": ["beta"], "beta": []}

    hits = await spaced.search(QUESTION, space="alpha")
    shared = [h for h in hits if "Globex" in h.text]
    assert shared and all(h.space == "beta" for h in shared)
    assert all(h.space is None for h in hits if "tea" in h.text)  # alpha's own hits carry no space

    answer = await spaced.remember(QUESTION, space="alpha")
    lead, _, evidence = answer.text.partition("\n")
    assert "Globex" in lead
    assert "in space beta" in evidence  # the answer cites where the fact came from
    assert any(s.space == "beta" for s in answer.recall.statements)

    # Read-only: beta does not read alpha, and nothing alpha wrote is in beta.
    assert not any("tea" in h.text for h in await spaced.search("what does bob prefer?", space="beta"))
    assert [o.text for o in await spaced.get_recent_observations(space="beta")] == ["Dana works at Globex"]

    await spaced.unshare_space("alpha", "beta", by="ops")
    assert not any("Globex" in h.text for h in await spaced.search(QUESTION, space="alpha"))
    assert "Globex" not in (await spaced.remember(QUESTION, space="alpha")).text


async def test_sharing_is_not_transitive_and_a_deleted_space_is_unshared(spaced: SpacedMemory) -> None:
    await spaced.create_space("gamma", by="ops")
    await spaced.observe("Dana works at Globex", "alice", space="gamma")
    await spaced.share_space("beta", "gamma", by="ops")
    await spaced.share_space("alpha", "beta", by="ops")
    assert any("Globex" in h.text for h in await spaced.search(QUESTION, space="beta"))
    assert not any("Globex" in h.text for h in await spaced.search(QUESTION, space="alpha"))  # not through beta

    assert await spaced.delete_space("gamma", by="ops")
    assert {s.name: s.reads for s in await spaced.spaces()}["beta"] == []
    assert await spaced.search(QUESTION, space="beta") == []


async def test_bad_shares_are_refused_and_change_nothing(spaced: SpacedMemory) -> None:
    with pytest.raises(InvalidInput, match="reads"):
        await spaced.share_space("alpha", "alpha", by="ops")
    with pytest.raises(NotFound, match="gamma"):
        await spaced.share_space("alpha", "gamma", by="ops")
    with pytest.raises(InvalidInput, match="reads"):
        await spaced.share_space("alpha", "Not A Space", by="ops")
    assert all(s.reads == [] for s in await spaced.spaces())
    twice = [await spaced.share_space("alpha", "beta", by="ops") for _ in range(2)]
    assert twice[0] == twice[1] and twice[1].reads == ["beta"]  # idempotent
    assert (await spaced.unshare_space("alpha", "default", by="ops")).reads == ["beta"]  # not shared: no change


async def test_which_spaces_are_shared_is_read_while_the_space_is_searched(
    spaced: SpacedMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    await spaced.observe("Dana works at Globex", "alice", space="beta")
    await spaced.share_space("alpha", "beta", by="ops")
    alpha = await spaced.memory("alpha")
    reading = asyncio.Event()
    search = alpha.retriever.search
    shared = alpha.shared_spaces
    assert shared is not None

    async def once_the_shares_are_read(*args: Any, **kwargs: Any) -> Any:
        await asyncio.wait_for(reading.wait(), 10)  # times out unless they are read meanwhile
        return await search(*args, **kwargs)

    async def reading_shares() -> Any:
        reading.set()
        return await shared()

    monkeypatch.setattr(alpha.retriever, "search", once_the_shares_are_read)
    monkeypatch.setattr(alpha, "shared_spaces", reading_shares)
    hits = await spaced.search(QUESTION, space="alpha")
    assert any("Globex" in h.text for h in hits)
    reading.clear()
    assert "Globex" in (await spaced.remember(QUESTION, space="alpha")).text
