"""Errors of the network layer: kinds from ``model/errors.py`` with finer wire codes where callers act on them."""

from __future__ import annotations

from mnemonet.llm.errors import LanguageModelUnavailable
from mnemonet.model.errors import (
    Busy as _Busy,
)
from mnemonet.model.errors import (
    Forbidden,
    InvalidInput,
    MnemonetError,
    NotFound,
    Timeout,
    Unauthorised,
    Unavailable,
    status_of,
)


class P2PError(MnemonetError):
    """Base of network errors; ``code`` travels in error replies, ``status`` is the HTTP status."""


class UnknownMethod(P2PError, NotFound):
    """A method name outside the allowlist."""

    code = "unknown_method"


class MissingCapability(P2PError, Unavailable):
    """This node was asked for a method whose capability it lacks."""

    code = "missing_capability"


class NoCapablePeer(P2PError, Unavailable):
    """No live peer can serve the method, or every one tried failed."""

    code = "no_capable_peer"


class Busy(P2PError, _Busy):
    """Too many requests in flight, or a rate limit reached: retry after ``retry_after`` seconds (or elsewhere)."""


class RequestTimeout(P2PError, Timeout):
    """The serving peer did not answer in time."""


class Unauthorized(P2PError, Unauthorised):
    """Missing or wrong cluster key."""


class ModelUnavailable(P2PError, LanguageModelUnavailable):
    """No llm peer answered (none live, all busy, timed out, or its provider unavailable).

    Keeps the network error's code and status for callers, and is a ``LanguageModelUnavailable``
    so ``observe`` acknowledges and defers the extraction instead of failing.
    """

    def __init__(self, cause: P2PError) -> None:
        super().__init__(cause.message)
        self.code = cause.code


class RemoteError(P2PError):
    """A peer answered with an error code this node has no class for; ``code`` is the peer's."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


# The class a caller sees for each wire code; bad input stays a ``ValueError`` as it is locally.
_CLASSES: dict[str, type[MnemonetError]] = {
    cls.code: cls
    for cls in (InvalidInput, Forbidden, UnknownMethod, MissingCapability, NoCapablePeer, Busy, RequestTimeout,
                Unauthorized)
}


def error_from_wire(code: str, message: str, retry_after: float = 1.0) -> MnemonetError:
    """The exception a caller sees for an error reply."""
    if code == Busy.code:
        return Busy(message, retry_after)
    cls = _CLASSES.get(code)
    if cls is not None:
        return cls(message)
    return RemoteError(message, code)


__all__ = [
    "Busy", "MissingCapability", "NoCapablePeer", "P2PError", "RemoteError", "RequestTimeout", "UnknownMethod",
    "Unauthorized", "error_from_wire", "status_of",
]
