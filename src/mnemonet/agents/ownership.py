"""Who owns an item: rendezvous (highest-random-weight) hashing over the live workers of one capability.

Every worker computes the same owner from the same member list, with no
coordination; when a worker joins or dies only the items it owned (or now
owns) move, about 1/N of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable


def _weight(member: str, item_id: str) -> int:
    digest = hashlib.blake2b(f"{member}\x1f{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_owner(item_id: str, members: Iterable[str]) -> str | None:
    """The member with the highest weight for ``item_id`` (ties broken by id); None without members."""
    best: tuple[int, str] | None = None
    for member in members:
        key = (_weight(member, item_id), member)
        if best is None or key > best:
            best = key
    return best[1] if best is not None else None


class Ownership:
    """Decides whether this worker owns an item, against the current live members of its capability.

    ``members`` is called on every decision, so a membership change applies at once.
    """

    def __init__(self, self_id: str, members: Callable[[], Iterable[str]]) -> None:
        if not self_id:
            raise ValueError("self_id: must not be empty")
        self.self_id = self_id
        self._members = members

    @classmethod
    def solo(cls, self_id: str) -> Ownership:
        """A worker alone: it owns everything."""
        return cls(self_id, lambda: (self_id,))

    def owner(self, item_id: str) -> str:
        """The owner of ``item_id``; this worker counts as live even before gossip lists it."""
        members = set(self._members()) | {self.self_id}
        owner = rendezvous_owner(item_id, members)
        assert owner is not None  # never empty: self is in it
        return owner

    def owns(self, item_id: str) -> bool:
        """True if this worker should process ``item_id``."""
        return self.owner(item_id) == self.self_id
