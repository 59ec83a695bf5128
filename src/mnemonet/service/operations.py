"""Operations: the memory's own state, for operators rather than for what it remembers.

``health`` (one real round trip to each database), ``stats`` (counts, the
language-model calls by purpose, the backlog of work not done yet), the list
of revoked client tokens and the audit log of clients' writes and admin calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import new_id
from mnemonet.model.records import (
    CONSOLIDATION_SOURCE,
    INFERENCE_SOURCE,
    VALIDATION_SOURCE,
    check_id,
    check_name,
)
from mnemonet.model.spaces import check_space
from mnemonet.model.views import AuditView
from mnemonet.service.common import MAX_LIMIT, check_limit, now_ms, worker_spec
from mnemonet.service.context import ServiceContext


class Operations:
    """Health, stats, token revocations and the audit log (``MemoryService.health``, ``stats``,
    ``revoke_token``, ``revoked_tokens``, ``record_audit``, ``audit_log``).

    ``extraction_infers``: whether an observe now infers the claims in its extraction call (``Ingest``).
    """

    def __init__(self, ctx: ServiceContext, extraction_infers: Callable[[], bool]) -> None:
        self._ctx = ctx
        self._extraction_infers = extraction_infers

    async def health(self, timeout: float) -> dict[str, dict[str, Any]]:
        """Each database's state from one real round trip: ``ok`` (with its time) or ``failing`` (with why)."""
        checks = {"graph": self._ctx.graph.ping, "vectors": self._ctx.vectors.ping}
        results = await asyncio.gather(*(_round_trip(check, timeout) for check in checks.values()))
        return dict(zip(checks, results, strict=True))

    async def stats(self) -> dict[str, Any]:
        """Counts of what memory holds, its backlog, and the language-model and embedder in use."""
        ctx = self._ctx
        backlog = await self._backlog()
        return {
            "graph": await ctx.graph.counts(),
            "extractions_pending": backlog["extraction"],
            "backlog": backlog,
            "vectors": await ctx.vectors.count(),
            "vector_index_failures": ctx.indexer.failures,
            # Rows this node embedded that another store node had written meanwhile (work done twice), and
            # rows of dead store nodes it took over from the shared index queue.
            "vector_index_repeats": ctx.indexer.repeats,
            "vector_index_taken_over": ctx.indexer.taken_over,
            "vector_reads_unsettled": ctx.indexer.reads_unsettled,
            "llm_provider": ctx.llm.name,
            "llm_calls": dict(ctx.llm_calls),
            # Whether an observe now infers the claims in its extraction call (infer_with_extraction).
            "extraction_infers": self._extraction_infers(),
            "llm_usage": ctx.llm.usage(),
            "embedder": ctx.embedder.model,
        }

    async def _backlog(self) -> dict[str, int]:
        """Work not done yet in this space: rows waiting for their vectors (with the shared index queue, every
        store node's), and (counted up to ``MAX_LIMIT`` each) observations waiting for extraction or inference,
        statements for validation, concepts due a summary. All zero means the memory has settled (the CLI's
        ``/settle`` waits for it); a worker writes its results and its done-marker together, so no item leaves
        one count before it shows in the next."""
        graph, settings = self._ctx.graph, self._ctx.settings
        return {
            "vectors": await self._ctx.indexer.pending(),  # written, not indexed yet (every store node's)
            "extraction": await graph.count_pending_extractions(),
            "inference": len(await graph.pending_observations(worker_spec(INFERENCE_SOURCE), MAX_LIMIT)),
            "validation": len(await graph.pending_statements(worker_spec(VALIDATION_SOURCE), MAX_LIMIT)),
            "consolidation": len(await graph.consolidation_candidates(
                worker_spec(CONSOLIDATION_SOURCE), settings.consolidation_min_new_statements, MAX_LIMIT)),
        }

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Admin only: record a client token as revoked (nodes read the list back); False if it was already."""
        return await self._ctx.graph.revoke_token(token_id, by)

    async def revoked_tokens(self) -> list[str]:
        """Ids of revoked client tokens, newest first (at most ``token_revocations_max``)."""
        return await self._ctx.graph.revoked_tokens(self._ctx.settings.token_revocations_max)

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str,
                           spaces: list[str] | None = None) -> None:
        """Append an audit record of a client's write or admin call (the node that served it writes it), filed
        under the ``spaces`` the call touched (none: only readers of every space see it)."""
        limit = self._ctx.settings.audit_detail_max_chars
        if not isinstance(detail, str) or len(detail) > limit:
            raise InvalidInput(f"detail: must be a string of at most {limit} characters")
        record = {
            "id": new_id("audit"), "at": now_ms(), "who": check_name(who, "who"), "method": check_id(method, "method"),
            "node": check_id(node, "node"), "outcome": check_id(outcome, "outcome"), "detail": detail,
            "spaces": [check_space(space) for space in spaces or []],
        }
        await self._ctx.graph.record_audit(record)

    async def audit_log(self, limit: int = 50, spaces: list[str] | None = None) -> list[AuditView]:
        """Admin only: audit records, newest first; with ``spaces``, only those filed under some of them and
        under no other."""
        wanted = None if spaces is None else [check_space(space) for space in spaces]
        return await self._ctx.graph.audit_log(check_limit(limit), wanted)


async def _round_trip(check: Callable[[], Awaitable[None]], timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            await check()
    except TimeoutError:
        return {"status": "failing", "error": f"no answer within {timeout}s"}
    except Exception as exc:  # whatever broke, /health reports it rather than failing itself
        return {"status": "failing", "error": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "ms": round((time.monotonic() - started) * 1000, 1)}
