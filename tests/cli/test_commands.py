"""Parsing CLI lines and describing errors: what a user types and the one line they get back."""

from __future__ import annotations

import pytest

from mnemonet.cli.commands import Command, parse_line
from mnemonet.cli.session import describe_error
from mnemonet.llm.errors import LanguageModelError
from mnemonet.model.secrets import SecretRefused
from mnemonet.p2p.errors import NoCapablePeer, RemoteError, RequestTimeout


def parse(line: str) -> Command | None:
    return parse_line(line, max_chars=100, max_name_chars=20)


def test_plain_text_question_and_commands() -> None:
    assert parse("  I prefer morning meetings \n") == Command("observe", "I prefer morning meetings")
    assert parse("?what do I prefer") == Command("remember", "what do I prefer")
    assert parse("? what do I prefer ") == Command("remember", "what do I prefer")
    assert parse("/concept  morning   meetings") == Command("concept", "morning meetings")
    assert parse("/CONTRADICTIONS") == Command("contradictions")
    assert parse("/claim a contradicts b") == Command("claim", "a contradicts b")
    assert parse("/quit") == Command("quit")
    assert parse("   ") is None and parse("") is None


@pytest.mark.parametrize(("line", "message"), [
    ("?", "question: empty"),
    ("/nope", "command: unknown /nope"),
    ("/source", "source: usage /source NAME"),
    ("/peers now", "peers: takes no argument"),
    ("/source " + "x" * 21, "source: longer than 20"),
    ("x" * 101, "line: longer than 100"),
    ("bell \x07 here", "line: must not contain control characters"),
])
def test_bad_lines_name_the_problem(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(line)


@pytest.mark.parametrize(("exc", "start"), [
    (NoCapablePeer("observe: no live peer with capability 'store'"), "error: no capable peer yet"),
    (RequestTimeout("remember: no answer within 5s"), "error: timed out"),
    (RemoteError("peer broke\nbadly", "internal"), "error: network (internal): peer broke badly"),
    (SecretRefused("text", ["jwt"]), "error: refused, nothing stored: text: refused"),
    (ValueError("text: refused, it appears to contain a secret (jwt); remove it"), "error: refused, nothing stored"),
    (ValueError("limit: must be positive"), "error: invalid input: limit"),
    (LanguageModelError("retries exhausted"), "error: language model failed: retries exhausted"),
    (KeyError("x" * 1000), "error: KeyError"),
])
def test_errors_are_one_bounded_line(exc: Exception, start: str) -> None:
    line = describe_error(exc)
    assert line.startswith(start) and "\n" not in line and len(line) <= 400


def test_observed_and_claimed_show_pending_and_superseding() -> None:
    from mnemonet.cli import render
    from mnemonet.model.api import ClaimResult, ObserveResult

    pending = ObserveResult(observation_id="obs-" + "a" * 32, created=True, pending=True,
                            extraction_error="no language model answered: no live peer")
    lines = render.observed(pending, "alice")
    assert lines[0].startswith("observed ") and "0 statements" in lines[0]
    assert lines[1] == "  kept; extraction pending (no language model answered): a worker extracts it once one does"
    claim = ClaimResult(statement_id="st-" + "b" * 32, created=True, supersedes=["st-" + "c" * 32])
    assert any(line.startswith("  superseding ") for line in render.claimed(claim))
