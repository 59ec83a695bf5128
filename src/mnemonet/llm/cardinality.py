"""How many current values a predicate has per subject, by a naming rule (the offline model's answer).

Providers that talk to a real model ask it (``prompts/validation/cardinality.yaml``);
the offline model decides by this documented rule, first match wins:

1. verbs of relationships, experiences and feelings are ``multi``: ``likes``, ``knows``,
   ``visited``, ``owns``, ``speaks``, ``has_child``, ``has_friend``, ``has_skill`` ...
2. ``has_*`` (an attribute: ``has_manager``, ``has_email``, ``has_phone``) is ``single``;
3. location and employment predicates ending ``_at``, ``_in``, ``_for`` (``works_at``,
   ``lives_in``, ``reports_to``, ``drives``) are ``single``;
4. anything else is ``multi`` (two values are then no conflict unless the model says so).
"""

from __future__ import annotations

from typing import Literal

PredicateCardinality = Literal["single", "multi"]

_MULTI_WORDS = frozenset({
    "likes", "loves", "enjoys", "dislikes", "hates", "knows", "met", "visited", "visits", "owns", "speaks",
    "reads", "read", "watched", "plays", "uses", "wants", "needs", "attended", "wrote", "bought", "ate",
    "mentioned", "prefers", "interested", "friend", "friends", "child", "children", "skill", "skills",
    "hobby", "hobbies", "pet", "pets", "sibling", "siblings", "member", "tag", "tags",
})
_SINGLE_SUFFIXES = ("_at", "_in", "_for", "_to")
_SINGLE_VERBS = frozenset({"drives", "reports_to", "is_called", "called", "named", "aged"})


def rule_cardinality(predicate: str) -> PredicateCardinality:
    """The naming rule above, for a canonical (lower-case, underscored) predicate."""
    words = predicate.lower().split("_")
    if any(w in _MULTI_WORDS for w in words):
        return "multi"
    if predicate.startswith("has_") or predicate in _SINGLE_VERBS:
        return "single"
    if predicate.endswith(_SINGLE_SUFFIXES):
        return "single"
    return "multi"
