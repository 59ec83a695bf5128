"""The error vocabulary: one root, one wire code and one HTTP status per error class, bugs told apart."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from pydantic import BaseModel, ValidationError, field_validator

import mnemonet
from mnemonet.model import errors
from mnemonet.model.errors import (
    STATUS,
    Busy,
    Conflict,
    Forbidden,
    InvalidInput,
    MnemonetError,
    NotFound,
    ProviderFailed,
    Timeout,
    Unauthorised,
    Unavailable,
    describe,
    is_expected,
    status_of,
)

KINDS: dict[type[MnemonetError], tuple[str, int]] = {
    MnemonetError: ("internal", 500),
    InvalidInput: ("bad_input", 400),
    NotFound: ("not_found", 404),
    Conflict: ("conflict", 409),
    Unauthorised: ("unauthorized", 401),
    Forbidden: ("forbidden", 403),
    Unavailable: ("unavailable", 503),
    Busy: ("busy", 503),
    Timeout: ("timeout", 504),
    ProviderFailed: ("provider_error", 502),
}
# Classes whose code is the one a message carries, not the class's own.
PER_INSTANCE_CODES = {
    "EnvelopeError": ("too_large", "malformed", "invalid", "bad_tag", "stale", "replay"),
    "RemoteError": (),  # a peer's code: whatever it is, status_of answers (502 for one this node does not know)
}


def _all_error_classes() -> list[type[MnemonetError]]:
    # Import every module so every subclass is defined, then walk the tree from the root.
    for info in pkgutil.walk_packages(mnemonet.__path__, "mnemonet."):
        importlib.import_module(info.name)
    found: list[type[MnemonetError]] = []
    todo: list[type[MnemonetError]] = [MnemonetError]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


def _kind(cls: type[MnemonetError]) -> type[MnemonetError]:
    return next(base for base in cls.__mro__ if base in KINDS)


def test_the_kinds_have_their_codes_and_statuses() -> None:
    for cls, (code, status) in KINDS.items():
        assert (cls.code, status_of(cls.code)) == (code, status), cls.__name__
    assert issubclass(InvalidInput, ValueError)  # so pydantic validators can raise it


def test_every_error_class_has_one_code_and_the_status_of_its_kind() -> None:
    classes = _all_error_classes()
    names = {cls.__name__ for cls in classes}
    # The layers' own errors are in the tree (an import that dropped out would make this test vacuous).
    assert {"LanguageModelError", "PromptError", "EmbeddingError", "GraphStoreError", "UnknownReference",
            "SecretRefused", "UnknownMethod", "NoCapablePeer", "EnvelopeError", "RemoteError"} <= names
    declared: dict[str, str] = {}
    for cls in classes:
        assert cls.code in STATUS, f"{cls.__name__}: code {cls.code!r} is not in the table"
        assert status_of(cls.code) == status_of(_kind(cls).code), f"{cls.__name__}: status differs from its kind"
        if "code" in vars(cls):
            # One class per code, so a code read off the wire names one class.
            assert declared.setdefault(cls.code, cls.__name__) == cls.__name__, f"code {cls.code!r} declared twice"
    for name, codes in PER_INSTANCE_CODES.items():
        assert name in names
        assert all(code in STATUS for code in codes)


def test_specific_errors_sit_under_the_right_kind() -> None:
    from mnemonet.embed.errors import EmbeddingError
    from mnemonet.llm.errors import LanguageModelError, PromptError
    from mnemonet.model.secrets import SecretRefused
    from mnemonet.p2p import errors as p2p
    from mnemonet.store.graph_errors import GraphStoreError, ReadOnlyViolation, UnknownReference

    expected = {
        LanguageModelError: ProviderFailed, EmbeddingError: ProviderFailed, PromptError: MnemonetError,
        GraphStoreError: Unavailable, ReadOnlyViolation: InvalidInput, UnknownReference: InvalidInput,
        SecretRefused: InvalidInput, p2p.UnknownMethod: NotFound, p2p.NoCapablePeer: Unavailable,
        p2p.MissingCapability: Unavailable, p2p.Busy: Busy, p2p.RequestTimeout: Timeout,
        p2p.Unauthorized: Unauthorised,
    }
    assert {cls: _kind(cls) for cls in expected} == expected


def test_describe_hides_a_bug_and_shows_input_errors() -> None:
    bug = describe(ValueError("cannot open /srv/secret/path"), request_id="r-123")
    assert (bug.code, bug.status) == ("internal", 500)
    assert "secret" not in bug.message and "r-123" in bug.message
    assert not is_expected(ValueError("x")) and not is_expected(KeyError("x"))

    refused = describe(InvalidInput("text: must not be empty"))
    assert (refused.code, refused.status, refused.message) == ("bad_input", 400, "text: must not be empty")

    class Args(BaseModel):
        limit: int

        @field_validator("limit")
        @classmethod
        def _positive(cls, v: int) -> int:
            if v < 1:
                raise InvalidInput("limit: must be at least 1")
            return v

    for bad in ({"limit": "many"}, {"limit": 0}):
        with pytest.raises(ValidationError) as caught:
            Args.model_validate(bad)
        wire = describe(caught.value)
        assert (wire.code, wire.status) == ("bad_input", 400) and wire.message.startswith("limit: ")
        assert is_expected(caught.value)


def test_unknown_codes_from_a_newer_peer_are_a_gateway_error() -> None:
    assert status_of("something_new") == errors.UNKNOWN_CODE_STATUS == 502
