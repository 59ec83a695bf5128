"""Use counts of indexed items: how often a search returned each, and when last (the ``usage`` table)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemonet.store.vector_types import quote_schema
from mnemonet.store.vectors import VectorStore


async def add_uses(store: VectorStore, uses: Mapping[str, int], at: int) -> None:
    """Add ``uses`` (id -> searches that returned it) at time ``at`` (Unix ms), in one statement."""
    if not uses:
        return
    q = quote_schema(store.schema)
    async with store.acquire() as conn:
        await conn.execute(
            f"""INSERT INTO {q}.usage AS u (id, uses, last_used_at)
                SELECT * FROM unnest($1::text[], $2::bigint[], array_fill($3::bigint, ARRAY[$4::int]))
                ON CONFLICT (id) DO UPDATE SET uses = u.uses + EXCLUDED.uses,
                                               last_used_at = greatest(u.last_used_at, EXCLUDED.last_used_at)""",
            list(uses), list(uses.values()), at, len(uses),
        )


async def uses_of(store: VectorStore, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """(uses, last used at) of the ids that were ever returned by a search."""
    if not ids:
        return {}
    q = quote_schema(store.schema)
    async with store.acquire() as conn:
        rows = await conn.fetch(f"SELECT id, uses, last_used_at FROM {q}.usage WHERE id = ANY($1::text[])", list(ids))
    return {r["id"]: (int(r["uses"]), int(r["last_used_at"])) for r in rows}
