"""Use counts of indexed items: how often a search returned each, and when last (the ``usage`` table)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore


async def add_uses(store: VectorStore, uses: Mapping[str, int], at: int) -> None:
    """Add ``uses`` (id -> searches that returned it) at time ``at`` (Unix ms), in one statement.

    Only for ids that still have a row: a use noted just before an erasure (a search under way when it
    ran) must not bring back a ``usage`` row keyed by an erased id. The rows are key-share locked, so an
    erasure deleting one waits for this write and then deletes its count too, or this write skips it.
    """
    if not uses:
        return
    q = quote_schema(store.schema)
    async with store.acquire() as conn:
        await conn.execute(
            f"""INSERT INTO {q}.usage AS u (id, uses, last_used_at)
                SELECT n.id, n.uses, $3::bigint
                FROM unnest($1::text[], $2::bigint[]) AS n(id, uses) JOIN {q}.embeddings e ON e.id = n.id
                FOR KEY SHARE OF e
                ON CONFLICT (id) DO UPDATE SET uses = u.uses + EXCLUDED.uses,
                                               last_used_at = greatest(u.last_used_at, EXCLUDED.last_used_at)""",
            list(uses), list(uses.values()), at,
        )


async def uses_of(store: VectorStore, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """(uses, last used at) of the ids that were ever returned by a search."""
    if not ids:
        return {}
    q = quote_schema(store.schema)
    async with store.acquire() as conn:
        rows = await conn.fetch(f"SELECT id, uses, last_used_at FROM {q}.usage WHERE id = ANY($1::text[])", list(ids))
    return {r["id"]: (int(r["uses"]), int(r["last_used_at"])) for r in rows}
