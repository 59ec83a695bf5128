"""The error vocabulary: one root, a few kinds, and the one table that maps them to the wire.

    MnemonetError                 internal        500   (a bug, or a failure with no better name)
    ├── InvalidInput (ValueError) bad_input       400   the caller's input is wrong; retrying it is useless
    ├── NotFound                  not_found       404
    ├── Conflict                  conflict        409   the same id was used with different content
    ├── Unauthorised              unauthorized    401   missing or wrong credentials
    ├── Forbidden                 forbidden       403   valid credentials without the right scope
    ├── Unavailable               unavailable     503   a dependency or peer is down; another may serve
    │   └── Busy                  busy            503   saturated: retry after ``retry_after`` seconds
    ├── Timeout                   timeout         504
    └── ProviderFailed            provider_error  502   a language-model or embedding provider failed

Layers raise specific subclasses (``LanguageModelError``, ``UnknownMethod`` ...) that keep their
kind's status; a subclass may name a finer wire code, which must be in ``STATUS``. The boundaries
(HTTP server, RPC replies, CLI) translate with ``describe``: any exception that is not one of these
(a bug's ``ValueError`` included) is ``internal`` with no internal text, only the request id.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

# Every wire code and its HTTP status: the one table (envelope refusals included).
STATUS: dict[str, int] = {
    "internal": 500,
    "bad_input": 400,
    "malformed": 400,  # an envelope that does not parse
    "invalid": 400,  # an envelope that parses but breaks a rule
    "too_large": 413,
    "unsupported_media_type": 415,  # a client call that is not application/json
    "body_timeout": 408,  # a request body not received in time (slow or unfinished upload)
    "not_found": 404,
    "unknown_method": 404,
    "conflict": 409,
    "unauthorized": 401,
    "bad_tag": 401,  # envelope authentication failed
    "stale": 401,
    "replay": 401,
    "forbidden": 403,
    "unavailable": 503,
    "busy": 503,
    "missing_capability": 503,
    "no_capable_peer": 503,
    "wrong_target": 503,  # the peer at that address is another node now; another peer may serve
    "timeout": 504,
    "provider_error": 502,
    "model_unavailable": 503,  # no language model answered (no llm peer, provider down)
}
# A code this node does not know (a newer peer's): the peer failed, so a gateway error.
UNKNOWN_CODE_STATUS = 502


def status_of(code: str) -> int:
    """The HTTP status of wire code ``code``."""
    return STATUS.get(code, UNKNOWN_CODE_STATUS)


class MnemonetError(Exception):
    """Root of every error mnemonet raises on purpose; ``code`` travels on the wire."""

    code: str = "internal"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status of this error's wire code."""
        return status_of(self.code)


class InvalidInput(MnemonetError, ValueError):
    """The caller's input is wrong (the message names the field).

    A ``ValueError``, so pydantic validators can raise it (pydantic wraps it in a ``ValidationError``).
    """

    code = "bad_input"


class NotFound(MnemonetError):
    """What the caller names does not exist."""

    code = "not_found"


class Conflict(MnemonetError):
    """An id already used with different content: never a silent drop."""

    code = "conflict"


class Unauthorised(MnemonetError):
    """Missing or wrong credentials."""

    code = "unauthorized"


class Forbidden(MnemonetError):
    """Valid credentials that do not allow this call."""

    code = "forbidden"


class Unavailable(MnemonetError):
    """A dependency or peer cannot serve now; another may."""

    code = "unavailable"


class Busy(Unavailable):
    """Too many requests in flight, or a rate limit reached: retry after ``retry_after`` seconds (or elsewhere)."""

    code = "busy"

    def __init__(self, message: str = "", retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Timeout(MnemonetError):
    """No answer within the time allowed."""

    code = "timeout"


class ProviderFailed(MnemonetError):
    """A language-model or embedding provider failed after its own bounded retries."""

    code = "provider_error"


@dataclass(frozen=True)
class WireError:
    """How an exception is told to a caller: wire code, HTTP status and a message safe to show."""

    code: str
    status: int
    message: str


def describe(exc: BaseException, request_id: str | None = None) -> WireError:
    """The wire form of ``exc``; anything unexpected is ``internal`` with only the request id, never its text."""
    if isinstance(exc, MnemonetError):
        return WireError(exc.code, exc.status, exc.message)
    if isinstance(exc, ValidationError):
        # pydantic refusing the caller's arguments (a validator's InvalidInput arrives wrapped like this).
        return WireError(InvalidInput.code, status_of(InvalidInput.code), _validation_message(exc))
    where = f" (request id {request_id})" if request_id else ""
    return WireError(MnemonetError.code, status_of(MnemonetError.code), f"internal error{where}")


def is_expected(exc: BaseException) -> bool:
    """True for errors a caller should see as such; False for a bug (logged with its stack, answered 500)."""
    return isinstance(exc, MnemonetError | ValidationError)


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or exc.title
    return f"{where}: {first['msg']}"
