"""Caller-made ids: random for fresh writes, derived for retries of the same idempotency key."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

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


def keyed_id(prefix: str, key: str, source: str, scope: Sequence[str] = ()) -> str:
    """The id of a write under a caller's idempotency key: keys are scoped by the writing source (and by
    ``scope``, the memory space of a keyed write outside the default one), so a retry by the same source
    lands on its own item, and the same key from another source names another item instead of refusing
    it with the first writer's id."""
    return derived_id(prefix, *scope, source, key)


def short_id(item_id: str) -> str:
    """``st-1a2b3c4d`` for ``st-1a2b3c4d...``: enough to tell items apart on screen or in an answer."""
    prefix, sep, rest = item_id.partition("-")
    return f"{prefix}-{rest[:8]}" if sep and len(rest) > 8 else item_id


def observation_id(idempotency_key: str, space: str = "default") -> str:
    """The id ``observe`` gives the observation written under ``idempotency_key`` in ``space`` (the service
    derives it the same way: ``service/ingest.py``), so a client can ``load`` what it wrote by key alone."""
    scope = () if space == "default" else (space,)
    return derived_id(OBSERVATION_PREFIX, *scope, idempotency_key)


def retraction_id(target_id: str) -> str:
    """The id of the one retraction of ``target_id`` (``service/erasure.py``): ``load`` finds it once retracted."""
    return derived_id("rtr", target_id)
