"""Time as data for ranking: the dates a question names, when a candidate was said, whether it states a time.

A question's date is read from its explicit dated phrases first ("on 13
October, 2023", "in December 2023", "in 2022"), which the offline model's
time resolver (``llm/offline/when.py``) turns into an ISO date at the
phrase's precision; failing that, from a relative phrase ("last year"),
resolved against today. A candidate's day is the date in its metadata under
``search_time_key`` when it has one (an imported conversation's session
date: it was recorded long after it was said), else the day it was recorded.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from mnemonet.llm.offline.when import resolve

_MONTH = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
# Phrases that carry their own year: read before any relative phrase of the same question, so
# "last weekend before April 10, 2023" is April 2023 and not last weekend as seen from today.
_DATED = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTH})\.?,? \d{{4}}\b"
    rf"|\b(?:{_MONTH})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b"
    rf"|\b(?:{_MONTH}),? \d{{4}}\b"
    r"|\b(?:in|of|during|since|before|after) (?:19|20)\d{2}\b"
    r"|\b\d{4}-\d{2}(?:-\d{2})?\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\b(?:yesterday|today|tomorrow|ago|last|next|this) ?(?:week|weekend|month|year|summer|winter|spring|"
    r"autumn|fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday)?\b",
    re.IGNORECASE,
)
# The words time phrases are made of (the ones when.py resolves), looked up as a set: resolving
# every candidate's text with when.resolve costs ~70 us each, ~30 ms for a pool of 400, and one
# regular expression of them all ~70 us as well. "may" is left out: mostly the modal verb.
_TIME_WORDS = frozenset({
    "yesterday", "today", "tonight", "tomorrow", "ago", "week", "weeks", "weekend", "weekends", "month", "months",
    "year", "years", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "june", "july", "august", "september", "october", "november", "december",
    "recently", "lately", "earlier", "since", "summer", "winter", "spring", "autumn",
})
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# A text's words are its runs of a-z once lower-cased (as the regular expression [a-z]+ finds them), split out
# of its ASCII bytes, every other character a space: 2.1 against 9.0 us for a 200-character text, for every
# candidate of every search (it was ~1.3 of 3.8 ms of Python a search at 100k, bench/README.md "Search latency,
# round 14").
_TIME_BYTES = frozenset(word.encode() for word in _TIME_WORDS)
_LETTERS_ONLY = bytes(c if ord("a") <= c <= ord("z") else ord(" ") for c in range(256))
_ASKS_WHEN = re.compile(r"^\W*(?:when|how long|since when)\b|\bwhat (?:year|month|date|day|time)\b", re.IGNORECASE)
_ISO = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?")


def question_span(query: str, today: date) -> tuple[date, date] | None:
    """The first and last day of the period ``query`` names, or None when it names none."""
    for match in (*_DATED.finditer(query), *_RELATIVE.finditer(query)):
        phrase = match.group(0)
        resolved = phrase if _ISO.fullmatch(phrase) else resolve(_full_months(phrase), today, past=True)
        span = _span(resolved) if resolved else None
        if span is not None:
            return span
    return None


def asks_when(query: str) -> bool:
    """Whether the question asks for a time ("when ...", "how long ...", "what year ...")."""
    return _ASKS_WHEN.search(query) is not None


def states_time(text: str) -> bool:
    """Whether a text says when something happened (a date, a weekday, "yesterday", "two weeks ago" ...)."""
    words = text.lower().encode("ascii", "replace").translate(_LETTERS_ONLY).split()
    return not _TIME_BYTES.isdisjoint(words) or (("19" in text or "20" in text) and _YEAR.search(text) is not None)


@lru_cache(maxsize=4096)
def said_on(value: str) -> date | None:
    """The day a metadata time value names: ISO 8601, or a written date ("1:56 pm on 8 May, 2023")."""
    iso = _ISO.match(value.strip())
    if iso and iso.group(3):
        try:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
        except ValueError:
            return None
    match = _DATED.search(value)
    resolved = resolve(_full_months(match.group(0)), date.today(), past=True) if match else None
    span = _span(resolved) if resolved else None
    return span[0] if span else None


def recorded_on(created_at_ms: int) -> date:
    """The local day of a row's ``created_at``."""
    return datetime.fromtimestamp(created_at_ms / 1000).date()


def days_apart(day: date, span: tuple[date, date]) -> int:
    """Days from ``day`` to the nearest day of ``span`` (0 inside it)."""
    first, last = span
    if first <= day <= last:
        return 0
    return (first - day).days if day < first else (day - last).days


_SHORT = {"jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june", "jul": "july",
          "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
          "dec": "december"}


def _full_months(phrase: str) -> str:
    """``phrase`` lower-cased with month abbreviations written out (when.py reads full names)."""
    return re.sub(r"\b[a-z]+\b", lambda m: _SHORT.get(m.group(0), m.group(0)), phrase.lower().replace(".", ""))


def _span(iso: str) -> tuple[date, date] | None:
    """The days an ISO date at any precision covers: a year, a month or a day."""
    match = _ISO.match(iso)
    if match is None:
        return None
    year, month, day = (int(g) if g else None for g in match.groups())
    try:
        if month is None:
            return date(year or 1, 1, 1), date(year or 1, 12, 31)
        if day is None:
            first = date(year or 1, month, 1)
            following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
            return first, following - timedelta(days=1)
        return date(year or 1, month, day), date(year or 1, month, day)
    except ValueError:
        return None
