"""Numbered runs of observations read back by id: the versions of a store item, the turns of a chat.

Each is written under an idempotency key made of a name and a number from 1 without a gap, so its
observation id is known to the client (``model.ids.observation_id`` of the key and the client's token
name: keys are scoped by the token that writes them) and one ``load`` reads many of them, each with its
retraction if it has one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonet.model.ids import observation_id, retraction_id
from mnemonet.p2p.client import HttpMemoryClient

LOAD_MAX_IDS = 100  # the most ids one load takes (service MAX_LOAD_IDS)
LOAD_BATCH = LOAD_MAX_IDS // 2  # numbers read per load, each with its retraction
SEARCH_MAX_K = 500  # the most hits one search returns (service MAX_LIMIT)


@dataclass(frozen=True)
class Numbered:
    """One observation of a run: its number, what ``load`` gave, and whether it was retracted."""

    number: int
    observation: dict[str, Any]
    retracted: bool


async def load_run(client: HttpMemoryClient, key: Callable[[int], str], space: str) -> list[Numbered]:
    """Every observation ``client`` wrote under ``key(1)``, ``key(2)`` ... in ``space``, up to the first number
    missing."""
    found: list[Numbered] = []
    while True:
        numbers = range(len(found) + 1, len(found) + 1 + LOAD_BATCH)
        ids = {n: observation_id(key(n), space, client.writer) for n in numbers}
        loaded = {item["id"]: item for item in await client.load(
            [*ids.values(), *(retraction_id(i) for i in ids.values())], space=space)}
        for n, obs_id in ids.items():
            if obs_id not in loaded:
                return found
            found.append(Numbered(n, loaded[obs_id], retraction_id(obs_id) in loaded))


async def load_all(client: HttpMemoryClient, ids: list[str], space: str | None) -> list[dict[str, Any]]:
    """``load`` of any number of ids, ``LOAD_MAX_IDS`` a call."""
    out: list[dict[str, Any]] = []
    for start in range(0, len(ids), LOAD_MAX_IDS):
        out += await client.load(ids[start:start + LOAD_MAX_IDS], space=space)
    return out
