"""``run_node.py reembed``: re-embed every stored text with the configured embedder, batch by batch, with progress.

How an index switches embedding model or dimension: the store refuses to
mix them and names this command. Stop the store nodes that use the index
first; writes arriving during the run are picked up before the switch.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from mnemonet.settings import Settings, flag_type, load_settings

# Settings that decide which index is re-embedded and with which embedder.
FLAGS = (
    "data_dir", "database_url", "vector_schema", "embed", "embed_base_url", "embed_model", "embed_dimension",
    "embed_api_key", "embed_batch_size", "vector_batch_size", "log_level",
)


def build_parser() -> argparse.ArgumentParser:
    """Flags of the reembed command; unset flags fall back to MNEMONET_* variables, then defaults."""
    parser = argparse.ArgumentParser(
        prog="run_node.py reembed",
        description="Re-embed every stored text with the configured embedder (model and dimension may change).",
        argument_default=argparse.SUPPRESS,
    )
    for name in FLAGS:
        field = Settings.model_fields[name]
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=flag_type(name),
                            help=f"{field.description} (env MNEMONET_{name.upper()})")
    return parser


async def run(settings: Settings, schema: str, out: TextIO) -> int:
    """Re-embed the index in ``schema``; progress lines go to ``out``. Returns the rows re-embedded."""
    from mnemonet.embed import make_embedder
    from mnemonet.store.vector_reembed import reembed
    from mnemonet.store.vectors import VectorStore

    embedder = make_embedder(settings)
    store = await VectorStore.open(settings, schema=schema)
    try:
        before = f"{store.model} ({store.dimension}-d)" if store.model else "empty index"
        print(f"re-embedding schema {schema!r}: {before} -> {embedder.model} ({embedder.dimension}-d)", file=out)

        def progress(done: int, total: int) -> None:
            print(f"  {done}/{total} rows", file=out, flush=True)

        count = await reembed(store, embedder, progress)
    finally:
        await store.close()
    print(f"done: {count} rows re-embedded with {embedder.model}", file=out)
    return count


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Entry point of ``run_node.py reembed``; returns the process exit code."""
    args: dict[str, Any] = vars(build_parser().parse_args(argv))
    try:
        settings = load_settings(**args)
        asyncio.run(run(settings, settings.vector_schema, out))
    except (ValueError, RuntimeError, OSError) as exc:  # bad settings, busy or unreachable index: a message
        print(f"reembed failed: {exc}", file=sys.stderr)
        return 1
    return 0
