"""``run_node.py`` / ``mnemonet``: run one peer node until SIGINT/SIGTERM, then leave gracefully."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from mnemonet.settings import Settings, load_settings

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
MAIN_FLAGS = ("capabilities", "host", "port", "advertise_url", "bootstrap", "cluster_key", "data_dir", "log_level")


def _help(name: str) -> str:
    field = Settings.model_fields[name]
    return f"{field.description} (default: {field.default!r}; env MNEMONET_{name.upper()})"


def build_parser() -> argparse.ArgumentParser:
    """Flags for every main and network setting; unset flags fall back to the environment, then defaults."""
    parser = argparse.ArgumentParser(
        prog="run_node.py",
        description="Run one mnemonet peer node. Flags override MNEMONET_* environment variables.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    for name in MAIN_FLAGS:
        field = Settings.model_fields[name]
        kind = field.annotation if field.annotation in (int, float) else str
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, help=_help(name))
    parser.add_argument("--insecure", dest="insecure", action="store_true", help=_help("insecure"))
    network = parser.add_argument_group("network tuning")
    for name in NETWORK_FLAGS:
        field = Settings.model_fields[name]
        kind = field.annotation if field.annotation in (int, float) else str
        network.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, help=_help(name))
    return parser


def settings_from_args(argv: Sequence[str] | None) -> Settings:
    """Parse ``argv`` onto the one settings object."""
    args: dict[str, Any] = vars(build_parser().parse_args(argv))
    return load_settings(**args)


async def run(settings: Settings) -> None:
    """Start the node, wait for SIGINT/SIGTERM, then stop it (sending ``leave``)."""
    from mnemonet.node.peer_node import PeerNode

    capabilities = {c.strip() for c in settings.capabilities.split(",") if c.strip()}
    node = PeerNode(settings, capabilities)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await node.start()
    log.info("node ready", extra={"node_id": node.node_id, "url": node.url})
    try:
        await stop.wait()
    finally:
        log.info("stopping", extra={"node_id": node.node_id})
        await node.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    from mnemonet.node.logs import setup_logging

    settings = settings_from_args(argv)
    setup_logging(settings.log_level)
    try:
        asyncio.run(run(settings))
    except ValueError as exc:  # bad settings, refused bind: a message, not a traceback
        log.error(str(exc))
        return 2
    except OSError as exc:
        log.error(f"cannot serve on {settings.host}:{settings.port}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
