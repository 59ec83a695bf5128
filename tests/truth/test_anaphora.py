"""Whom a turn's "he" or "she" stands for (``truth.anaphora``), and the answers that follow from it."""

from __future__ import annotations

import pytest

from mnemonet.model.api import Recall
from mnemonet.model.views import ObservationView, StatementView
from mnemonet.settings import Settings
from mnemonet.truth.anaphora import bind
from mnemonet.truth.answer import compose
from mnemonet.truth.text import ABOUT
from mnemonet.truth.vocabulary import default_vocabulary


def _obs(id_: str, text: str, at: int, source: str = "user") -> ObservationView:
    return ObservationView(id=id_, text=text, source=source, created_at=at)


def _st(id_: str, subject: str, predicate: str, obj: str, origin: str, source: str = "user") -> StatementView:
    return StatementView(id=id_, subject=subject, predicate=predicate, object=obj, confidence=0.9, created_at=1,
                         source=source, derived_from=[origin])


@pytest.mark.parametrize(("first", "drawn", "second", "about"), [
    # the one person the speaker's turn before is about, by its statements or else its one name
    ("Keisha is a junior designer", [("Keisha", "is_a", "junior designer")], "she got bumped up to senior", "Keisha"),
    ("my sister lives in Bristol", [("user's sister", "lives_in", "Bristol")], "she's moved to Edinburgh",
     "user's sister"),
    ("ran into Tomasz at the market", [], "he says hi", "Tomasz"),
    # no one, or two people, before: no one
    ("I live in Leeds", [("user", "lives_in", "Leeds")], "she's moved to Edinburgh", None),
    ("Ana met Tom", [("Ana", "meets", "Tom"), ("Tom", "likes", "jazz")], "she's moved to Edinburgh", None),
    # no he or she: nothing to bind
    ("Keisha is a junior designer", [("Keisha", "is_a", "junior designer")], "the studio moved to Leith", None),
])
def test_he_or_she_is_the_one_person_of_the_speaker_s_turn_before(
    first: str, drawn: list[tuple[str, str, str]], second: str, about: str | None,
) -> None:
    said = [_obs("obs-1", first, 1), _obs("obs-2", second, 2)]
    statements = {"obs-1": [_st(f"st-{i}", *t, origin="obs-1") for i, t in enumerate(drawn)]}
    assert bind(said, statements)[1].metadata.get(ABOUT) == about


def test_another_speaker_s_turn_is_not_the_turn_before() -> None:
    said = [_obs("obs-1", "Keisha is a junior designer", 1, source="bob"), _obs("obs-2", "she got promoted", 2)]
    assert ABOUT not in bind(said, {})[1].metadata


def test_a_change_said_of_he_or_she_restates_the_person_s_slot() -> None:
    title = _st("st-1", "Keisha", "is_a", "junior designer at Figtree Studio", origin="obs-1")
    said = [_obs("obs-1", "Keisha is a junior designer at Figtree Studio", 1),
            _obs("obs-2", "she got bumped up to senior designer last week, so proud of her", 2)]
    composed = compose(Recall(query="what's Keisha's job title?", statements=[title], observations=said), 5,
                       default_vocabulary(), Settings())
    assert "senior designer" in composed.lead and composed.lead_id == "obs-2"
