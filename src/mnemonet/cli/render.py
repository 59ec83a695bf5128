"""Plain-text rendering of MemoryAPI results for the CLI: compact, one fact per line (pure, no I/O).

Output is ASCII-only so it prints on any terminal encoding (containers often run with LANG=C).
Stored text is printed through ``terminal_safe`` (no escape sequences, no control characters).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mnemonet.cli.commands import COMMANDS
from mnemonet.model.api import Answer, ClaimResult, ObserveResult, RetractResult
from mnemonet.model.ids import short_id
from mnemonet.model.spaces import SpaceView
from mnemonet.model.views import ContradictionView, ObservationView, StatementView

# Terminal escape sequences in stored text: CSI (colours, cursor, clear screen), OSC (window
# title, hyperlinks, clipboard writes) ended by BEL or ST (or by the end of the text), other ESC pairs.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")
# What is left that a terminal would act on: C0 (but tab), DEL, C1, and the bidi controls that
# reorder what is shown (a right-to-left override turns "gnp.exe" into "exe.png").
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(line: str) -> str:
    """``line`` with terminal escape sequences removed and other control characters shown as ``?``.

    Everything the CLI prints passes through here: stored text is written by other agents, and
    a stored escape sequence must not retitle, clear or hyperlink the reader's terminal.
    """
    return _CONTROLS.sub("?", _ESCAPES.sub("", line))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def statement_line(s: StatementView) -> str:
    """``user prefers morning meetings  (0.90, user, st-1a2b3c4d)`` plus superseded/contradicted marks."""
    marks = []
    if s.retracted_by:
        marks.append("RETRACTED")
    elif s.derived_from_retracted:
        marks.append("derived from retracted")
    if s.superseded_by:
        marks.append("SUPERSEDED by " + ", ".join(short_id(i) for i in s.superseded_by))
    if s.contradicted_by:
        marks.append("contradicted by " + ", ".join(short_id(i) for i in s.contradicted_by))
    tail = f"  [{'; '.join(marks)}]" if marks else ""
    return f"{s.sentence()}  ({s.confidence:.2f}, {s.source or 'unknown'}, {short_id(s.id)}){tail}"


def observation_line(o: ObservationView) -> str:
    """``"I prefer morning meetings"  (user, obs-1a2b3c4d)``."""
    text = " ".join(o.text.split())
    return f'"{text}"  ({o.source or "unknown"}, {short_id(o.id)})'


def observed(result: ObserveResult, source: str) -> list[str]:
    """What an observation added."""
    again = "" if result.created else " (already recorded)"
    lines = [f"observed {short_id(result.observation_id)} as {source}{again}: "
             f"{_plural(len(result.statements), 'statement')}"]
    lines += [f"  + {statement_line(s)}" for s in result.statements]
    if result.pending:
        lines.append("  kept; extraction pending (no language model answered): a worker extracts it once one does")
    elif result.extraction_error:
        lines.append(f"  kept; no statements extracted: {result.extraction_error}")
    return lines


def claimed(result: ClaimResult) -> list[str]:
    """What a claim added or linked."""
    if result.contradicts:
        return [f"recorded contradiction between {' and '.join(short_id(i) for i in result.contradicts)}"
                + ("" if result.created else " (already recorded)")]
    head = f"claimed {short_id(result.statement_id)}" + ("" if result.created else " (already recorded)")
    lines = [head]
    if result.statement is not None:
        lines.append(f"  + {statement_line(result.statement)}")
    if result.supersedes:
        lines.append("  superseding " + ", ".join(short_id(i) for i in result.supersedes))
    if result.derived_from:
        lines.append("  based on " + ", ".join(short_id(i) for i in result.derived_from))
    return lines


def retracted(result: RetractResult) -> list[str]:
    """What a retraction took back, and what it left standing on nothing."""
    again = "" if result.created else f" (already retracted by {result.source})"
    lines = [f"retracted {result.kind} {short_id(result.target_id)} as {short_id(result.retraction_id)}{again}: "
             f"{' '.join(result.reason.split())}"]
    if result.flagged:
        lines.append("  derived only from it, left out too: " + ", ".join(short_id(i) for i in result.flagged))
    return lines


def answer(ans: Answer) -> list[str]:
    """The lead sentence, then confidence, sources and provider, then the composed evidence, changes and
    conflicts (``remember`` already lists them with short ids, at most ``answer_evidence_max`` each)."""
    lead, _, rest = ans.text.strip().partition("\n")
    provider = f"{ans.provider}; degraded" if ans.degraded else ans.provider
    head = f"  [confidence {ans.confidence:.2f}; {_plural(len(ans.cited), 'source')}; {provider}]"
    return [lead or "(no answer)", head, *rest.splitlines()]


def statements(title: str, items: list[StatementView]) -> list[str]:
    """A titled list of statements."""
    if not items:
        return [f"{title}: none"]
    return [f"{title} ({len(items)}):"] + [f"  - {statement_line(s)}" for s in items]


def observations(title: str, items: list[ObservationView]) -> list[str]:
    """A titled list of observations."""
    if not items:
        return [f"{title}: none"]
    return [f"{title} ({len(items)}):"] + [f"  - {observation_line(o)}" for o in items]


def contradictions(items: list[ContradictionView]) -> list[str]:
    """Open contradictions, both sides with confidence, source and the reason given."""
    if not items:
        return ["no open contradictions"]
    lines = [f"{_plural(len(items), 'open contradiction')}:"]
    for n, c in enumerate(items, 1):
        lines.append(f"  {n}. {statement_line(c.a)}")
        lines.append(f"     <> {statement_line(c.b)}")
        if c.reason:
            lines.append(f"     reason: {' '.join(c.reason.split())}")
    return lines


def peers(health: dict[str, Any]) -> list[str]:
    """Members as this node sees them (from its health document)."""
    me = health.get("node_id")
    members = sorted(health.get("members", []), key=lambda m: (m.get("state") != "alive", m.get("node_id", "")))
    lines = [f"{_plural(len(members), 'member')} (this node: {me}):"]
    for m in members:
        caps = ",".join(m.get("capabilities", [])) or "-"
        mark = "  (this node)" if m.get("node_id") == me else ""
        lines.append(f"  {m.get('node_id', '?'):<24} {m.get('state', '?'):<8} {caps:<24} {m.get('url', '')}{mark}")
    return lines


def stats(data: dict[str, Any]) -> list[str]:
    """One line per top-level counter; nested counters as ``k=v`` pairs."""
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
            lines.append(f"{key}: {inner}")
        else:
            lines.append(f"{key}: {value}")
    return lines or ["no statistics"]


def help_lines() -> list[str]:
    """The commands table."""
    rows: Iterable[tuple[str, str]] = [
        ("TEXT", "record an observation as the current source"),
        ("?QUESTION", "ask the memory (remember): answer, confidence, provenance"),
        *((f"/{s.name}" + (f" {s.arg}" if s.arg else ""), s.help) for s in COMMANDS.values()),
    ]
    return [f"  {usage:<18} {text}" for usage, text in rows]


def space_line(space: SpaceView, current: bool) -> str:
    """One space of ``/spaces``: starred when it is the one in use, with the spaces it reads."""
    reads = f" (reads {', '.join(space.reads)})" if space.reads else ""
    return f"{'*' if current else ' '} {space.name}{reads}"

