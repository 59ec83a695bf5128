"""``run_node.py demo``: a whole network in one process on local ports, with the CLI attached to the terminal.

Nodes: ``store`` (store, llm, embed; on ``settings.port``), one ``inference``,
``validation`` and ``consolidation`` node each, and the ``cli`` node, all
joined through the store node over real local sockets. The store node builds
its providers (language model, embedding model, embedded FalkorDB and
PostgreSQL in ``data_dir``) before the prompt appears, so the first command
is not slow. ``/quit``, end of input, Ctrl-C or SIGTERM stop every node
gracefully (leave, databases stopped, FalkorDB's append-only file rewritten);
the data stays in ``data_dir`` for the next start.

The network has a cluster key (the one given, else one kept in
``data_dir/cluster.key``, made on the first run and readable by its owner
only), so the demo is never a keyless node a web page could reach. It prints
a client token (read, write) and the dashboard URL carrying it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from mnemonet.cli.app import attach_cli, log_to_file, printer
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.tokens import create_token
from mnemonet.settings import Settings

STORE_CAPABILITIES = frozenset({"store", "llm", "embed"})
WORKER_NODES = ("inference", "validation", "consolidation")
KEY_FILE = "cluster.key"
# The demo's client token: the name is the source of what it writes (as the CLI's default source).
DEMO_TOKEN_NAME = "user"
DEMO_TOKEN_SCOPES = ("read", "write")
# The person at the demo's console owns its data dir and cluster key, so its CLI acts with an admin token
# of its own: `/space NAME` makes a new space (an admin method, served only with such a token carried).
DEMO_OWNER_NAME = "owner"
DEMO_OWNER_SCOPES = ("read", "write", "admin")


def demo_cluster_key(data_dir: Path) -> str:
    """The key kept in ``data_dir``, made (owner-only) on the first run so tokens outlive a restart."""
    path = data_dir / KEY_FILE
    if path.is_file():
        key = path.read_text().strip()
        if key:
            return key
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    path.touch(mode=0o600)
    path.chmod(0o600)  # touch keeps an existing file's mode
    path.write_text(key + "\n")
    return key


class Progress:
    """Prints each start-up step as ``  what ... done (1.2s)``."""

    def __init__(self, write: Callable[[str], None], out: TextIO) -> None:
        self._write = write
        self._out = out

    @contextlib.asynccontextmanager
    async def step(self, what: str) -> AsyncIterator[None]:
        """Announce ``what`` before it runs, and how long it took after."""
        print(f"  {what} ...", end="", file=self._out, flush=True)
        started = time.monotonic()
        try:
            yield
        except BaseException:
            self._write(" failed")
            raise
        self._write(f" done ({time.monotonic() - started:.1f}s)")


def _node_settings(base: Settings, name: str, capabilities: frozenset[str], **update: Any) -> Settings:
    return base.model_copy(update={"node_id": name, "capabilities": ",".join(sorted(capabilities)), **update})


async def _start_store(base: Settings, progress: Progress, write: Callable[[str], None]) -> PeerNode:
    """The store node, serving, with every provider built."""
    store = PeerNode(_node_settings(base, "store", STORE_CAPABILITIES), STORE_CAPABILITIES)
    async with progress.step(f"starting the store node (store, llm, embed) on port {base.port or 'any'}"):
        await store.start()
    try:
        async with progress.step("loading the language model"):
            llm = await store.providers.get("llm")
        name = str(getattr(llm, "name", type(llm).__name__))
        hint = " (no ANTHROPIC_API_KEY set; set it to use Claude)" if name.startswith("offline") else ""
        write(f"  language model: {name}{hint}")
        async with progress.step("loading the embedding model"):
            embedder: Any = await store.providers.get("embed")
            await embedder.embed(["warm-up"], kind="query")  # loads the weights now, not at the first command
        async with progress.step(f"starting embedded FalkorDB and PostgreSQL in {base.data_dir}"):
            await store.providers.get("store")
    except BaseException:
        await store.stop()
        raise
    return store


async def run_demo(settings: Settings, stop: asyncio.Event, script: Path | None = None, *,
                   stdin: TextIO | None = None, out: TextIO | None = None) -> bool:
    """Start the network, run the CLI until it ends or ``stop`` is set, then stop every node; False when the
    CLI's script stopped at a failed command."""
    out = out or sys.stdout
    write = printer(out)
    progress = Progress(write, out)
    key = settings.cluster_key or demo_cluster_key(settings.data_dir)
    base = settings.model_copy(update={"cluster_key": key, "bootstrap": ""})
    write(f"mnemonet demo: a local network in one process; data in {base.data_dir.resolve()}")
    nodes: list[PeerNode] = []
    ok = True
    try:
        nodes.append(await _start_store(base, progress, write))
        store = nodes[0]
        if not stop.is_set():
            async with progress.step(f"starting {', '.join(WORKER_NODES)} and cli nodes"):
                for name in (*WORKER_NODES, "cli"):
                    node = PeerNode(_node_settings(base, name, frozenset({name}), port=0, bootstrap=store.url),
                                    {name})
                    nodes.append(node)
                    await node.start()
            token, _ = create_token(key, DEMO_TOKEN_NAME, DEMO_TOKEN_SCOPES, settings.token_ttl_default)
            write(f"  {len(nodes)} nodes up; store node at {store.url}")
            write(f"  dashboard: {store.url}/ui#key={token}")
            write(f"  client token ({DEMO_TOKEN_NAME!r}: {', '.join(DEMO_TOKEN_SCOPES)}): {token}")
            owner, _ = create_token(key, DEMO_OWNER_NAME, DEMO_OWNER_SCOPES, settings.token_ttl_default, spaces="*")
            ok = await attach_cli(nodes[-1], stop, script, stdin=stdin, out=out, credential=owner)
    finally:
        if nodes:
            async with progress.step("stopping the network (leave, databases stopped)"):
                for node in reversed(nodes):  # the store node last: the others still use it while leaving
                    await node.stop()
            write(f"stopped; data kept in {base.data_dir.resolve()}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    """``run_node.py demo [flags]``: the same flags as a node (``--capabilities`` is ignored)."""
    from mnemonet.node.cli_entry import parse_args, warn_unknown_environment
    from mnemonet.node.logs import setup_logging
    from mnemonet.store.embedded_extra import missing_embedded_servers

    settings, script = parse_args(argv)
    if (missing := missing_embedded_servers(settings)) is not None:
        print(f"error: {missing}", file=sys.stderr)
        return 1
    setup_logging(settings.log_level)
    warn_unknown_environment()
    log_file = settings.data_dir / "logs" / "demo.log"
    log_to_file(log_file)  # the terminal is the CLI's; the log goes to a file

    async def _run() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await run_demo(settings, stop, script)

    try:
        if not asyncio.run(_run()):
            return 1
    except (ValueError, OSError, RuntimeError) as exc:  # bad settings, busy port, a database that would not start
        print(f"error: {' '.join(str(exc).split())} (log: {log_file})", file=sys.stderr)
        return 1
    return 0
