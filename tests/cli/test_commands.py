"""Parsing CLI lines and describing errors: what a user types and the one line they get back."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemonet.cli.commands import QUESTION_NOTE, Command, parse_line
from mnemonet.cli.console import TerminalHistory
from mnemonet.cli.render import terminal_safe
from mnemonet.cli.session import CliSession, describe_error
from mnemonet.llm.errors import LanguageModelError
from mnemonet.model.secrets import SecretRefused
from mnemonet.model.views import StatementView
from mnemonet.p2p.errors import NoCapablePeer, RemoteError, RequestTimeout
from mnemonet.settings import Settings


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


@pytest.mark.parametrize("line", [
    "what is the deploy day", "Where does the team meet", "how many servers do we run", "What's the plan",
    "who was at the offsite", "When will the release ship",
])
def test_a_line_that_reads_as_a_question_is_asked_with_a_note(line: str) -> None:
    assert parse(line) == Command("remember", line, QUESTION_NOTE)


@pytest.mark.parametrize("line", [
    "what we decided: ship on Friday", "Who knows, maybe tomorrow", "how I work: mornings only", "Will is my manager",
])
def test_statements_that_open_with_a_question_word_are_observed(line: str) -> None:
    assert parse(line) == Command("observe", line)


def test_observe_stores_a_line_that_reads_as_a_question() -> None:
    assert parse("/observe what is the plan") == Command("observe", "what is the plan")


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
@pytest.mark.parametrize(("stored", "shown"), [
    ("\x1b[2J\x1b[31mred\x1b[0m text", "red text"),  # CSI: clear screen, colours
    ("click \x1b]8;;https://evil.example\x07here\x1b]8;;\x07", "click here"),  # OSC 8 hyperlink
    ("\x1b]0;owned title\x1b\\tail", "tail"),  # OSC window title ended by ST
    ("name\u202egnp.exe", "name?gnp.exe"),  # right-to-left override
    ("a\u2066b\u2069c\u200fd", "a?b?c?d"),  # isolates and marks
    ("bell\x07 c1\x9b31m nul\x00", "bell? c1?31m nul?"),
    ("café, 東京 and tabs\tstay", "café, 東京 and tabs\tstay"),
])
def test_stored_text_cannot_drive_the_terminal(stored: str, shown: str) -> None:
    assert terminal_safe(stored) == shown


class _Api:
    """The two calls these tests make: an observe the store refuses, a read of hostile stored text."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def observe(self, text: str, source: str = "user", **kwargs: object) -> object:
        self.calls.append(text)
        raise SecretRefused("text", ["aws_access_key"])

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]:
        return [StatementView(id="st-1", subject="\x1b]0;pwned\x07user", predicate="likes",
                              object="tea\x1b[8m", confidence=0.9, source="bob\u202e")]


async def test_the_session_prints_only_safe_text_and_forgets_refused_lines() -> None:
    out: list[str] = []
    forgotten: list[str] = []
    api = _Api()
    session = CliSession(api, dict, Settings(), out.append, forget=forgotten.append)  # type: ignore[arg-type]
    await session.run_line("my key is AKIAIOSFODNN7EXAMPLE")
    await session.run_line("/concept user")
    assert api.calls == ["my key is AKIAIOSFODNN7EXAMPLE"]
    assert forgotten == ["my key is AKIAIOSFODNN7EXAMPLE"]  # not kept in the history file
    assert out[0].startswith("error: refused, nothing stored")
    assert all("\x1b" not in line and "\u202e" not in line for line in out)
    assert "user likes tea  (0.90, bob?, st-1)" in out[-1]


def test_the_history_file_does_not_keep_a_forgotten_line(tmp_path: Path) -> None:
    import readline

    readline.clear_history()
    try:
        history = TerminalHistory(tmp_path / "cli_history", 100)
        for line in ("I prefer tea", "my key is AKIAIOSFODNN7EXAMPLE"):
            readline.add_history(line)  # as input() does
        history.forget("something else")  # not the newest line: nothing dropped
        history.forget("my key is AKIAIOSFODNN7EXAMPLE")
        history.save()
        kept = (tmp_path / "cli_history").read_text()
    finally:
        readline.clear_history()
    assert "I prefer tea" in kept and "AKIA" not in kept


async def test_a_secret_given_as_a_source_name_is_refused_and_forgotten() -> None:
    """Issue 31 row 20: ``/source <a GitHub token>`` was taken, shown in every prompt after and kept in the
    history file."""
    out: list[str] = []
    forgotten: list[str] = []
    session = CliSession(_Api(), dict, Settings(), out.append, forget=forgotten.append)  # type: ignore[arg-type]
    token = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
    for line in (f"/source {token}", "/space password=hunter22"):
        await session.run_line(line)
    assert forgotten == [f"/source {token}", "/space password=hunter22"]
    assert session.source == "user" and session.prompt == "user> " and token not in "".join(out)
    assert out[0].startswith("error: refused") and "github_token" in out[0]
    await session.run_line("/source alice")
    assert session.prompt == "alice> "
