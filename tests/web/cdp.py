"""Headless Chromium driven over the Chrome DevTools Protocol with ``websockets`` (no Selenium, no downloads)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import websockets

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
    "--remote-debugging-port=0",
)


def chromium_path() -> str:
    """Debian's chromium, or a failed test that says how to install it (never a skip)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed: run tools/install-chromium.sh (Debian's chromium package)")
    return path


EventListener = Callable[[dict[str, Any]], None]


# What Chromium answers a call that a navigation of the page cut short.
_RELOADED = ("navigated or closed", "Execution context was destroyed", "Cannot find context with specified id")


class PageNavigated(RuntimeError):
    """A call into the page was cut short because the page navigated (a reload the page made itself)."""


class Connection:
    """One CDP websocket: calls by id, on the browser or on an attached tab's session, and event listeners."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._listeners: dict[tuple[str, str | None], EventListener] = {}
        self._reader = asyncio.create_task(self._read())

    def listen(self, method: str, session: str | None, listener: EventListener) -> None:
        """Call ``listener(params)`` on each ``method`` event of ``session`` (replacing an earlier listener)."""
        self._listeners[(method, session)] = listener

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            if "id" not in message:
                listener = self._listeners.get((message.get("method", ""), message.get("sessionId")))
                if listener is not None:
                    listener(message.get("params", {}))
                continue
            future = self._pending.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Call a CDP method and return its result (events are ignored)."""
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self._ws.send(json.dumps(message))
        reply = await asyncio.wait_for(future, 15.0)
        if "error" in reply:
            if any(said in reply["error"].get("message", "") for said in _RELOADED):
                raise PageNavigated(f"{method}: {reply['error']}")
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def close(self) -> None:
        """Stop reading."""
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


class Page:
    """One browser tab."""

    def __init__(self, connection: Connection, session: str, size: tuple[int, int]) -> None:
        self._connection = connection
        self._session = session
        self._size = size
        self._answering: set[asyncio.Task[dict[str, Any]]] = set()

    async def new_tab(self) -> Page:
        """Another tab of the same browser (the same profile), of the same size."""
        return await _open_tab(self._connection, *self._size)

    def answer_dialogs(self, text: str, accept: bool = True) -> list[str]:
        """From now on, answer each dialog this tab opens (alert, confirm, prompt) as a user would: OK (or Cancel),
        typing ``text`` into a prompt. Returns the list each dialog's message is appended to."""
        asked: list[str] = []

        def opened(params: dict[str, Any]) -> None:
            asked.append(params.get("message", ""))
            task = asyncio.create_task(self.send("Page.handleJavaScriptDialog", {"accept": accept, "promptText": text}))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

        self._connection.listen("Page.javascriptDialogOpening", self._session, opened)
        return asked

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a CDP method on this tab."""
        return await self._connection.send(method, params, self._session)

    async def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    async def wait_for(self, expression: str, check: Callable[[Any], bool], within: float, what: str) -> Any:
        """Poll ``expression`` until ``check(value)`` holds; fails the test with the last value otherwise."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            try:
                value = await self.evaluate(expression)
                if check(value):
                    return value
            except PageNavigated:  # the page reloaded under the poll: read the new one next time
                value = "(reloading)"
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{what}: not seen within {within}s; last value {value!r}")
            await asyncio.sleep(0.1)

    async def screenshot(self, path: Path) -> None:
        """Save the whole page as PNG."""
        shot = await self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        # A test artefact, once per test: blocking the loop for one small write is harmless.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))  # noqa: ASYNC240

async def _devtools_url(profile: Path, process: asyncio.subprocess.Process, within: float) -> str:
    # Chromium writes its chosen port and browser target path here once it listens.
    active = profile / "DevToolsActivePort"
    async with asyncio.timeout(within):
        while not active.exists() or len(active.read_text().splitlines()) < 2:
            if process.returncode is not None:
                raise RuntimeError(f"chromium exited with {process.returncode}")
            await asyncio.sleep(0.05)
    port, path = active.read_text().splitlines()[:2]
    return f"ws://127.0.0.1:{port}{path}"


@contextlib.asynccontextmanager
async def browser_page(profile: Path, width: int = 1440, height: int = 1000) -> AsyncIterator[Page]:
    """Start headless Chromium with a fresh profile and open one tab; everything is stopped on exit."""
    process = await asyncio.create_subprocess_exec(
        chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
        "about:blank", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        url = await _devtools_url(profile, process, 20.0)
        async with websockets.connect(url, max_size=64 * 1024 * 1024) as ws:
            connection = Connection(ws)
            try:
                yield await _open_tab(connection, width, height)
            finally:
                await connection.close()
    finally:
        if process.returncode is None:
            process.terminate()
            await _wait_or_kill(process.wait(), process)


async def _open_tab(connection: Connection, width: int, height: int) -> Page:
    target = await connection.send("Target.createTarget", {"url": "about:blank"})
    attached = await connection.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
    page = Page(connection, attached["sessionId"], (width, height))
    await page.send("Page.enable")  # page events: dialogs among them
    await page.send("Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    return page


async def _wait_or_kill(waiting: Awaitable[int], process: asyncio.subprocess.Process) -> None:
    try:
        await asyncio.wait_for(waiting, 5.0)
    except TimeoutError:
        process.kill()
        await process.wait()
