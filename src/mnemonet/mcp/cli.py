"""``mnemonet mcp --bootstrap URL`` (also ``run_node.py mcp ...``): the MCP server on stdin/stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from mnemonet.settings import Settings, flag_type, load_settings

log = logging.getLogger("mnemonet.mcp")

FLAGS = ("bootstrap", "cluster_key", "host", "port", "advertise_url", "node_id", "log_level")


def build_parser() -> argparse.ArgumentParser:
    """Flags for the settings the MCP server's peer node uses; unset ones come from ``MNEMONET_*``."""
    parser = argparse.ArgumentParser(
        prog="mnemonet mcp",
        description="Serve mnemonet's memory to an MCP client (Claude Code, Cursor ...) over stdin/stdout. "
        "Joins the network through --bootstrap as a client-only peer; logs go to stderr.",
        argument_default=argparse.SUPPRESS,
    )
    for name in FLAGS:
        field = Settings.model_fields[name]
        default = 0 if name == "port" else field.default  # a free port: several MCP servers may run at once
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=flag_type(name),
                            help=f"{field.description} (default: {default!r}; env MNEMONET_{name.upper()})")
    return parser


def settings_from_args(argv: Sequence[str]) -> Settings:
    """The settings for ``argv``; exits with a usage error when no seed is given."""
    parser = build_parser()
    args: dict[str, Any] = vars(parser.parse_args(argv))
    args.setdefault("port", 0)
    settings = load_settings(**args)
    if not settings.bootstrap.strip():
        parser.error("--bootstrap URL (or MNEMONET_BOOTSTRAP) is required: the URL of any node of the network")
    return settings


def main(argv: Sequence[str]) -> int:
    """Run the MCP server until its client closes stdin or a signal arrives; returns the exit code."""
    from mnemonet.mcp.server import serve_stdio
    from mnemonet.node.cli_entry import warn_unknown_environment
    from mnemonet.node.logs import setup_logging

    settings = settings_from_args(argv)
    setup_logging(settings.log_level)  # stderr only: stdout carries the MCP protocol
    warn_unknown_environment()
    try:
        asyncio.run(serve_stdio(settings))
    except ValueError as exc:  # bad settings, refused bind
        log.error("%s", exc)
        return 2
    except OSError as exc:
        log.error("cannot serve the peer node on %s:%s: %s", settings.host, settings.port, exc)
        return 1
    return 0
