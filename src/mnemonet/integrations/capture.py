"""``mnemonet capture``: a Claude Code hook that observes a session's new turns, each said by its speaker.

Claude Code runs the hook with a JSON payload on stdin (``session_id``, ``transcript_path``,
``hook_event_name`` ...). The transcript is JSON lines: ``type`` ``user`` or ``assistant``, the turn's
``message`` (``content`` a string or a list of blocks), its ``uuid``. A capture reads the transcript
from where the last one stopped (a byte offset per session, in ``capture_state_dir``), keeps the
people's words (text blocks; not tool calls, tool results, meta or sidechain lines) and observes each
turn as ``capture_user`` or ``capture_assistant``, under the idempotency key (session, turn uuid): a
repeat writes nothing. A turn holding a secret is skipped with a note on stderr, never sent nor kept
on disk. When the node does not answer within ``capture_timeout`` the turns not sent go to a spool
file, sent first on the next call; the hook always returns in time and never blocks the agent (exit 0;
1 only for a payload that is not a hook's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hashlib
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from mnemonet.model.errors import MnemonetError, Timeout, Unavailable
from mnemonet.model.secrets import find_secrets
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.settings import Settings, load_settings

SPOOL = "spool.jsonl"
LOCK = "capture.lock"
SESSION_KEY = "session"  # the metadata key the store reads as the conversation (settings.search_session_key)


@dataclass(frozen=True)
class Turn:
    """One turn to observe: what was said, by whom, under which key."""

    text: str
    source: str
    key: str
    metadata: dict[str, str]
    space: str | None = None


@dataclass
class Outcome:
    """What one capture did."""

    sent: int = 0
    spooled: int = 0
    skipped: int = 0


def _said(message: Any) -> str:
    """The words of a transcript message: its string content, or its text blocks joined."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
    return ""


def read_turns(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete transcript lines from byte ``offset`` on (parsed), and the offset after the last one.

    A last line without its newline is being written: it is left for the next capture.
    """
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    lines = []
    for raw in data[:end].splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(raw)
            if isinstance(entry, dict):
                lines.append(entry)
    return lines, offset + end


def turns_of(lines: list[dict[str, Any]], session: str, settings: Settings, space: str | None,
             notes: TextIO) -> tuple[list[Turn], int]:
    """The turns to observe in ``lines``, and how many were skipped for holding a secret."""
    out: list[Turn] = []
    skipped = 0
    speakers = {"user": settings.capture_user, "assistant": settings.capture_assistant}
    for line in lines:
        role = line.get("type")
        if role not in speakers or line.get("isSidechain") or line.get("isMeta"):
            continue
        text = _said(line.get("message"))[:settings.max_text_chars]
        if not text:
            continue  # a tool call or a tool result: no one's words
        turn = str(line.get("uuid") or hashlib.sha256(json.dumps(line, sort_keys=True).encode()).hexdigest())
        found = find_secrets(text[:min(len(text), 100_000)])
        if found:
            skipped += 1
            kinds = ", ".join(sorted({f.kind for f in found}))
            print(f"mnemonet capture: skipped a {role} turn of session {session}: it appears to contain a secret "
                  f"({kinds})", file=notes)
            continue
        out.append(Turn(text=text, source=speakers[str(role)], key=f"claude-code:{session}:{turn}",
                        metadata={SESSION_KEY: session[:500], "turn": turn[:500], "role": str(role)}, space=space))
    return out, skipped


class CaptureState:
    """The offsets per session and the spool, in one directory, one capture at a time (a lock file)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.expanduser()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (self.directory / LOCK).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _offset_file(self, session: str) -> Path:
        return self.directory / f"{hashlib.sha256(session.encode()).hexdigest()[:32]}.offset"

    def offset(self, session: str, transcript: Path) -> int:
        try:
            saved = json.loads(self._offset_file(session).read_text())
        except (OSError, ValueError):
            return 0
        # A transcript shorter than what was read is a new file under the old name: read it from the start.
        size = transcript.stat().st_size
        return saved["offset"] if isinstance(saved, dict) and 0 <= saved.get("offset", -1) <= size else 0

    def save_offset(self, session: str, offset: int) -> None:
        _write(self._offset_file(session), json.dumps({"session": session, "offset": offset}))

    def spooled(self) -> list[Turn]:
        try:
            lines = (self.directory / SPOOL).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            with contextlib.suppress(ValueError, TypeError):
                out.append(Turn(**json.loads(line)))
        return out

    def save_spool(self, turns: list[Turn]) -> None:
        _write(self.directory / SPOOL, "".join(json.dumps(asdict(t)) + "\n" for t in turns))


def _write(path: Path, text: str) -> None:
    """Replace ``path``'s content at once (a killed hook leaves the old file or the new, never half)."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.chmod(0o600)
    partial.replace(path)


async def send(turns: list[Turn], client: HttpMemoryClient, settings: Settings, deadline: float,
               notes: TextIO) -> tuple[int, int, list[Turn]]:
    """Observe ``turns`` in order until the node stops answering or the deadline: (sent, refused, not sent)."""
    sent = refused = 0
    for n, turn in enumerate(turns):
        left = deadline - time.monotonic()
        if left <= 0:
            return sent, refused, turns[n:]
        try:
            # Not ``asyncio.wait_for``: on Python 3.11 it can swallow a Ctrl-C that meets the reply.
            async with asyncio.timeout(left):
                await client.observe(
                    turn.text, turn.source, idempotency_key=turn.key, metadata=turn.metadata, space=turn.space,
                    defer_extraction=settings.capture_defer_extraction)
            sent += 1
        except (Unavailable, Timeout, TimeoutError):
            return sent, refused, turns[n:]  # the node is down or slow: keep the rest for the next call
        except MnemonetError as exc:  # refused for what it is (a secret, too long, a speaker not allowed)
            refused += 1
            print(f"mnemonet capture: the node refused a turn ({exc.code}): {exc}", file=notes)
    return sent, refused, []


async def _send_all(turns: list[Turn], settings: Settings, urls: list[str], token: str, deadline: float,
                    notes: TextIO) -> tuple[int, int, list[Turn]]:
    async with HttpMemoryClient(urls, token, timeout=settings.capture_timeout) as client:
        return await send(turns, client, settings, deadline, notes)


def capture(payload: dict[str, Any], settings: Settings, urls: list[str], token: str, space: str | None,
            notes: TextIO) -> Outcome:
    """Observe the new turns of the payload's session (after any spooled from earlier calls).

    The files are read and written here, the sends made on an event loop of their own in between.
    """
    deadline = time.monotonic() + settings.capture_timeout
    session, transcript = payload.get("session_id"), payload.get("transcript_path")
    if not isinstance(session, str) or not session or not isinstance(transcript, str) or not transcript:
        raise ValueError("the hook payload has no session_id or transcript_path")
    path = Path(transcript).expanduser()
    state = CaptureState(settings.capture_state_dir)
    outcome = Outcome()
    with state.locked():
        pending = state.spooled()
        end: int | None = None
        if path.is_file():
            lines, end = read_turns(path, state.offset(session, path))
            new, outcome.skipped = turns_of(lines, session, settings, space, notes)
            pending += new
        else:
            print(f"mnemonet capture: no transcript at {path}", file=notes)
        left: list[Turn] = pending
        if pending:
            outcome.sent, refused, left = asyncio.run(_send_all(pending, settings, urls, token, deadline, notes))
            outcome.skipped += refused
        state.save_spool(left)  # on disk before the offset moves past them
        if end is not None:
            state.save_offset(session, end)
        outcome.spooled = len(left)
    if left:
        print(f"mnemonet capture: no node answered at {', '.join(urls)}; {len(left)} turns spooled in "
              f"{state.directory / SPOOL}, sent on the next capture", file=notes)
    return outcome


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemonet capture", argument_default=argparse.SUPPRESS,
        description="Observe a Claude Code session's new turns: the hook payload (JSON) on stdin.")
    parser.add_argument("--url", default="http://127.0.0.1:9000",
                        help="node URLs, comma-separated (default: http://127.0.0.1:9000)")
    parser.add_argument("--token", default=None, help="client token with write and speak-for (env MNEMONET_TOKEN)")
    parser.add_argument("--space", default=None, help="memory space (default: the token's first)")
    for name, flag in (("capture_user", "--user"), ("capture_assistant", "--assistant"),
                       ("capture_state_dir", "--state-dir"), ("capture_timeout", "--timeout")):
        field = Settings.model_fields[name]
        parser.add_argument(flag, dest=name, help=f"{field.description} (default: {field.default}; "
                            f"env MNEMONET_{name.upper()})")
    return parser


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, notes: TextIO | None = None) -> int:
    """``mnemonet capture``: 0 whatever the node did (a hook must not block the agent), 1 for a bad payload."""
    notes = notes or sys.stderr
    args = vars(build_parser().parse_args(argv))
    url, space = args.pop("url"), args.pop("space", None)
    try:
        settings = load_settings(**args)
    except ValidationError as exc:
        print(f"mnemonet capture: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}", file=notes)
        return 1
    raw = (stdin or sys.stdin).read(settings.capture_max_payload_bytes + 1)
    try:
        payload = json.loads(raw)
        if len(raw) > settings.capture_max_payload_bytes or not isinstance(payload, dict):
            raise ValueError("not a JSON object of a hook's size")
        outcome = capture(payload, settings, [u for u in url.split(",") if u.strip()], settings.token, space, notes)
    except ValueError as exc:
        print(f"mnemonet capture: bad hook payload on stdin: {exc}", file=notes)
        return 1
    except OSError as exc:  # the transcript or the state directory cannot be read or written
        print(f"mnemonet capture: {exc}", file=notes)
        return 1
    print(f"mnemonet capture: {outcome.sent} turns observed, {outcome.spooled} spooled, {outcome.skipped} skipped",
          file=notes)
    return 0
