"""How words say that what was said before no longer holds: the cues of a correction, of a change, of an end.

One list for the extraction (the offline model marks each statement of a sentence with its cue as
``revision``) and for the answer (a later turn may say it replaces the one before even when nothing was
extracted from it). A correction outranks a change when a sentence has both. Matched on whole words,
case-insensitively.
"""

from __future__ import annotations

import re

from mnemonet.model.records import Revision

# "sorry, it's Tuesday", "I meant Leeds", "scratch that", "that's wrong": the earlier value was never right.
CORRECTION_CUES = (
    "sorry", "actually", "correction", "corrected", "i meant", "my mistake", "my bad", "mistaken", "wrong",
    "incorrect", "not right", "scratch that", "oops", "to correct", "i misspoke", "no wait", "hold on", "or rather",
)
# "I live in Leeds now", "no longer at Acme", "Babbel instead": the earlier value held, and holds no more; "as of
# this week", "from now on": what holds from a time on.
CHANGE_CUES = ("now", "no longer", "anymore", "any more", "nowadays", "these days", "instead", "since then", "as of",
               "from now on", "going forward")
# "the café closed for good", "the 42 was scrapped", "sold the keyboard": a thing's state ended, as said (the
# offline extraction reads the same states from lemmas: ``llm.offline.lexicon.STATUS_VERBS``).
ENDING_CUES = (
    "closed", "closes", "shut", "shuts", "cancelled", "canceled", "scrapped", "called off", "ended", "finished",
    "expired", "suspended", "discontinued", "broke", "broken", "sold", "stopped", "stops", "quit",
)


def _pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)


_CORRECTION = _pattern(CORRECTION_CUES)
_CHANGE = _pattern(CHANGE_CUES)
_ENDING = _pattern(ENDING_CUES)


def says_correction(text: str) -> bool:
    """Whether ``text`` has a cue of a correction ("sorry", "scratch that", "I got that wrong")."""
    return _CORRECTION.search(text) is not None


def says_change(text: str) -> bool:
    """Whether ``text`` has a cue of a change ("now", "no longer", "instead")."""
    return _CHANGE.search(text) is not None


def says_ended(text: str) -> bool:
    """Whether ``text`` says a thing's state ended ("closed its doors for good", "the 42 was scrapped")."""
    return _ENDING.search(text) is not None


def revision_cue(text: str) -> Revision | None:
    """"correction" or "change" as ``text``'s cues say, the correction first; None without a cue."""
    return "correction" if says_correction(text) else "change" if says_change(text) else None
