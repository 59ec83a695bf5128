"""``run_node.py`` / ``mnemonet``: run one peer node until SIGINT/SIGTERM, then leave gracefully."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemonet.settings import Settings, flag_type, load_settings
from mnemonet.store.datadir import DataDirInUse, DataDirLock, uses_embedded_servers

log = logging.getLogger("mnemonet.node")

# Settings exposed as flags besides the main ones; each flag's help is the field's description.
NETWORK_FLAGS = (
    "node_id", "max_neighbours", "max_inbound_links", "link_maintenance_interval", "link_connect_timeout",
    "gossip_interval", "gossip_fanout", "gossip_retransmit_mult", "gossip_max_piggyback", "probe_interval",
    "probe_timeout", "indirect_probes", "suspicion_timeout", "push_pull_interval", "dead_member_reap",
    "control_timeout", "request_timeout", "rpc_attempts", "max_concurrent_requests", "max_envelope_bytes",
    "max_message_age", "replay_cache_size", "event_ttl", "event_dedup_size", "rejoin_backoff_initial",
    "rejoin_backoff_max", "shutdown_timeout",
)
WORKER_FLAGS = (
    "worker_poll_interval", "worker_fetch_limit", "worker_batch_size", "worker_concurrency",
    "validation_predicates_file", "validation_candidate_limit", "validation_search_k",
    "consolidation_min_new_statements", "consolidation_quiet_period", "consolidation_max_interval",
)
MAIN_FLAGS = ("capabilities", "host", "port", "advertise_url", "bootstrap", "cluster_key", "cluster_key_file",
              "data_dir", "log_level")


def _help(name: str) -> str:
    field = Settings.model_fields[name]
    return f"{field.description} (default: {field.default!r}; env MNEMONET_{name.upper()})"


def build_parser() -> argparse.ArgumentParser:
    """Flags for every main and network setting; unset flags fall back to the environment, then defaults."""
    parser = argparse.ArgumentParser(
        prog="run_node.py",
        description="Run one mnemonet peer node. Flags override MNEMONET_* environment variables. "
        "`run_node.py demo [flags]` instead starts a whole local network in one process with the CLI attached; "
        "`run_node.py mcp --bootstrap URL` serves the memory to an MCP client over stdio; "
        "`run_node.py token create NAME --scopes read,write` prints a client token.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    for name in MAIN_FLAGS:
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=flag_type(name), help=_help(name))
    parser.add_argument("--insecure", dest="insecure", action="store_true", help=_help("insecure"))
    parser.add_argument("--ui", dest="ui", action="store_true", help=_help("ui"))
    network = parser.add_argument_group("network tuning")
    for name in NETWORK_FLAGS:
        network.add_argument("--" + name.replace("_", "-"), dest=name, type=flag_type(name), help=_help(name))
    workers = parser.add_argument_group("worker agents")
    for name in WORKER_FLAGS:
        workers.add_argument("--" + name.replace("_", "-"), dest=name, type=flag_type(name), help=_help(name))
    parser.add_argument("--script", dest="script", type=Path,
                        help="With the cli capability (and in the demo): run the CLI commands in this file "
                        "('-' for stdin) instead of prompting, then leave. Stdin that is not a terminal is "
                        "read the same way.")
    return parser


def parse_args(argv: Sequence[str] | None) -> tuple[Settings, Path | None]:
    """The settings ``argv`` gives, and the CLI script it names (if any)."""
    parser = build_parser()
    args: dict[str, Any] = vars(parser.parse_args(argv))
    script = args.pop("script", None)
    if "cluster_key" in args:
        log.warning("--cluster-key is visible to every user of this machine (ps, /proc); "
                    "prefer --cluster-key-file PATH or MNEMONET_CLUSTER_KEY")
    if script is not None and str(script) != "-" and not script.is_file():
        parser.error(f"--script: no such file {str(script)!r}")
    return load_settings(**args), script


def settings_from_args(argv: Sequence[str] | None) -> Settings:
    """Parse ``argv`` onto the one settings object."""
    return parse_args(argv)[0]


def _capabilities(settings: Settings) -> set[str]:
    return {c.strip() for c in settings.capabilities.split(",") if c.strip()}


async def run(settings: Settings, script: Path | None = None, data_dir_lock: DataDirLock | None = None) -> None:
    """Start the node, wait for SIGINT/SIGTERM (or the CLI's /quit), then stop it (sending ``leave``)."""
    from mnemonet.node.peer_node import PeerNode

    node = PeerNode(settings, _capabilities(settings), data_dir_lock=data_dir_lock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await node.start()
    log.info("node %s ready at %s", node.node_id, node.url, extra={"node_id": node.node_id, "url": node.url})
    try:
        if "cli" in node.capabilities:
            from mnemonet.cli.app import attach_cli

            await attach_cli(node, stop, script)
        else:
            await stop.wait()
    finally:
        log.info("node %s stopping", node.node_id, extra={"node_id": node.node_id})
        await node.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    from mnemonet.node.logs import setup_logging

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:
        from mnemonet.node.demo import main as demo_main

        return demo_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from mnemonet.mcp.cli import main as mcp_main

        return mcp_main(argv[1:])
    if argv[:1] == ["token"]:
        from mnemonet.node.token_command import main as token_main

        return token_main(argv[1:])
    if argv[:1] == ["import"]:
        from mnemonet.node.import_command import main as import_main

        return import_main(argv[1:])
    if argv[:1] == ["reembed"]:
        from mnemonet.node.reembed_command import main as reembed_main

        return reembed_main(argv[1:])
    settings, script = parse_args(argv)
    setup_logging(settings.log_level)
    if "cli" in settings.capabilities.split(",") and script is None and sys.stdin.isatty():
        from mnemonet.cli.app import log_to_file

        log_to_file(settings.data_dir / "logs" / "cli-node.log")  # keep log lines out of the prompt
    lock = None
    if "store" in _capabilities(settings) and uses_embedded_servers(settings):
        # Before the heavy imports and any server: a second node on this directory is refused at once.
        lock = DataDirLock(settings.data_dir)
        try:
            lock.acquire()
        except DataDirInUse as exc:
            log.error(str(exc))
            return 3
    try:
        asyncio.run(run(settings, script, lock))
    except DataDirInUse as exc:
        log.error(str(exc))
        return 3
    except ValueError as exc:  # bad settings, refused bind: a message, not a traceback
        log.error("%s", exc)
        return 2
    except OSError as exc:
        log.error("cannot serve on %s:%s: %s", settings.host, settings.port, exc)
        return 1
    finally:
        if lock is not None:
            lock.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
