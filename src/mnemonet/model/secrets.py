"""Secret detection on text before it is stored or sent to a language model (pure, no I/O).

Four detectors, strongest first; a span found by one is not reported again:

1. known token shapes: AWS access key ids (also spaced out, "AKIA IOSF
   ..."), GitHub, Slack (tokens and webhook URLs), Stripe live, Anthropic and
   OpenAI keys, Google API keys, private key blocks (any whitespace in the
   header, also base64-wrapped PEM), JWTs, and URLs with a password
   (``scheme://user:pass@host``, the user may be empty);
2. credential assignments: ``password=...``, ``api_key: ...``,
   ``token = "..."``, and credentials in a sentence however it is punctuated
   or abbreviated: "my password is hunter2", "my password is: hunter2",
   "my password's hunter2", "my pw is hunter2", "password hunter2",
   "the password for db01 is ...", "PIN 4821", and the same in other
   languages ("das Passwort für db01 ist ...", "mot de passe : ...",
   "contraseña es ...", "senha é ...", "пароль: ...", "密码是...",
   "パスワードは...", "비밀번호는 ..." and more: ``_INTL_WORDS``). What follows
   a credential word must look like one: with no verb or separator between
   them ("password hunter2"), letters and digits; after one, a digit, a
   symbol or inner capitals, or a lone word ending the clause that is not a
   word describing the password ("my password is sunshine", but not "my
   password is wrong", "... was stolen in 2019", "... is case-sensitive");
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
    # Spaced out or grouped ("AKIA IOSF ODNN 7EXA MPLE", "A K I A ..."): one separator between any two
    # characters. Capitals in a row of words can take this shape, so it also needs a digit (``_spaced_key``).
    ("aws_access_key", re.compile(
        r"\bA[ ._-]?(?:K[ ._-]?I|S[ ._-]?I|G[ ._-]?P|I[ ._-]?D|R[ ._-]?O|N[ ._-]?P|N[ ._-]?V|I[ ._-]?P)[ ._-]?A"
        r"(?:[ ._-]?[A-Z0-9]){16}(?![A-Z0-9])")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,250}")),
    ("slack_webhook", re.compile(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,300}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_live_[A-Za-z0-9]{16,247}")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,250}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{8,2000}")),
    # The user may be empty (``redis://:pass@host``) and the scheme one letter.
    ("url_credentials", re.compile(r"\b[a-z][a-z0-9+.-]{0,20}://[^\s:/@]{0,100}:[^\s@/]{1,200}@")),
]
_KEYWORD = (
    r"(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)"
)
_ASSIGNMENT = re.compile(
    rf"\b[A-Za-z0-9_.-]{{0,40}}{_KEYWORD}[\"']?\s{{0,5}}[:=]{{1,2}}\s{{0,5}}[\"']?"
    r"(?P<val>[^\s\"',;()\[\]{}<>]{6,500})(?=$|[\s\"',;)])",
    re.I,
)
# A credential word of English as people type it, abbreviated too; then what it is for ("for db01", "of the
# vpn"); then a separator (":", "=", "->", a spaced dash), a verb (maybe with a separator: "is:"), a
# possessive ("password's") or nothing ("password hunter2"); then the value, maybe quoted.
_EN_WORDS = (r"(?:pass(?:words?|wd|wrd|phrases?|codes?)?|pass\s(?:word|phrase)|pws?|pwd|pswd|p/w|"
             r"pins?(?:\s(?:code|number))?|creds|credentials|api\s?keys?|secret\s?keys?|access\s?keys?|"
             r"auth\s?tokens?|tokens?)")
_SPOKEN = re.compile(
    rf"\b(?P<word>{_EN_WORDS})(?![\w/])(?:\s{{1,3}}(?:for|of|on|to|at|in)(?:\s{{1,3}}[\w.@/-]{{1,60}}){{1,2}})?"
    r"(?:\s{0,3}(?P<sep>[:=：]|->|=>|→|\s-{1,2}|\s[—–])\s{0,3}"
    r"|\s{1,3}(?:is|was|are|were)(?:\s{1,3}(?:now|still|changed\sto|set\sto))?"
    r"(?:\s{0,3}(?P<vsep>[:=：—–])\s{0,3}|\s{1,3})"
    r"|(?P<poss>['’]s)\s{1,3}"
    r"|(?P<bare>\s{1,3}))"
    r"[\"'“‘«]?(?P<val>[^\s\"'“”‘’«»,;()\[\]{}<>]{4,200})",
    re.I,
)
# Words that say what a password is like, not what it is: "my password is wrong", "... was stolen".
_DESCRIBING = frozenset("""
    wrong right correct incorrect invalid valid weak strong short long simple complex secure insecure safe unsafe
    required optional needed mandatory empty blank same different new old hard easy good great bad fine okay gone
    lost stolen expired changed reset saved stored hidden visible known unknown taken missing leaked compromised
    locked unlocked encrypted hashed protected shared private public secret important useless ready there here
    mine yours hers ours theirs unique random generated temporary permanent default also still just really quite
    very too not never always written printed somewhere elsewhere nowhere what which where this that these those
    case sensitive something anything nothing everything""".split())
_DESCRIBING_ENDS = ("ed", "ing", "ly", "ful", "less", "ous", "ive", "able", "ible", "ent", "ant", "al")
_CLAUSE_ENDS = frozenset(".,;:!?)]\"'”’»\n")
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+", re.I)
# Credential words of other languages, then what may stand between the word and its value: a preposition
# with a word or two ("für db01", "de la base"), then a verb ("ist", "est", "es", "é", "是", "は" ...) or
# a separator (":", "=", a spaced dash). Words of scripts without spaces (CJK) need no word boundary.
_INTL_WORDS = (
    r"(?:\b(?:passwort|kennwort|mot\s(?:de\s)?passe|mdp|contrase(?:ñ|n)a|senha|palavra-passe|wachtwoord|"
    r"has(?:ł|l)o|lösenord(?:et)?|passord(?:et)?|adgangskode(?:n)?|salasana|şifre(?:si)?|пароль|паролем)"
    r"|(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호))"
)
_INTL_PREP = r"(?:für|fur|von|zum|zur|de|du|des|pour|del|da|do|para|voor|van|dla|till|för|til|for|от|для|к)"
_INTL_VERB = (r"(?:(?:ist|lautet|war|est|c['’]est|était|es|era|é|és|is|was|to|är|var|er|on|oli|это)(?![^\W\d_])"
              r"|是|为|為|は|는|은)")
_INTL_SEP = r"(?:[:=：]|\s[—–]\s)"
# The value: printable ASCII without quotes, brackets, comma or semicolon (a CJK sentence is no password).
# Nothing between word and value ("пароль qwerty123", "密码 hunter22") is ``bare``: the value must then hold
# letters and digits, as after an English word.
_INTL = re.compile(
    rf"{_INTL_WORDS}(?:\s{{1,3}}{_INTL_PREP}(?:\s{{1,3}}[\w.@:/-]{{1,60}}){{1,2}})?"
    rf"(?:\s{{0,3}}(?:(?P<sep>{_INTL_SEP})|{_INTL_VERB}(?:\s{{0,3}}(?P<sep2>[:：]))?)\s{{0,3}}|(?P<bare>\s{{1,3}}))"
    r"[\"'«„“「『]?(?P<val>[\x21\x23-\x26\x2a\x2b\x2d-\x3a\x3c-\x7e]{4,200})",
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


def _letters_and_digits(value: str) -> bool:
    """What a credential typed after its word with nothing between them has: letters and digits (not a
    version number)."""
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and _VERSION.fullmatch(value) is None)


def _spoken_credential(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The span of the value a ``_SPOKEN`` match names, if it looks like a credential (module docstring, 2.)."""
    value = m.group("val").rstrip(".!?:")
    start = m.start("val")
    end = start + len(value)
    if len(value) < 4 or _placeholder(value) or _UUID.match(value):
        return None
    if m.group("bare") is not None:
        # A PIN or passcode is digits alone ("PIN 4821"); after any other word digits alone are a count.
        pin = m.group("word").lower().startswith(("pin", "passcode"))
        ok = _letters_and_digits(value) or (pin and value.isdigit() and len(value) <= 12)
        return (start, end) if ok else None
    if _WORD.fullmatch(value) is None:
        return (start, end) if _password_like(value) else None
    # A lone word: a password only where the clause ends with it and it does not describe the password.
    rest = text[end:].lstrip(" \t")
    low = value.lower()
    if (rest and rest[0] not in _CLAUSE_ENDS) or low in _DESCRIBING or low.endswith(_DESCRIBING_ENDS):
        return None
    return start, end


def _spaced_key(found: str) -> bool:
    """An AWS key id written with separators has a digit (capital words in a row do not)."""
    return found.isalnum() or any(c.isdigit() for c in found)


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
            if kind != "aws_access_key" or _spaced_key(m.group()):
                add(kind, m.start(), m.end())
    for m in _BASE64_PEM.finditer(text):
        if _wrapped_private_key(m.group()):
            add("private_key", m.start(), m.end())
    for m in _ASSIGNMENT.finditer(text):
        value = m.group("val").strip("\"'")
        if not _placeholder(value) and not _UUID.match(value) and (
            len(value) >= 12 or not value.isalpha() or not value.islower()
        ):
            add("credential_assignment", m.start("val"), m.end("val"))
    for m in _SPOKEN.finditer(text):
        if (span := _spoken_credential(m, text)) is not None:
            add("credential_assignment", *span)
    for m in _INTL.finditer(text):
        value = m.group("val").rstrip(".!?")
        # After a verb ("das Passwort ist falsch") only a value that looks like a password counts; after
        # ":" or "=" any value that is not a placeholder; after nothing, letters and digits.
        if m.group("bare") is not None:
            credential = _letters_and_digits(value)
        else:
            credential = bool(m.group("sep") or m.group("sep2")) or _password_like(value)
        if len(value) >= 4 and not _placeholder(value) and credential:
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
