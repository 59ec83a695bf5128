"""``run_node.py`` / ``mnemonet``: run one peer node until SIGINT/SIGTERM, then leave gracefully."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mnemonet.settings import Settings, flag_type, load_settings, unknown_environment
from mnemonet.store.datadir import DataDirInUse, DataDirLock, uses_embedded_servers
from mnemonet.store.embedded_extra import missing_embedded_servers

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
MAIN_FLAGS = ("profile", "capabilities", "host", "port", "advertise_url", "bootstrap", "cluster_key",
              "cluster_key_file", "token", "data_dir", "log_level")


def _help(name: str) -> str:
    field = Settings.model_fields[name]
    default = str(field.default) if isinstance(field.default, Path) else repr(field.default)
    # argparse expands %-formats in help texts; a description may carry a literal one.
    return f"{field.description} (default: {default}; env MNEMONET_{name.upper()})".replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    """Flags for every main and network setting; unset flags fall back to the environment, then defaults."""
    parser = argparse.ArgumentParser(  # prog: as invoked, `mnemonet` or `run_node.py`
        description="Run one mnemonet peer node. Flags override MNEMONET_* environment variables. "
        "`%(prog)s demo [flags]` instead starts a whole local network in one process with the CLI attached; "
        "`%(prog)s mcp --url URL` serves the memory to an MCP client over stdio (a client with MNEMONET_TOKEN); "
        "`%(prog)s capture --url URL` is a Claude Code hook observing a session's turns (its payload on stdin); "
        "`%(prog)s token create NAME --scopes read,write` prints a client token; "
        "`%(prog)s reembed` re-embeds every stored text after a change of embedding model. "
        "Each of these has its own --help.",
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
    try:
        return load_settings(**args), script
    except ValidationError as exc:
        parser.exit(2, f"{parser.prog}: {plain_settings_error(exc)}\n")


def plain_settings_error(exc: ValidationError) -> str:
    """A settings error as one sentence naming the setting, its flag and environment variable, and the value."""
    first = exc.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    if not first["loc"]:
        return message  # a check across settings (cluster key and key file): its message names them
    name = str(first["loc"][0])
    where = f"--{name.replace('_', '-')} / MNEMONET_{name.upper()}"
    return f"{name} ({where}): {message[:1].lower()}{message[1:]}, got {first.get('input')!r}"


def warn_unknown_environment() -> None:
    """Log a warning for each ``MNEMONET_*`` variable that is no setting (call once logging is set up)."""
    for message in unknown_environment(os.environ):
        log.warning(message)


def settings_from_args(argv: Sequence[str] | None) -> Settings:
    """Parse ``argv`` onto the one settings object."""
    return parse_args(argv)[0]


def _capabilities(settings: Settings) -> set[str]:
    return {c.strip() for c in settings.capabilities.split(",") if c.strip()}


async def run(settings: Settings, script: Path | None = None, data_dir_lock: DataDirLock | None = None) -> bool:
    """Start the node, wait for SIGINT/SIGTERM (or the CLI's /quit), then stop it (sending ``leave``).

    False when the CLI's script stopped at a failed command."""
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

            return await attach_cli(node, stop, script, credential=settings.token)
        await stop.wait()
        return True
    finally:
        log.info("node %s stopping", node.node_id, extra={"node_id": node.node_id})
        await node.stop()


def _say(message: str) -> None:
    """A reason the node cannot run, for a person: one plain line on stderr."""
    print(f"{Path(sys.argv[0]).name}: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    from mnemonet.node.logs import plain_warnings, setup_logging

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:
        from mnemonet.node.demo import main as demo_main

        return demo_main(argv[1:])
    if argv[:1] == ["capture"]:
        from mnemonet.integrations.capture import main as capture_main

        return capture_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from mnemonet.mcp.cli import main as mcp_main

        return mcp_main(argv[1:])
    if argv[:1] in (["token"], ["import"], ["reembed"]):
        # The one-shot commands read settings too (a typo such as MNEMONET_TOKN must not pass unseen); they
        # keep stdout for their output and set up no log, so each warning is one plain line on stderr.
        for message in unknown_environment(os.environ):
            print(f"warning: {message}", file=sys.stderr)
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
    warn_unknown_environment()
    if "cli" in _capabilities(settings):
        if script is None and sys.stdin.isatty():
            from mnemonet.cli.app import log_to_file

            log_to_file(settings.data_dir / "logs" / "cli-node.log")  # keep log lines out of the prompt
        else:
            plain_warnings()  # a script's output stays readable: only warnings, one plain line each
    if "store" in _capabilities(settings) and (missing := missing_embedded_servers(settings)) is not None:
        _say(missing)  # before anything starts: a node that cannot open its store must not say "ready"
        return 2
    lock = None
    if "store" in _capabilities(settings) and uses_embedded_servers(settings):
        # Before the heavy imports and any server: a second node on this directory is refused at once.
        lock = DataDirLock(settings.data_dir)
        try:
            lock.acquire()
        except DataDirInUse as exc:
            _say(str(exc))
            return 3
    try:
        if not asyncio.run(run(settings, script, lock)):
            return 1
    except DataDirInUse as exc:
        _say(str(exc))
        return 3
    except ValueError as exc:  # bad settings, refused bind: a sentence, not a traceback or a JSON log line
        _say(str(exc))
        return 2
    except OSError as exc:
        _say(f"cannot serve on {settings.host}:{settings.port}: {exc.strerror or exc}")
        return 1
    finally:
        if lock is not None:
            lock.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
