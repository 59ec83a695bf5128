"""Time phrases -> ISO 8601 dates, resolved against the observation's day.

"yesterday", "last year", "next Tuesday", "in 2019", "in March", "July 4th",
"five years ago", "next month"... become a date at the precision the phrase
gives: ``2019`` (a year), ``2026-10`` (a month) or ``2026-11-17`` (a day).
"last week" and "last weekend" are the day a week before; vague words
("recently", "soon", "someday") resolve to nothing.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few) "
    r"(day|week|month|year)s? ago\b"
)
_IN_N = re.compile(
    r"\bin (\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few) "
    r"(day|week|month|year)s?\b"
)
_RELATIVE = re.compile(r"\b(last|next|this|past|coming) (week|weekend|month|year|summer|winter|spring|autumn|fall)\b")
_WEEKDAY = re.compile(r"\b(?:(last|next|this|on|coming) )?(" + "|".join(_WEEKDAYS) + r")\b")
_MONTH_DAY = re.compile(
    r"\b(" + "|".join(_MONTHS) + r") (\d{1,2})(?:st|nd|rd|th)?\b|\b(\d{1,2})(?:st|nd|rd|th)? "
    r"(?:of )?(" + "|".join(_MONTHS) + r")\b"
)
_MONTH = re.compile(r"\b(?:(last|next|this|in) )?(" + "|".join(_MONTHS) + r")\b")
_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")


def resolve(phrase: str, today: date, *, past: bool) -> str | None:
    """The date ``phrase`` names, seen from ``today``; ``past`` picks the direction of a bare
    weekday or month ("on Tuesday I met" is the last Tuesday, "on Tuesday I will" the next)."""
    low = " ".join(phrase.lower().split())
    if not low:
        return None
    if re.search(r"\byesterday\b", low):
        return _day(today - timedelta(days=1))
    if re.search(r"\btomorrow\b", low):
        return _day(today + timedelta(days=1))
    if re.search(r"\b(today|tonight|this morning|this afternoon|this evening)\b", low):
        return _day(today)
    m = _AGO.search(low)
    if m:
        return _shift(today, -_count(m.group(1)), m.group(2))
    m = _IN_N.search(low)
    if m:
        return _shift(today, _count(m.group(1)), m.group(2))
    m = _RELATIVE.search(low)
    if m:
        return _relative(today, m.group(1), m.group(2))
    m = _MONTH_DAY.search(low)
    if m:
        month = _MONTHS.index(m.group(1) or m.group(4)) + 1
        day = int(m.group(2) or m.group(3))
        year = _year_of(today, month, day, past, explicit=_YEAR.search(low))
        try:
            return date(year, month, day).isoformat()
        except ValueError:
            return None
    m = _WEEKDAY.search(low)
    if m:
        return _weekday(today, m.group(1), _WEEKDAYS.index(m.group(2)), past)
    m = _MONTH.search(low)
    if m and not (m.group(2) == "may" and m.group(1) is None):  # a bare "may" is the modal verb
        month = _MONTHS.index(m.group(2)) + 1
        which = m.group(1)
        explicit = _YEAR.search(low)
        if explicit:
            year = int(explicit.group(1))
        elif which == "last" or (which != "next" and past):
            year = today.year if month < today.month else today.year - 1
        else:
            year = today.year if month >= today.month else today.year + 1
        return f"{year:04d}-{month:02d}"
    m = _YEAR.search(low)
    if m:
        return m.group(1)
    return None


def _day(d: date) -> str:
    return d.isoformat()


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _shift(today: date, n: int, unit: str) -> str:
    if unit == "year":
        return f"{today.year + n:04d}"
    if unit == "month":
        index = today.year * 12 + today.month - 1 + n
        return f"{index // 12:04d}-{index % 12 + 1:02d}"
    return _day(today + timedelta(days=n * _UNIT_DAYS[unit]))


def _relative(today: date, which: str, unit: str) -> str:
    step = {"last": -1, "past": -1, "next": 1, "coming": 1, "this": 0}[which]
    if unit in ("week", "weekend"):
        return _day(today + timedelta(days=7 * step))
    if unit == "month":
        return _shift(today, step, "month")
    return f"{today.year + step:04d}"  # a year or a season: the year is all the phrase pins down


def _weekday(today: date, which: str | None, weekday: int, past: bool) -> str:
    ahead = (weekday - today.weekday()) % 7 or 7
    if which in ("next", "coming") or (which in (None, "on", "this") and not past):
        return _day(today + timedelta(days=ahead))
    behind = (today.weekday() - weekday) % 7 or 7
    return _day(today - timedelta(days=behind))


def _year_of(today: date, month: int, day: int, past: bool, explicit: re.Match[str] | None) -> int:
    if explicit:
        return int(explicit.group(1))
    this_year = (month, day) <= (today.month, today.day)
    if past:
        return today.year if this_year else today.year - 1
    return today.year if not this_year or (month, day) == (today.month, today.day) else today.year + 1
