"""The deterministic answer composer: from a ``Recall`` to an answer a person can read, with any model or none.

The text always has the same shape:

1. the lead: the current answer in one sentence (a language model may
   rephrase it, see ``accept_phrasing``; without one the rule-made lead stands);
2. ``Evidence:`` the current statements it rests on, each with its short id;
3. ``Changed:`` what was replaced, ``earlier -> current``;
4. ``In conflict:`` open conflicts between sources, stated as unresolved;
5. ``Retracted:`` what was taken back that the question touches, by whom and why.

Choosing the lead: current statements are grouped by (subject, predicate);
the group sharing most words with the question wins (then the most
confident group, then retrieval order), and within it the newest statement
leads (a positive one before a negation written with it), so a correction
leads as soon as it is written. Consolidation summaries are context: they never lead
and never count as evidence.

Contradictions: between statements of one speaker (a worker's inference
speaks for the speaker of the observation it was drawn from), the newer
(unless less confident) is current and the older a change; between speakers,
an open contradiction is a conflict the answer names, whichever side leads.

Confidence: the lead's confidence, raised by statements that agree with it
(``1 - prod(1 - c)``), and weighed down by the ones in open conflict with it
(``support * support / (support + opposition)``).

The asker: ``remember``'s ``source``. Its first person in the question is
itself ("where do I live?" asked by alice is about alice), and the lead
addresses it: "you live in Paris", "your manager is Tom" rather than "alice
lives in Paris". Evidence and conflicts keep the names: they are provenance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mnemonet.model.api import Recall
from mnemonet.model.ids import short_id
from mnemonet.model.views import ContradictionView, ObservationView, RetractionView, StatementView, when
from mnemonet.truth.currency import earlier_side
from mnemonet.truth.text import terms

_IRREGULAR = {"is": "are", "has": "have", "does": "do", "was": "were"}
NOTHING = "Nothing in memory answers that."
CONTESTED = "Unresolved: "
DEGRADED = "(Degraded: no language model answered; this answer was composed by rule from memory.)"


def addressed(s: StatementView, asker: str | None) -> str:
    """``s`` as a sentence to ``asker``: "you live in Paris", "your manager has ...", "you do not like sushi";
    unchanged when the statement is not about the asker (or there is no asker)."""
    sentence = s.sentence()
    if not asker or s.summary:
        return sentence
    me = asker.casefold()
    subject = s.subject
    if subject.casefold() == me:
        subject = "you"
    elif subject.casefold().startswith(me + "'s "):
        subject = "your" + subject[len(asker) + 2:]
    else:
        return sentence
    obj = "you" if s.object.casefold() == me else s.object
    words = s.predicate.split("_")
    if subject == "you":  # second person takes the plain verb: lives -> live, has -> have, is -> are
        words[0] = _plain_verb(words[0])
    verb = " ".join(words)
    if s.negated:
        verb = f"{words[0]} not {' '.join(words[1:])}".strip() if words[0] in ("are", "is") else f"do not {verb}"
    return f"{subject} {verb} {obj}"


def _plain_verb(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@dataclass
class Composition:
    """What the rules made of a recall; ``text`` joins it with the lead that was finally used."""

    lead: str
    lead_id: str | None
    evidence: list[StatementView] = field(default_factory=list)
    changed: list[tuple[StatementView, StatementView | None, str]] = field(default_factory=list)
    conflicts: list[ContradictionView] = field(default_factory=list)
    observations: list[ObservationView] = field(default_factory=list)
    confidence: float = 0.0
    asker: str | None = None
    retractions: list[RetractionView] = field(default_factory=list)

    @property
    def cited(self) -> list[str]:
        ids = [s.id for s in self.evidence]
        ids += [x.id for old, new, _ in self.changed for x in (old, new) if x is not None]
        ids += [s.id for c in self.conflicts for s in (c.a, c.b)]
        ids += [o.id for o in self.observations]
        ids += [r.id for r in self.retractions]
        return list(dict.fromkeys(ids))

    def memory(self) -> list[tuple[str, str]]:
        """The lines a language model may phrase the lead from: the lead's statement and its conflicts."""
        lines = [(s.id, f"{addressed(s, self.asker)} | current | {_provenance(s)}") for s in self.evidence[:1]]
        for c in self.conflicts:
            if self.lead_id not in (c.a.id, c.b.id):
                continue
            for s in (c.a, c.b):
                if s.id != self.lead_id:
                    lines.append((s.id, f"{s.sentence()} | current, contested | {_provenance(s)}"))
        lines += [(o.id, f"{_one_line(o.text)} | observed | from {o.source or 'unknown'}") for o in self.observations]
        return lines

    def text(self, lead: str | None = None, *, degraded: bool = False) -> str:
        parts = [lead or self.lead]
        if degraded:
            parts.append(DEGRADED)
        if self.evidence or self.observations:
            parts.append("Evidence:")
            parts += [f"  - {_evidence(s)}" for s in self.evidence]
            parts += [f'  - {o.source or "someone"} said "{_one_line(o.text)}" ({when(o.created_at)}, '
                      f"{short_id(o.id)})" for o in self.observations]
        if self.changed:
            parts.append("Changed:")
            for old, new, how in self.changed:
                now = (f"{new.sentence()} ({short_id(new.id)})" if new is not None
                       else ", ".join(short_id(i) for i in old.superseded_by))
                parts.append(f"  - {old.sentence()} ({short_id(old.id)}) -> {now}, {how}")
        if self.conflicts:
            parts.append("In conflict:")
            parts += [f"  - {c.sentence()}" for c in self.conflicts]
        if self.retractions:
            parts.append("Retracted:")
            parts += [f"  - {_one_line(r.target_text) or r.kind} ({short_id(r.target_id)}), retracted by {r.source} "
                      f"({when(r.created_at)}, {short_id(r.id)}): {_one_line(r.reason)}" for r in self.retractions]
        return "\n".join(parts)


def compose(
    recall: Recall, max_evidence: int, speakers: dict[str, str] | None = None, asker: str | None = None
) -> Composition:
    """The rule-made answer to ``recall.query`` (see the module docstring), addressed to ``asker``.

    ``speakers`` maps a statement id to whoever spoke the observation it was drawn from (see
    ``speakers_of``): a worker's inference from alice's words speaks for alice, so it does not
    conflict with alice's later correction, it is replaced by it.
    """
    speakers = speakers or {}

    def speaker(s: StatementView) -> str:
        return speakers.get(s.id) or s.source or ""

    wanted = terms(recall.query, asker or "user")
    me = terms(asker or "user")
    retractions = [r for r in recall.retractions if terms(r.target_text) & wanted - {"user"}][:max_evidence]
    facts = [s for s in recall.statements if not s.summary]
    current_ids = {s.id for s in facts}
    by_id = {s.id: s for s in [*facts, *recall.superseded]}

    # Contradictions between the current statements: same source -> a change, different sources -> a conflict.
    earlier: dict[str, StatementView] = {}
    conflicts: list[ContradictionView] = []
    for c in recall.contradictions:
        if c.a.summary or c.b.summary or c.a.id not in current_ids or c.b.id not in current_ids:
            continue
        if speaker(c.a) == speaker(c.b):
            older, newer = earlier_side(c)
            earlier[older.id] = newer
        else:
            conflicts.append(c)
    live = [s for s in facts if s.id not in earlier]

    lead_st = _choose(live, wanted)
    if lead_st is None:
        observations = [o for o in recall.observations if terms(o.text) & wanted][:max_evidence]
        if not observations:
            return Composition(lead=NOTHING, lead_id=None, retractions=retractions)
        top = observations[0]
        lead = f'No statement answers that yet; {top.source or "someone"} said "{_one_line(top.text)}".'
        return Composition(lead=lead, lead_id=top.id, observations=observations, retractions=retractions)

    group = _key(lead_st)
    related = [s for s in live if s.id != lead_st.id and (_key(s) == group or terms(s.sentence()) & wanted - me)]
    evidence = [lead_st, *related][:max_evidence]
    shown = {s.id for s in evidence}
    lead_conflicts = [c for c in conflicts if lead_st.id in (c.a.id, c.b.id)]
    conflicts = lead_conflicts + [c for c in conflicts if c not in lead_conflicts and {c.a.id, c.b.id} & shown]

    changed: list[tuple[StatementView, StatementView | None, str]] = []
    for s in recall.superseded:
        if s.summary or not (_key(s) == group or terms(s.sentence()) & wanted - me):
            continue
        replacement = next((by_id[i] for i in s.superseded_by if i in by_id), None)
        changed.append((s, replacement, "superseded"))
    for old_id, newer in earlier.items():
        old = by_id[old_id]
        if _key(old) == group or terms(old.sentence()) & wanted - me:
            changed.append((old, newer, "contradicted by a newer statement of the same source"))

    lead = _sentence(lead_st, lead_conflicts, asker)
    return Composition(
        lead=lead, lead_id=lead_st.id, evidence=evidence, changed=changed[:max_evidence],
        conflicts=conflicts[:max_evidence], confidence=_confidence(lead_st, live, lead_conflicts), asker=asker,
        retractions=retractions,
    )


def accept_phrasing(composition: Composition, written: str, max_chars: int) -> str | None:
    """The model's lead (ids shortened) if it is one short line citing every line it was given and, when
    the lead is contested, calling it unresolved; else None, and the rule-made lead stands."""
    text = " ".join(written.split())
    lines = composition.memory()
    if not lines or len(text) > max_chars or any(f"[{line_id}]" not in text for line_id, _ in lines):
        return None
    if composition.lead.startswith(CONTESTED) and "unresolved" not in text.casefold():
        return None
    for line_id, _ in lines:
        text = text.replace(f"[{line_id}]", f"[{short_id(line_id)}]")
    return text


def _choose(statements: list[StatementView], wanted: set[str]) -> StatementView | None:
    """The newest statement of the (subject, predicate) group sharing most words with the question."""
    if not statements:
        return None
    groups: dict[tuple[str, str], list[StatementView]] = {}
    for s in statements:
        groups.setdefault(_key(s), []).append(s)
    # Most shared words; then the most confident group (a literal statement before the claims a worker
    # inferred from it, "user lives in X" before "user located in X"); max() keeps the first of equals,
    # so retrieval order breaks the remaining ties.
    best = max(groups.values(), key=lambda g: (max(len(terms(s.sentence()) & wanted) for s in g),
                                               max(s.confidence for s in g)))
    # Of one observation's statements (same time), what is leads before what is not: "I no longer live
    # in Madrid, I live in Seville" answers Seville.
    return max(best, key=lambda s: (s.created_at, not s.negated, s.confidence))


def _sentence(s: StatementView, conflicts: list[ContradictionView], asker: str | None) -> str:
    if not conflicts:
        return f"{_capital(addressed(s, asker))}."
    return f"{CONTESTED}{'; '.join(c.sentence().removesuffix(' -- unresolved') for c in conflicts)}."


def _confidence(lead: StatementView, current: list[StatementView], conflicts: list[ContradictionView]) -> float:
    agreeing = [s for s in current if _claim(s) == _claim(lead)]
    support = 1.0 - math.prod(1.0 - _clamp(s.confidence) for s in agreeing)
    others = [side for c in conflicts for side in (c.a, c.b) if side.id != lead.id]
    opposition = 1.0 - math.prod(1.0 - _clamp(s.confidence) for s in others)
    if support + opposition == 0:
        return 0.0
    return round(support * support / (support + opposition), 2)


def _key(s: StatementView) -> tuple[str, str]:
    return s.subject.casefold(), s.predicate


def _claim(s: StatementView) -> tuple[str, str, str, bool]:
    return s.subject.casefold(), s.predicate, s.object.casefold(), s.negated


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _provenance(s: StatementView) -> str:
    shared = f" | shared from space {s.space}" if s.space else ""
    return f"confidence {s.confidence:.2f} | from {s.source or 'unknown'} | {when(s.created_at)}{shared}"


def _evidence(s: StatementView) -> str:
    where = f" in space {s.space}" if s.space else ""  # a share: say which space the fact came from
    return (f"{s.sentence()} ({s.confidence:.2f}, {s.source or 'unknown'}, {when(s.created_at)}, "
            f"{short_id(s.id)}{where})")


def speakers_of(recall: Recall, observations: list[ObservationView]) -> dict[str, str]:
    """Statement id -> source of the observation it derives from, for the statements in contradictions.

    ``observations`` are those observations (``contradicted_origins`` lists the ids to read).
    """
    spoken = {o.id: o.source or "" for o in observations}
    out = {}
    for c in recall.contradictions:
        for s in (c.a, c.b):
            origin = next((spoken[i] for i in s.derived_from if spoken.get(i)), None)
            if origin:
                out[s.id] = origin
    return out


def contradicted_origins(recall: Recall) -> list[str]:
    """Ids the sides of ``recall``'s contradictions derive from (observations among them)."""
    return sorted({i for c in recall.contradictions for s in (c.a, c.b) for i in s.derived_from})
