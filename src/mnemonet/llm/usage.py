"""Per-provider usage counters, read by ``LanguageModel.usage()`` and the call-budget tests."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Usage:
    """Counts since the provider was made. ``calls`` counts public method calls, not HTTP requests."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    requests: int = 0
    retries: int = 0
    failures: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
