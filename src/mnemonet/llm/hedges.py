"""How sure a speaker sounds: the hedge table shared by every provider.

The offline model reads it with ``hedge_confidence``; the prompts for Claude
and OpenAI-compatible models state the same numbers in words, so a statement
gets the same confidence whichever model extracted it. No hedge at all is
0.9 (``NO_HEDGE``): plain speech is not proof.
"""

from __future__ import annotations

import re

NO_HEDGE = 0.9

# Phrase -> confidence. Shared with the model prompts: change both together.
HEDGES: dict[str, float] = {
    "definitely": 0.95,
    "certainly": 0.95,
    "surely": 0.95,
    "for sure": 0.95,
    "confirmed": 0.95,
    "probably": 0.7,
    "likely": 0.7,
    "i think": 0.7,
    "i believe": 0.7,
    "i guess": 0.7,
    "maybe": 0.5,
    "perhaps": 0.5,
    "possibly": 0.5,
    "might": 0.5,
    "may": 0.5,
    "could": 0.5,
    "unlikely": 0.3,
    "i doubt": 0.3,
}

# "unlikely" must not also count as "likely": whole words only, longest phrase first.
_PATTERN = re.compile(
    r"\b(" + "|".join(re.escape(p) for p in sorted(HEDGES, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def hedge_confidence(text: str) -> float | None:
    """The confidence the hedges in ``text`` express (the weakest wins), or None without a hedge.

    "May" with a capital is the month ("my birthday is in May"), not a hedge;
    a sentence-initial "May I ..." is a question, which asserts nothing anyway.
    """
    found = [
        HEDGES[m.group(1).lower()]
        for m in _PATTERN.finditer(text)
        if not (m.group(1).lower() == "may" and m.group(1) != "may")
    ]
    return min(found) if found else None
