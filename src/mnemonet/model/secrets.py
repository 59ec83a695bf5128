"""Secret detection on text before it is stored or sent to a language model (pure, no I/O).

Four detectors, strongest first; a span found by one is not reported again:

1. known token shapes: AWS access key ids, GitHub, Slack (tokens and
   webhook URLs), Stripe live, Anthropic and OpenAI keys, Google API keys,
   private key blocks (any whitespace in the header, also base64-wrapped
   PEM), JWTs, and URLs with a password (``scheme://user:pass@host``);
2. credential assignments: ``password=...``, ``api_key: ...``,
   ``token = "..."``, "my password is ..." and "the password for db01 is ...",
   and the same in other languages ("das Passwort für db01 ist ...",
   "mot de passe : ...", "contraseña es ...", "senha é ...", "пароль: ...",
   "密码是...", "パスワードは...", "비밀번호는 ..." and more: ``_INTL_WORDS``);
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

import base64
import binascii
import math
import re
from collections import Counter
from dataclasses import dataclass

from mnemonet.model.errors import InvalidInput

MAX_SCAN_CHARS = 1_000_000

_KNOWN: list[tuple[str, re.Pattern[str]]] = [
    # ``\s``, not a space: a non-breaking space in the header must not hide the block.
    ("private_key", re.compile(
        r"-----BEGIN\s{1,3}(?:[A-Z0-9]{1,20}\s{1,3}){0,3}PRIVATE\s{1,3}KEY(?:\s{1,3}BLOCK)?-----")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,250}")),
    ("slack_webhook", re.compile(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,300}")),
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
    r"\b(?:password|passcode|passphrase|api key|pin code)(?:\s{1,5}(?:for|of|on|to)\s{1,5}[\w.@:/-]{1,60})?"
    r"\s{1,5}(?:is|was)\s{1,5}(?P<val>\S{4,200})", re.I)
# Credential words of other languages, then what may stand between the word and its value: a preposition
# with a word or two ("für db01", "de la base"), then a verb ("ist", "est", "es", "é", "是", "は" ...) or
# a separator (":", "=", a spaced dash). Words of scripts without spaces (CJK) need no word boundary.
_INTL_WORDS = (
    r"(?:\b(?:passwort|kennwort|mot\s(?:de\s)?passe|mdp|contrase(?:ñ|n)a|senha|palavra-passe|wachtwoord|"
    r"has(?:ł|l)o|lösenord(?:et)?|passord(?:et)?|adgangskode(?:n)?|salasana|şifre(?:si)?|пароль|паролем)"
    r"|(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호))"
)
_INTL_PREP = r"(?:für|fur|von|zum|zur|de|du|des|pour|del|da|do|para|voor|van|dla|till|för|til|for|от|для|к)"
_INTL_VERB = (r"(?:(?:ist|lautet|war|est|était|es|era|é|és|is|was|to|är|var|er|on|oli|это)(?![^\W\d_])"
              r"|是|为|為|は|는|은)")
_INTL_SEP = r"(?:[:=：]|\s[—–]\s)"
# The value: printable ASCII without quotes, brackets, comma or semicolon (a CJK sentence is no password).
_INTL = re.compile(
    rf"{_INTL_WORDS}(?:\s{{1,3}}{_INTL_PREP}(?:\s{{1,3}}[\w.@:/-]{{1,60}}){{1,2}})?"
    rf"\s{{0,3}}(?:(?P<sep>{_INTL_SEP})|{_INTL_VERB}(?:\s{{0,3}}(?P<sep2>[:：]))?)\s{{0,3}}[\"'«„“「『]?"
    r"(?P<val>[\x21\x23-\x26\x2a\x2b\x2d-\x3a\x3c-\x7e]{4,200})",
    re.I,
)
# Base64 of "-----BEGIN" (a PEM block wrapped once more); the start is decoded to see which block it is.
_BASE64_PEM = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=\s]{20,20000}")
_BASE64_PEM_PREFIX = 96  # base64 characters decoded: enough for the longest BEGIN line
_NEAR = re.compile(
    rf"\b(?:{_KEYWORD}|key|bearer)\b\W{{1,20}}(?:\w{{1,20}}\W{{1,5}}){{0,3}}?(?P<val>[A-Za-z0-9+/_=.-]{{16,500}})",
    re.I,
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


def _password_like(value: str) -> bool:
    """A digit, a symbol or inner capitals: what words of a sentence rarely have and passwords usually do."""
    return (any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)
            or any(c.isupper() for c in value[1:]))


def _wrapped_private_key(blob: str) -> bool:
    compact = "".join(blob.split())[:_BASE64_PEM_PREFIX]
    try:
        head = base64.b64decode(compact[: len(compact) // 4 * 4])
    except (ValueError, binascii.Error):
        return False
    return b"PRIVATE KEY" in head


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
    for m in _BASE64_PEM.finditer(text):
        if _wrapped_private_key(m.group()):
            add("private_key", m.start(), m.end())
    for pattern in (_ASSIGNMENT, _SPOKEN):
        for m in pattern.finditer(text):
            value = m.group("val").strip("\"'")
            if not _placeholder(value) and not _UUID.match(value) and (
                pattern is _SPOKEN or len(value) >= 12 or not value.isalpha() or not value.islower()
            ):
                add("credential_assignment", m.start("val"), m.end("val"))
    for m in _INTL.finditer(text):
        value = m.group("val").rstrip(".!?")
        # After a verb ("das Passwort ist falsch") only a value that looks like a password counts; after
        # ":" or "=" any value that is not a placeholder.
        if len(value) >= 4 and not _placeholder(value) and (m.group("sep") or m.group("sep2") or _password_like(value)):
            add("credential_assignment", m.start("val"), m.start("val") + len(value))
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
