"""The error of a write whose idempotency key was already used for other content."""

from __future__ import annotations

from mnemonet.model.errors import Conflict


class IdempotencyConflict(Conflict):
    """A client-made id (idempotency key) reused with different content: a conflict, never a silent drop.

    The wire code is ``conflict`` (HTTP 409); the message names the stored id so the caller can
    read what is there.
    """

    def __init__(self, field: str, stored_id: str) -> None:
        self.field = field
        self.stored_id = stored_id
        super().__init__(f"{field}: idempotency key already used for different content (stored id {stored_id}); "
                         "use a new key for new content")
