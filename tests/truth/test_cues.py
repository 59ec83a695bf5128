"""The cue words by which words say that what was said before no longer holds (``truth.cues``)."""

from __future__ import annotations

import pytest

from mnemonet.truth.cues import revision_cue, says_ended


@pytest.mark.parametrize(("text", "cue"), [
    ("scratch that, it's Dr Okonkwo", "correction"),
    ("wait no, I got that wrong, it's The Black Horse", "correction"),
    ("sorry, I'm now in Leeds", "correction"),  # a correction outranks a change
    ("I'm on Vite now", "change"),
    ("been doing Babbel instead", "change"),
    ("the company has moved everyone onto Microsoft Teams as of this week", "change"),  # what holds from a time on
    ("standups are at 9:30 going forward", "change"),
    ("nowhere near done", None),  # whole words only
    ("I live in Leeds", None),
])
def test_the_cue_of_a_correction_or_a_change(text: str, cue: str | None) -> None:
    assert revision_cue(text) == cue


@pytest.mark.parametrize(("text", "ended"), [
    ("sad news, Café Lindqvist closed its doors for good", True),
    ("the council scrapped the 42", True),
    ("the match was called off", True),
    ("the café is closest to the station", False),
    ("I'm selling my keyboard", False),
])
def test_the_cue_of_an_end(text: str, ended: bool) -> None:
    assert says_ended(text) is ended
