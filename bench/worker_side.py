"""One code version's timing subprocess (``timing_worker.py``), as the side-by-side latency benches drive it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "timing_worker.py"


@dataclass
class WorkerSide:
    """A worker importing mnemonet from ``src``, with ``change`` over the settings the bench gives it."""

    label: str
    src: Path
    change: dict[str, str] = field(default_factory=dict)
    process: asyncio.subprocess.Process | None = None

    async def start(self, config: dict[str, object], log: Path) -> str:
        """Start the worker on ``config`` (``settings`` and ``schema``); the path of the code it imported."""
        env = {**os.environ, "PYTHONPATH": str(self.src)}
        with log.open("ab") as err:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, str(WORKER), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, env=env)
        settings = {**config["settings"], **self.change}  # type: ignore[dict-item]
        return str((await self.send({**config, "settings": settings}))["code"])

    async def send(self, message: dict[str, object]) -> dict[str, object]:
        assert self.process is not None and self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label}: the worker ended (see its log)")
        reply: dict[str, object] = json.loads(line)
        return reply

    async def stop(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.write(b"\n")
            await self.process.stdin.drain()
            await self.process.wait()


def loadavg() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())
