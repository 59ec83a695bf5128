"""``run_node.py token create|revoke``: client tokens, made and revoked by whoever holds the cluster key.

``create`` needs no node: a token is signed with a key derived from the cluster
key, and any node of the cluster verifies it without a lookup. The token is the
last line of the output, so ``TOKEN=$(run_node.py token create me --scopes read | tail -1)``
works. ``revoke`` writes the token's id into the store's revocation list through
a node (``--url``), which every node re-reads every ``token_revocation_refresh``
seconds; the command signs itself a one-minute ``admin`` token to do it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import TextIO

from pydantic import ValidationError

from mnemonet.node.cli_entry import plain_settings_error
from mnemonet.p2p.tokens import SCOPES, TokenError, TokenVerifier, create_token, parse_ttl
from mnemonet.settings import Settings, load_settings

# The admin token ``revoke`` makes for its own call: long enough for one request, no longer.
REVOKE_TOKEN_TTL = 60.0


def build_parser() -> argparse.ArgumentParser:
    """Flags of ``token create`` and ``token revoke``."""
    key_help = f"{Settings.model_fields['cluster_key'].description} (env MNEMONET_CLUSTER_KEY)"
    file_help = f"{Settings.model_fields['cluster_key_file'].description} (env MNEMONET_CLUSTER_KEY_FILE)"
    parser = argparse.ArgumentParser(prog="run_node.py token", description="Make and revoke client tokens.")
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="Print a new token (its last line of output).")
    create.add_argument("name", help="The caller's name: the source of everything it writes.")
    create.add_argument("--scopes", default="read", help=f"Comma-separated, some of {','.join(SCOPES)} "
                        "(default: read).")
    create.add_argument("--spaces", default="default", help="Comma-separated memory spaces it may use, the first "
                        "being where calls naming none go; '*' for every space (default: default).")
    default_ttl = Settings.model_fields["token_ttl_default"].default
    create.add_argument("--ttl", default=None, help="How long it is valid: 90d, 12h, 30m or seconds "
                        f"(default: MNEMONET_TOKEN_TTL_DEFAULT, {default_ttl:g}s).")
    create.add_argument("--cluster-key", dest="cluster_key", default=None, help=key_help)
    create.add_argument("--cluster-key-file", dest="cluster_key_file", default=None, help=file_help)
    revoke = commands.add_parser("revoke", help="Revoke a token on every node.")
    revoke.add_argument("token", help="The token id (printed by create), or the token itself.")
    revoke.add_argument("--url", default="http://127.0.0.1:9000", help="Any node of the cluster "
                        "(default: http://127.0.0.1:9000).")
    revoke.add_argument("--cluster-key", dest="cluster_key", default=None, help=key_help)
    revoke.add_argument("--cluster-key-file", dest="cluster_key_file", default=None, help=file_help)
    return parser


def _token_id(text: str, verifier: TokenVerifier) -> str:
    if text.startswith("mnt1."):
        return verifier.verify(text).id  # only tokens of this cluster; an expired one need not be revoked
    return text


async def _revoke(url: str, key: str, token_id: str) -> bool:
    from mnemonet.p2p.client import HttpMemoryClient

    admin, _ = create_token(key, "operator", ["admin"], REVOKE_TOKEN_TTL)
    async with HttpMemoryClient(url, admin) as client:
        return await client.revoke_token(token_id, "operator")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run ``token create|revoke``; returns the exit code."""
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # the key as the node reads it: flag, file or environment (one of them)
        settings = load_settings(cluster_key=args.cluster_key, cluster_key_file=args.cluster_key_file)
    except ValidationError as exc:
        print(f"error: {plain_settings_error(exc)}", file=sys.stderr)
        return 2
    if not settings.cluster_key:
        parser.error("a cluster key is needed (--cluster-key-file, --cluster-key or MNEMONET_CLUSTER_KEY); "
                     "keyless nodes take no tokens")
    try:
        if args.command == "create":
            ttl = parse_ttl(args.ttl) if args.ttl is not None else settings.token_ttl_default
            text, token = create_token(settings.cluster_key, args.name, args.scopes, ttl, spaces=args.spaces)
            print(f"token id: {token.id}  name: {token.name}  scopes: {','.join(sorted(token.scopes))}  "
                  f"spaces: {','.join(token.spaces)}  "
                  f"expires: {token.expires} (Unix seconds)", file=out)
            print(text, file=out)
            return 0
        token_id = _token_id(args.token, TokenVerifier(settings.cluster_key))
        created = asyncio.run(_revoke(args.url, settings.cluster_key, token_id))
    except (ValueError, TokenError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the node refused or was unreachable: say which, no traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"revoked {token_id}" if created else f"{token_id} was revoked already", file=out)
    return 0
