"""The store's dependency failure: a database that cannot be reached (callers see 503 ``unavailable``)."""

from __future__ import annotations

from mnemonet.model.errors import Unavailable


class DependencyUnavailable(Unavailable):
    """``dependency`` (``graph`` or ``vectors``) did not answer: connection refused or lost, or no reply in time.

    Not the caller's fault and not a bug: the request may succeed later or on
    another store node, so it is answered 503 with the dependency named.
    """

    def __init__(self, dependency: str, message: str) -> None:
        super().__init__(f"{dependency} unavailable: {message}")
        self.dependency = dependency
