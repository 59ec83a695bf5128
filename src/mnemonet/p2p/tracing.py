"""The request id that follows one call across nodes, and the log filter that stamps it on every line.

The client API takes ``X-Request-Id`` (or makes one), routed requests carry
it in their payload, and each served request sets it in a context variable
for the task that serves it, so every log line of that call, on every node it
touches, names the same id.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar, Token

_REQUEST_ID: ContextVar[str | None] = ContextVar("mnemonet_request_id", default=None)
_VALID = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")


def current_request_id() -> str | None:
    """The id of the call this task serves, if any."""
    return _REQUEST_ID.get()


def start_request(request_id: object = None) -> Token[str | None]:
    """Adopt a well-formed incoming id (else make one) for this task; ``reset`` the token when done."""
    rid = request_id if isinstance(request_id, str) and _VALID.match(request_id) else uuid.uuid4().hex
    return _REQUEST_ID.set(rid)


def end_request(token: Token[str | None]) -> None:
    """Restore the id in force before ``start_request``."""
    _REQUEST_ID.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to records logged while a call is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = _REQUEST_ID.get()
        if rid is not None and not hasattr(record, "request_id"):
            record.request_id = rid
        return True
