"""Secret detection on text before it is stored or sent to a language model (pure, no I/O).

Four detectors, strongest first; a span found by one is not reported again:

1. known token shapes: AWS access key ids, GitHub, Slack, Stripe live,
   Anthropic and OpenAI keys, Google API keys, private key blocks, JWTs,
   and URLs with a password (``scheme://user:pass@host``);
2. credential assignments: ``password=...``, ``api_key: ...``,
   ``token = "..."``, and "my password is ...";
3. a high-entropy token (16+ chars, letters and digits) within a few words
   after token/secret/password/key/bearer/credential;
4. a long high-entropy token anywhere (24+ chars, upper and lower case and
   digits, Shannon entropy >= 4 bits per character).

Decided not to be secrets: UUIDs, hex strings of up to 40 characters (git
SHAs, content hashes) unless right after a secret word, identifiers
(snake_case, camelCase, kebab-case: no digits or one case only), paths,
URLs without a password, version strings, dates, e-mail addresses.
All regular expressions are linear (bounded repetitions, no nesting), and
input longer than ``MAX_SCAN_CHARS`` is refused.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from mnemonet.model.errors import InvalidInput

MAX_SCAN_CHARS = 1_000_000

_KNOWN: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,250}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_live_[A-Za-z0-9]{16,247}")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,250}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{8,2000}")),
    ("url_credentials", re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,100}:[^\s@/]{1,200}@")),
]
_KEYWORD = (
    r"(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)"
)
_ASSIGNMENT = re.compile(
    rf"\b[A-Za-z0-9_.-]{{0,40}}{_KEYWORD}[\"']?\s{{0,5}}[:=]{{1,2}}\s{{0,5}}[\"']?"
    r"(?P<val>[^\s\"',;()\[\]{}<>]{6,500})(?=$|[\s\"',;)])",
    re.I,
)
_SPOKEN = re.compile(
    r"\b(?:password|passcode|passphrase|api key|pin code)\s{1,5}(?:is|was)\s{1,5}(?P<val>\S{4,200})", re.I)
_NEAR = re.compile(
    rf"\b(?:{_KEYWORD}|key|bearer)\b\W{{1,20}}(?:\w{{1,20}}\W{{1,5}}){{0,3}}?(?P<val>[A-Za-z0-9+/_=.-]{{16,500}})", re.I
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,2000}")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_HEX = re.compile(r"^[0-9a-f]+$", re.I)
_PLACEHOLDERS = frozenset({"none", "null", "true", "false", "redacted", "changeme", "required", "optional", "string"})


@dataclass(frozen=True)
class SecretFinding:
    """One suspected secret: its kind and where it is (never its text)."""

    kind: str
    start: int
    end: int


class SecretRefused(InvalidInput):
    """A write was refused because its text appears to contain a secret."""

    def __init__(self, field: str, kinds: list[str]) -> None:
        self.field = field
        self.kinds = kinds
        super().__init__(
            f"{field}: refused, it appears to contain a secret ({', '.join(kinds)}); remove it and try again"
        )


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def _placeholder(value: str) -> bool:
    low = value.lower()
    return low in _PLACEHOLDERS or low.startswith(("$", "%", "os.", "env", "process.env")) or len(set(low)) <= 2


def _looks_random(value: str, *, min_len: int, min_entropy: float, need_mixed_case: bool) -> bool:
    if len(value) < min_len or _UUID.match(value) or entropy(value) < min_entropy:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_lower = any(c.islower() for c in value)
    has_upper = any(c.isupper() for c in value)
    if _HEX.match(value):  # hashes and git SHAs are identifiers; long hex is reported only near a keyword
        return not need_mixed_case and len(value) >= 16 and has_digit
    if need_mixed_case:
        return has_digit and has_lower and has_upper
    return has_digit and (has_lower or has_upper)


def find_secrets(text: str) -> list[SecretFinding]:
    """Every suspected secret in ``text``, ordered by position, spans not overlapping."""
    if not isinstance(text, str):
        raise InvalidInput("text: must be a string")
    if len(text) > MAX_SCAN_CHARS:
        raise InvalidInput(f"text: longer than {MAX_SCAN_CHARS} characters to scan for secrets")
    found: list[SecretFinding] = []

    def add(kind: str, start: int, end: int) -> None:
        if all(end <= f.start or start >= f.end for f in found):
            found.append(SecretFinding(kind, start, end))

    for kind, pattern in _KNOWN:
        for m in pattern.finditer(text):
            add(kind, m.start(), m.end())
    for pattern in (_ASSIGNMENT, _SPOKEN):
        for m in pattern.finditer(text):
            value = m.group("val").strip("\"'")
            if not _placeholder(value) and not _UUID.match(value) and (
                pattern is _SPOKEN or len(value) >= 12 or not value.isalpha() or not value.islower()
            ):
                add("credential_assignment", m.start("val"), m.end("val"))
    for m in _NEAR.finditer(text):
        if _looks_random(m.group("val"), min_len=16, min_entropy=3.0, need_mixed_case=False):
            add("secret_near_keyword", m.start("val"), m.end("val"))
    for m in _TOKEN.finditer(text):
        if _looks_random(m.group(), min_len=24, min_entropy=4.0, need_mixed_case=True):
            add("high_entropy_string", m.start(), m.end())
    return sorted(found, key=lambda f: f.start)


def check_no_secrets(text: str, field: str = "text") -> None:
    """Raise ``SecretRefused`` naming the field and the kinds found (never the secret itself)."""
    findings = find_secrets(text)
    if findings:
        raise SecretRefused(field, sorted({f.kind for f in findings}))
