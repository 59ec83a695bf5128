"""The one logger setup: one JSON object per line, per event."""

from __future__ import annotations

import json
import logging
import sys
import time

from mnemonet.p2p.tracing import RequestIdFilter

# Attributes every LogRecord has; anything else was passed as ``extra`` and is kept as a field.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Libraries that log every request at INFO: too chatty for a node's log.
_QUIET = ("httpx", "httpcore", "uvicorn.access", "websockets")


class JsonLineFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", ...extra}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(level: str = "INFO") -> None:
    """Send every logger to stderr as JSON lines at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    handler.addFilter(RequestIdFilter())  # every line of a served call names its request id
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def plain_warnings() -> None:
    """Only warnings and errors, as ``warning: message`` lines: for a CLI whose stdout is a script's output."""
    root = logging.getLogger()
    for handler in root.handlers:
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    root.setLevel(max(root.level, logging.WARNING))
