"""Input checks shared by every embedding provider."""

from __future__ import annotations

from collections.abc import Sequence

from mnemonet.embed.base import EmbedKind
from mnemonet.model.errors import InvalidInput

_KINDS: tuple[EmbedKind, ...] = ("query", "passage")


def validate_texts(texts: Sequence[str], kind: str, *, max_texts: int, max_chars: int) -> list[str]:
    """Return ``texts`` as a list, or raise ``ValueError`` naming the offending field."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InvalidInput("texts: expected a list of strings")
    if not texts:
        raise InvalidInput("texts: must not be empty")
    if len(texts) > max_texts:
        raise InvalidInput(f"texts: {len(texts)} texts exceed the limit of {max_texts} (setting embed_max_texts)")
    if kind not in _KINDS:
        raise InvalidInput(f"kind: expected one of {_KINDS}, got {kind!r}")
    out: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInput(f"texts[{i}]: expected a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidInput(f"texts[{i}]: must not be blank")
        if len(text) > max_chars:
            raise InvalidInput(
                f"texts[{i}]: {len(text)} characters exceed the limit of {max_chars} (setting max_text_chars)")
        out.append(text)
    return out


def batches(texts: list[str], size: int) -> list[list[str]]:
    """Split ``texts`` into consecutive batches of at most ``size``."""
    return [texts[i : i + size] for i in range(0, len(texts), size)]
