"""One retry loop for every remote provider: exponential backoff with jitter, honouring Retry-After."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from mnemonet.llm.errors import LanguageModelUnavailable

T = TypeVar("T")


class Retryable(Exception):
    """Raised by one attempt when trying again may help (429, 5xx, timeout, connection error)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def is_retryable_status(status: int) -> bool:
    """429 (rate limit), 408 (request timeout) and every 5xx (incl. Anthropic's 529 overloaded)."""
    return status in (408, 429) or status >= 500


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())


def backoff_delay(attempt: int, base: float, cap: float, retry_after: float | None = None) -> float:
    """Delay before retry number ``attempt`` (0-based): the server's wish if given, else jittered 2^n."""
    if retry_after is not None:
        return min(retry_after, cap)
    # "Equal jitter": between half and all of the exponential step, so retries spread out.
    return min(cap, base * 2**attempt) * random.uniform(0.5, 1.0)


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    what: str,
    max_retries: int,
    base: float,
    cap: float,
    on_retry: Callable[[], None],
) -> T:
    """Run ``attempt`` until it returns, retrying ``Retryable`` failures up to ``max_retries`` times."""
    for n in range(max_retries + 1):
        try:
            return await attempt()
        except Retryable as exc:
            if n == max_retries:
                raise LanguageModelUnavailable(f"{what}: gave up after {n + 1} attempt(s): {exc}") from exc
            delay = backoff_delay(n, base, cap, exc.retry_after)
        on_retry()
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # the loop always returns or raises
