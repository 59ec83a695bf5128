"""``mnemonet mcp --url URL`` (also ``run_node.py mcp ...``): the MCP server on stdin/stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from mnemonet.settings import Settings, flag_type, load_settings

log = logging.getLogger("mnemonet.mcp")

# Flag -> setting. ``--bootstrap`` is the old name of ``--url``, from when the MCP server joined as a peer.
FLAGS = {"url": "node_url", "bootstrap": "node_url", "token": "token", "request_timeout": "request_timeout",
         "log_level": "log_level"}


def build_parser() -> argparse.ArgumentParser:
    """Flags for the settings the MCP server uses; unset ones come from ``MNEMONET_*``."""
    parser = argparse.ArgumentParser(
        prog="mnemonet mcp",
        description="Serve mnemonet's memory to an MCP client (Claude Code, Cursor ...) over stdin/stdout. "
        "A client of the nodes' HTTP API with a token (MNEMONET_TOKEN), never a peer; logs go to stderr.",
        argument_default=argparse.SUPPRESS,
    )
    for flag, name in FLAGS.items():
        field = Settings.model_fields[name]
        if flag == "bootstrap":
            parser.add_argument("--bootstrap", dest=name, type=str, help="Same as --url (its former name).")
            continue
        parser.add_argument("--" + flag.replace("_", "-"), dest=name, type=flag_type(name),
                            help=f"{field.description} (default: {field.default!r}; env MNEMONET_{name.upper()})")
    return parser


def settings_from_args(argv: Sequence[str]) -> Settings:
    """The settings for ``argv``; exits with a usage error when no node URL is given."""
    parser = build_parser()
    args: dict[str, Any] = vars(parser.parse_args(argv))
    settings = load_settings(**args)
    if not settings.node_url.strip():
        parser.error("--url URL (or MNEMONET_NODE_URL) is required: the URL of any node of the network "
                     "(several, comma-separated, to go on when one is down)")
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
        asyncio.run(serve_stdio(settings))  # a session its token ended exits there, with TOKEN_ENDED
    except ValueError as exc:  # bad settings
        log.error("%s", exc)
        return 2
    return 0
