"""Caller-made ids: random for fresh writes, derived for retries of the same idempotency key."""

from __future__ import annotations

import uuid

from mnemonet.model.spaces import DEFAULT_SPACE

_NAMESPACE = uuid.UUID("6c1d3f0e-5a7b-4c1e-9d2a-6e6d6f6e6574")


OBSERVATION_PREFIX = "obs"


def is_observation_id(item_id: str) -> bool:
    """Whether ``item_id`` names an observation (every id starts with its kind's prefix)."""
    return item_id.startswith(f"{OBSERVATION_PREFIX}-")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def derived_id(prefix: str, *parts: str) -> str:
    """The same parts always give the same id, so a retried write lands on the same node."""
    return f"{prefix}-{uuid.uuid5(_NAMESPACE, chr(31).join(parts)).hex}"


def short_id(item_id: str) -> str:
    """``st-1a2b3c4d`` for ``st-1a2b3c4d...``: enough to tell items apart on screen or in an answer."""
    prefix, sep, rest = item_id.partition("-")
    return f"{prefix}-{rest[:8]}" if sep and len(rest) > 8 else item_id


def keyed_id(prefix: str, key: str, writer: str = "", space: str = DEFAULT_SPACE) -> str:
    """The id of the item written under idempotency ``key`` by ``writer`` in ``space``: the one derivation the
    service (``observe``, ``claim``) and the clients that read their writes back by key share.

    A key is scoped by its writer, the name of the client token that made the write (so another token's
    write under the same key is another item, and a conflict names only the writer's own), and by the
    space outside the default one (an id names one item on the whole network). ``writer`` is empty for
    the node's own callers (a keyless node's, a program's own ``MemoryService``): their ids are those of
    keys before they were scoped. The writer's part is marked, so no space (``[a-z][a-z0-9_]*``) or
    token name (no control character) can stand in for another's.
    """
    scope = () if space == DEFAULT_SPACE else (space,)
    by = (f"by:{writer}",) if writer else ()
    return derived_id(prefix, *scope, *by, key)


def observation_id(idempotency_key: str, space: str = DEFAULT_SPACE, writer: str = "") -> str:
    """The id ``observe`` gives the observation ``writer`` wrote under ``idempotency_key`` in ``space``, so a
    client can ``load`` what it wrote by key alone (``HttpMemoryClient.writer`` is its token's name)."""
    return keyed_id(OBSERVATION_PREFIX, idempotency_key, writer, space)


def retraction_id(target_id: str) -> str:
    """The id of the one retraction of ``target_id`` (``service/erasure.py``): ``load`` finds it once retracted."""
    return derived_id("rtr", target_id)
