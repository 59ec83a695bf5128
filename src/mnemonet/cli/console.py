"""Where CLI lines come from: the terminal (readline editing and history) or a script / piped stdin.

Lines are read on one daemon thread, one at a time and only when asked for,
so a prompt never appears in the middle of a command's output, the event
loop never blocks on input, and a pending read never holds up exit.

stdlib ``readline`` rather than prompt_toolkit: no extra dependency, the
user's own ``~/.inputrc`` key bindings apply, and the CLI prints nothing
while a prompt is up, which is all prompt_toolkit's redraw machinery buys.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from queue import SimpleQueue
from typing import TextIO

log = logging.getLogger(__name__)

ReadFn = Callable[[str], str | None]  # prompt -> line, None at end of input; input() is one


class LineReader:
    """Reads one line per ``read(prompt)`` on a daemon thread; ``None`` at end of input."""

    def __init__(self, read_line: ReadFn) -> None:
        self._read_line = read_line
        self._requests: SimpleQueue[tuple[str, asyncio.Future[str | None], asyncio.AbstractEventLoop]] = SimpleQueue()
        self._thread: threading.Thread | None = None

    async def read(self, prompt: str) -> str | None:
        """The next line (without its newline), or ``None`` when input is exhausted."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="cli-input", daemon=True)
            self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()
        self._requests.put((prompt, future, loop))
        return await future

    def _serve(self) -> None:
        while True:
            prompt, future, loop = self._requests.get()
            try:
                line: str | None = self._read_line(prompt)
            except EOFError:
                line = None
            except Exception as exc:  # a broken terminal or file: end the session with the reason
                loop.call_soon_threadsafe(_settle, future, None, exc)
                return
            loop.call_soon_threadsafe(_settle, future, line, None)
            if line is None:
                return


def _settle(future: asyncio.Future[str | None], line: str | None, exc: BaseException | None) -> None:
    if future.done():  # the reader gave up waiting (the session is stopping)
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(line)


def bounded_file_reader(stream: TextIO, max_chars: int) -> ReadFn:
    """Lines from a file or pipe; a line over ``max_chars`` is cut to ``max_chars + 1`` (so it is refused)
    and the rest of it skipped, so a huge line never sits in memory."""

    def read(_prompt: str) -> str | None:
        line = stream.readline(max_chars + 2)
        if not line:
            return None
        if not line.endswith("\n") and len(line) > max_chars:
            while (rest := stream.readline(max_chars)) and not rest.endswith("\n"):
                pass
        return line.rstrip("\r\n")

    return read


class TerminalHistory:
    """readline's history, loaded from and saved to a file, bounded in lines."""

    def __init__(self, path: Path, size: int) -> None:
        import readline  # enables line editing for input(); only where a terminal is used

        self._readline = readline
        self.path = path
        readline.set_history_length(size)

    def load(self) -> None:
        """Read earlier sessions' history, if any."""
        with contextlib.suppress(FileNotFoundError):
            self._readline.read_history_file(self.path)

    def forget(self, line: str) -> None:
        """Drop ``line`` if it is the newest entry (``input()`` added it before the store refused it)."""
        newest = self._readline.get_current_history_length()
        if newest > 0 and self._readline.get_history_item(newest) == line:
            self._readline.remove_history_item(newest - 1)  # get_ is 1-based, remove_ is 0-based

    def save(self) -> None:
        """Write the history (readline truncates it to the configured length)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._readline.write_history_file(self.path)
        except OSError as exc:  # history is a convenience: say why it was not kept, carry on
            log.warning("cli history not saved to %s: %s", self.path, exc)


@contextlib.contextmanager
def terminal_modes_restored(stream: TextIO = sys.stdin):
    """Put the terminal back as it was, even if we exit while readline holds it in raw mode."""
    try:
        import termios

        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
