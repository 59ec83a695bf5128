"""Idempotency keys are scoped by the writing source (issue 31, row 13).

Seen: another token's write under the same key got 409 naming the first writer's observation id (and a
claim under it got the first writer's statement back as its own). A key names one source's write: a retry
by that source lands on it, the same key from another source is another write.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "p2p"))

from netsupport import client_token, node_factory

from mnemonet.model.idempotency import IdempotencyConflict
from mnemonet.model.ids import keyed_id
from mnemonet.service import MemoryService


async def test_a_key_names_one_source_s_write(service: MemoryService) -> None:
    first = await service.observe("Bob lives in Paris", source="alice", idempotency_key="req-2")
    assert first.observation_id == keyed_id("obs", "req-2", "alice")
    # Her own key with other text: a conflict naming her own item.
    with pytest.raises(IdempotencyConflict, match=first.observation_id):
        await service.observe("Bob lives in Rome", source="alice", idempotency_key="req-2")
    # Another source's same key: its own write, under its own id, nothing of alice's in the answer.
    other = await service.observe("Bob lives in Rome", source="mallory", idempotency_key="req-2")
    assert other.created and other.observation_id == keyed_id("obs", "req-2", "mallory") != first.observation_id
    assert first.observation_id not in other.model_dump_json()
    for text, source, result in (("Bob lives in Paris", "alice", first), ("Bob lives in Rome", "mallory", other)):
        again = await service.observe(text, source=source, idempotency_key="req-2")  # a true retry: a no-op
        assert (again.observation_id, again.created) == (result.observation_id, False)
    stored = {o.id: (o.text, o.source) for o in await service.get_recent_observations()}
    assert stored == {first.observation_id: ("Bob lives in Paris", "alice"),
                      other.observation_id: ("Bob lives in Rome", "mallory")}


async def test_a_claim_under_another_source_s_key_is_its_own(service: MemoryService) -> None:
    mine = await service.claim("Bob likes tea", source="alice", idempotency_key="c-1")
    theirs = await service.claim("Carol likes coffee", source="mallory", idempotency_key="c-1")
    assert theirs.created and theirs.statement_id == keyed_id("st", "c-1", "mallory") != mine.statement_id
    assert theirs.statement is not None and (theirs.statement.subject, theirs.statement.source) == ("Carol", "mallory")
    assert mine.statement_id not in theirs.model_dump_json() and "tea" not in theirs.model_dump_json()
    retry = await service.claim("Carol likes coffee", source="mallory", idempotency_key="c-1")
    assert (retry.statement_id, retry.created) == (theirs.statement_id, False)


async def test_another_token_s_write_under_the_same_key_is_written_not_refused(service: MemoryService) -> None:
    async with node_factory() as make:
        node = await make({"store"}, providers={"store": service})
        alice, bob = client_token("read,write", name="alice"), client_token("read,write", name="bob")
        async with httpx.AsyncClient() as http:
            async def observe(token: str, text: str) -> httpx.Response:
                return await http.post(f"{node.url}/v1/observe", json={"text": text, "idempotency_key": "k-1"},
                                       headers={"Authorization": f"Bearer {token}"})

            first = await observe(alice, "Dana works at Initech")
            other = await observe(bob, "Erin works at Globex")
            retry = await observe(bob, "Erin works at Globex")
            changed = await observe(bob, "Erin works at Hooli")
    assert first.status_code == other.status_code == retry.status_code == 200, other.text
    alice_id, bob_id = first.json()["result"]["observation_id"], other.json()["result"]["observation_id"]
    assert other.json()["result"]["created"] and bob_id != alice_id
    assert (retry.json()["result"]["observation_id"], retry.json()["result"]["created"]) == (bob_id, False)
    # Only the same source's key with other text is a conflict, and it names that source's own item.
    assert changed.status_code == 409 and bob_id in changed.text and alice_id not in changed.text
    assert sorted(o.text for o in await service.get_recent_observations()) == [
        "Dana works at Initech", "Erin works at Globex"]
