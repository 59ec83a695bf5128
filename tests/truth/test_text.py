"""The word normalisation the truth rules match on (``truth.text``): what two words must share to meet."""

from __future__ import annotations

import pytest

from mnemonet.truth.text import fold, terms


@pytest.mark.parametrize(("a", "b"), [
    ("goes", "go"),  # not "goe"
    ("under-12s", "under-12"),  # a number's plural
    ("jobs", "work"),  # one idea, two words
    ("smoking", "smokes"),
    ("Lucía", "lucia"),  # a name written with or without its accent
])
def test_words_of_one_idea_meet(a: str, b: str) -> None:
    assert terms(a) == terms(b)


@pytest.mark.parametrize(("question", "words"), [
    ("what does Anil do for a living?", {"anil", fold("work")}),  # work, not where he lives
    ("what is my job these days?", {"user", fold("job")}),
    ("how far do I run each week?", {"far", fold("run"), "user", fold("week")}),
    ("who's on call right now?", {fold("call")}),
    ("where is Ana at the moment?", {"ana"}),
    ("is Ifeoma seeing anyone?", {"ifeoma", fold("seeing")}),  # whoever is asked after names no one
])
def test_set_phrases_of_a_question_read_as_the_word_they_mean(question: str, words: set[str]) -> None:
    assert terms(question) == words
