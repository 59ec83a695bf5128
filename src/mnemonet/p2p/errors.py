"""Errors of the network layer, each with the wire code and HTTP status it is translated to."""

from __future__ import annotations

from mnemonet.llm.errors import LanguageModelUnavailable


class P2PError(Exception):
    """Base of network errors; ``code`` travels in error replies, ``status`` is the HTTP status."""

    code = "error"
    status = 500

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UnknownMethod(P2PError):
    """A method name outside the allowlist."""

    code, status = "unknown_method", 404


class MissingCapability(P2PError):
    """This node was asked for a method whose capability it lacks."""

    code, status = "missing_capability", 503


class NoCapablePeer(P2PError):
    """No live peer can serve the method, or every one tried failed."""

    code, status = "no_capable_peer", 503


class Busy(P2PError):
    """Too many requests in flight, or a rate limit reached: retry after ``retry_after`` seconds (or elsewhere)."""

    code, status = "busy", 503

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RequestTimeout(P2PError):
    """The serving peer did not answer in time."""

    code, status = "timeout", 504


class Unauthorized(P2PError):
    """Missing or wrong cluster key."""

    code, status = "unauthorized", 401


class ModelUnavailable(P2PError, LanguageModelUnavailable):
    """No llm peer answered (none live, all busy, timed out, or its provider unavailable).

    Keeps the network error's code and status for callers, and is a ``LanguageModelUnavailable``
    so ``observe`` acknowledges and defers the extraction instead of failing.
    """

    def __init__(self, cause: P2PError) -> None:
        super().__init__(cause.message, cause.code)
        self.status = cause.status


class RemoteError(P2PError):
    """A peer answered with an error code this node has no class for."""


STATUS_BY_CODE: dict[str, int] = {
    "bad_input": 400, "unknown_method": 404, "missing_capability": 503, "no_capable_peer": 503,
    "busy": 503, "unavailable": 503, "timeout": 504, "unauthorized": 401, "bad_tag": 401,
    "stale": 401, "replay": 401, "too_large": 413, "conflict": 409, "forbidden": 403, "malformed": 400,
    "invalid": 400, "provider_error": 502, "model_unavailable": 503,
}
_CLASSES = {cls.code: cls for cls in (UnknownMethod, MissingCapability, NoCapablePeer, Busy, RequestTimeout, Unauthorized)}


def error_from_wire(code: str, message: str, retry_after: float = 1.0) -> Exception:
    """The exception a caller sees for an error reply; bad input stays a ``ValueError`` as it is locally."""
    if code == "bad_input":
        return ValueError(message)
    if code == "busy":
        return Busy(message, retry_after)
    cls = _CLASSES.get(code)
    if cls is not None:
        return cls(message)
    err = RemoteError(message, code)
    err.status = STATUS_BY_CODE.get(code, 502)
    return err
