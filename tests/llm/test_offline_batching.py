"""The offline parser's batches (``llm/offline/nlp.py``): a text parsed with others reads exactly as it
reads alone, one refused text fails only its own caller, and a caller that gave up is not parsed."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from mnemonet.llm import OfflineLanguageModel
from mnemonet.llm.offline import nlp
from mnemonet.settings import Settings

TODAY = date(2026, 11, 23)
GOLD = Path(__file__).resolve().parent / "gold_offline.yaml"
# Beside the gold table's chat turns: cues, lead-ins, questions, odd characters, several sentences in one text.
EXTRA: list[tuple[str, str]] = [
    ("Correction: based on what she said, Jenna prefers email.", "Sam"),
    ("No, wait - my manager is Tom, not Sarah. He started in March.", "Sam"),
    ("Do you like tea?", "Sam"),
    ("ok", "Sam"),
    ("🙂 I loooove the café on Rua Augusta!!!", "Ana"),
    ("Actually I hate mornings, afternoon is better", "user"),
    ("...", "user"),
    ("Tomorrow Alice works from home; Bob doesn't. They used to share an office in Berlin.", "Sam"),
]
# A batch no test fills by waiting: it closes when the last text arrives (asserted through nlp.stats()).
PATIENT = 30.0


def _texts() -> list[tuple[str, str]]:
    cases = yaml.safe_load(GOLD.read_text())["cases"]
    texts = [(c["text"], c["speaker"]) for c in cases] + EXTRA
    long_text = " ".join(t for t, _ in texts[:60])  # a few thousand characters, many sentences
    return [*texts, (long_text, "Sam")]


def _annotations(doc: Any) -> list[tuple[Any, ...]]:
    return [
        (t.text, t.tag_, t.pos_, t.dep_, t.head.i, t.lemma_, t.ent_iob_, t.ent_type_, t.is_sent_start) for t in doc
    ]


async def test_a_batch_annotates_each_text_as_a_parse_of_it_alone() -> None:
    texts = [t for t, _ in _texts()]
    settings = Settings(offline_parse_batch_max=len(texts), offline_parse_batch_wait=PATIENT)
    alone = [_annotations(nlp.pipeline()(t)) for t in texts]  # the one-at-a-time path: nlp(text)
    batches, parsed = nlp.stats()
    docs = await asyncio.gather(*(nlp.parse(t, settings) for t in texts))
    assert nlp.stats() == (batches + 1, parsed + len(texts))  # one batch of every text
    for text, doc, expected in zip(texts, docs, alone, strict=True):
        assert doc.text == text
        assert _annotations(doc) == expected, text


async def test_batched_extraction_gives_the_triples_of_one_at_a_time() -> None:
    texts = _texts()
    one_at_a_time = OfflineLanguageModel(Settings(offline_parse_batch_max=1), today=lambda: TODAY)
    batched = OfflineLanguageModel(
        Settings(offline_parse_batch_max=len(texts), offline_parse_batch_wait=PATIENT), today=lambda: TODAY
    )
    batches, parsed = nlp.stats()
    expected = [await one_at_a_time.extract_observation(t, s, infer=True) for t, s in texts]
    assert nlp.stats() == (batches + len(texts), parsed + len(texts))
    got = await asyncio.gather(*(batched.extract_observation(t, s, infer=True) for t, s in texts))
    assert nlp.stats() == (batches + len(texts) + 1, parsed + 2 * len(texts))
    assert sum(len(e.statements) for e in expected) > len(texts)  # the comparison is of real readings
    for (text, _), e, g in zip(texts, expected, got, strict=True):
        assert g == e, text


async def test_a_text_spacy_refuses_fails_only_its_own_caller() -> None:
    settings = Settings(offline_parse_batch_max=3, offline_parse_batch_wait=PATIENT)
    pipeline = nlp.pipeline()
    limit = pipeline.max_length
    pipeline.max_length = 40
    try:
        results = await asyncio.gather(
            nlp.parse("I like tea", settings),
            nlp.parse("I really do like a very long sentence about tea and coffee", settings),
            nlp.parse("Bob works at Acme", settings),
            return_exceptions=True,
        )
    finally:
        pipeline.max_length = limit
    short, refused, other = results
    assert isinstance(refused, ValueError) and "max_length" in str(refused)
    assert [t.text for t in short] == ["I", "like", "tea"]  # type: ignore[union-attr]
    assert [t.ent_type_ for t in other][:1] == ["PERSON"]  # type: ignore[union-attr]


async def test_a_caller_that_gave_up_is_not_parsed() -> None:
    settings = Settings(offline_parse_batch_max=2, offline_parse_batch_wait=PATIENT)
    batches, parsed = nlp.stats()
    gave_up = asyncio.ensure_future(nlp.parse("I like tea", settings))
    await asyncio.sleep(0)  # one turn of the loop (not a timed wait): the task's first step queues its text
    gave_up.cancel()
    await asyncio.wait([gave_up])  # done once the cancel has reached the queued request
    with pytest.raises(asyncio.CancelledError):
        await gave_up
    doc = await nlp.parse("Bob works at Acme", settings)  # the second text closes the batch
    assert doc.text == "Bob works at Acme"
    assert nlp.stats() == (batches + 1, parsed + 1)


async def test_a_reading_runs_on_the_parser_thread_and_its_failure_is_its_callers_alone() -> None:
    settings = Settings(offline_parse_batch_max=3, offline_parse_batch_wait=PATIENT)

    def fails(doc: Any) -> None:
        raise KeyError(doc.text)

    def where(doc: Any) -> tuple[str, str]:
        import threading

        return doc.text, threading.current_thread().name

    results = await asyncio.gather(
        nlp.read("I like tea", settings, where), nlp.read("Bob works at Acme", settings, fails),
        nlp.parse("We moved to Porto", settings), return_exceptions=True,
    )
    read, failed, parsed = results
    assert read == ("I like tea", "mnemonet-offline-parser")  # no hand-over to another thread
    assert isinstance(failed, KeyError)
    assert [t.text for t in parsed][-1:] == ["Porto"]  # type: ignore[union-attr]
