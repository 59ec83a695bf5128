"""Which stored statement a sentence names: "the claim that ned likes tea" is ned's liking of tea, or none.

A reference resolves only to a statement with its meaning: the same subject, the same relation (through
the vocabulary's aliases: "ned loves tea" is named by "ned likes tea"), the same polarity, and the
same object, or failing that the one object sharing its words ("green tea" for "tea"). Anything else,
however close a search finds it, is not what was named: the caller refuses, naming the candidates.
"""

from __future__ import annotations

from mnemonet.model.records import normalise_name
from mnemonet.model.views import StatementView
from mnemonet.truth.text import object_words
from mnemonet.truth.vocabulary import Vocabulary


def named(named_as: StatementView, candidates: list[StatementView], vocabulary: Vocabulary) -> list[StatementView]:
    """The candidates ``named_as`` names, best first: the same object (latest wording first), else the
    only ones whose object shares its words; empty when none has its meaning."""
    relation = vocabulary.canonical(named_as.predicate)
    same = [
        s for s in candidates
        if s.summary is None and normalise_name(s.subject) == normalise_name(named_as.subject)
        and vocabulary.canonical(s.predicate) == relation and s.negated == named_as.negated
    ]
    exact = [s for s in same if normalise_name(s.object) == normalise_name(named_as.object)]
    if exact:
        return sorted(exact, key=lambda s: (s.created_at, s.id), reverse=True)
    words = object_words(named_as.object)
    return [s for s in same if words and words & object_words(s.object)]
