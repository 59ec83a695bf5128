"""A retried claim is a no-op (issue 31 pass, beside row 13).

Seen: a claim retried under its idempotency key found its own first write as its basis and was refused
("a statement cannot refer to itself").
"""

from __future__ import annotations

from mnemonet.service import MemoryService


async def test_a_retried_claim_returns_its_first_write(service: MemoryService) -> None:
    first = await service.claim("Carol likes coffee", source="mallory", idempotency_key="c-1")
    retry = await service.claim("Carol likes coffee", source="mallory", idempotency_key="c-1")
    assert first.created and (retry.statement_id, retry.created) == (first.statement_id, False)
