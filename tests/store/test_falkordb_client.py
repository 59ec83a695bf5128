"""The FalkorDB client's replies are parsed in C, not by redis-py's pure-Python parser."""

from __future__ import annotations

import redis.utils


def test_replies_are_parsed_by_hiredis() -> None:
    # Without hiredis, redis.asyncio parses a reply element by element in Python: reading 50 statements
    # (~1,500 reply elements) took ~30 ms against ~2.5 ms on the wire (bench/README.md, "Search latency").
    assert redis.utils.HIREDIS_AVAILABLE, "install hiredis (a dependency in pyproject.toml)"
