"""Does the offline model put a change said in other words on the slot of the fact it changes?

    .venv/bin/python bench/extraction_changes.py              # this tree
    .venv/bin/python bench/extraction_changes.py --misses     # ... and every dev pair it gets wrong
    .venv/bin/python bench/extraction_changes.py --src DIR    # another checkout's src/ (e.g. the branch base)
    .venv/bin/python bench/extraction_changes.py --file F     # another file of pairs

Reads ``bench/data/extraction_changes.yaml``: pairs of an original fact and a
change of it said in other words ("My manager is Carol" / "Frank took over
from Carol as my manager"), by class (role holder, new employer, relocation,
switch, postponement, numeric, promotion, status, correction), and pairs
that must not be read as a change (class ``keep``). Both sentences of a pair
are read by ``OfflineLanguageModel.extract_observation`` under their speakers.

A change pair counts as

- **slot**: a statement of the change has the subject (normalised) and the
  predicate (canonical, by the relation vocabulary) of a statement of the
  original, in the present tense, with the new value (``new``: a word its
  object contains) or, for an ending (``ended``), the original's object (or a
  broader one: no word the original's object lacks) negated;
- **marked**: that statement also carries ``revision`` (change or correction);
- **supersedes**: the validation worker's policy (``truth.currency``:
  ``classify``, the offline judge for what it leaves ambiguous, ``resolve``
  with the second sentence said an hour later) retires the original with it.

A keep pair counts as kept when the second sentence yields a statement and
none of its statements (or inferred claims) retires one of the first's by
that same policy. Prints the share per class for the dev and the test half
and the gap; ``--misses`` lists the dev pairs that fail (the test half is
read only to report).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent / "data" / "extraction_changes.yaml"
CLASSES = ("role_holder", "employer", "relocation", "switch", "postponement", "numeric", "promotion", "status",
           "correction", "keep")
_HOUR_MS = 3_600_000
_ARTICLES = frozenset({"the", "a", "an"})


@dataclass
class Outcome:
    """One pair's result."""

    pair: dict[str, Any]
    slot: bool
    marked: bool
    supersedes: bool
    before: list[Any]
    after: list[Any]

    @property
    def passed(self) -> bool:
        return self.slot and self.marked if self.pair["class"] != "keep" else self.slot


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The pairs of the file, each with class, before, after, half (and new or ended for a change)."""
    pairs: list[dict[str, Any]] = yaml.safe_load(path.read_text())["pairs"]
    for i, p in enumerate(pairs, 1):
        if p.get("class") not in CLASSES or p.get("half") not in ("dev", "test"):
            raise ValueError(f"pair {i}: class must be one of {CLASSES} and half dev or test")
        if p["class"] != "keep" and not (p.get("new") or p.get("ended")):
            raise ValueError(f"pair {i}: a change names its new value (new) or is an ending (ended: true)")
    return pairs


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[-&][a-z0-9]+)*", text.lower())


class Judge:
    """The write-time policy of the memory over two extractions (imports done late: ``--src``)."""

    def __init__(self, model: Any) -> None:
        from mnemonet.model.records import normalise_name
        from mnemonet.model.views import StatementView
        from mnemonet.settings import Settings
        from mnemonet.truth.currency import classify, resolve
        from mnemonet.truth.vocabulary import default_vocabulary

        self.model, self.settings, self.vocabulary = model, Settings(), default_vocabulary()
        self._view, self._classify, self._resolve, self.norm = StatementView, classify, resolve, normalise_name

    def view(self, t: Any, source: str, at: int, n: int) -> Any:
        return self._view(id=f"{source}-{at}-{n}", subject=t.subject, predicate=t.predicate, object=t.object,
                          confidence=t.confidence, negated=t.negated, tense=t.tense, revision=t.revision,
                          created_at=at, source=source)

    def same_slot(self, new: Any, old: Any) -> bool:
        return self.norm(new.subject) == self.norm(old.subject) and (
            self.vocabulary.canonical(new.predicate) == self.vocabulary.canonical(old.predicate))

    async def retires(self, new: Any, old: Any) -> bool:
        """Would the validation worker supersede ``old`` with ``new`` (both views)?"""
        verdict = self._classify(new, old, self.vocabulary)
        if verdict.kind == "ambiguous":
            from mnemonet.llm.base import CandidatePair

            [judged] = await self.model.judge_pairs([CandidatePair(a=new.sentence(), b=old.sentence())])
            if not judged.contradicts:
                return False
        elif verdict.kind != "contradicts":
            return False
        same = self.vocabulary.canonical(new.predicate) == self.vocabulary.canonical(old.predicate)
        outcome = self._resolve(new, old, same and self.vocabulary.spec(new.predicate).temporal, self.settings)
        return outcome.winner is not None and outcome.winner.id == new.id


async def run(model: Any, pairs: list[dict[str, Any]]) -> list[Outcome]:
    judge = Judge(model)
    out = []
    for pair in pairs:
        (s1, t1), (s2, t2) = pair["before"], pair["after"]
        first = await model.extract_observation(t1, s1)
        second = await model.extract_observation(t2, s2)
        old = [judge.view(t, s1, 0, n) for n, t in enumerate([*first.statements, *first.inferred])]
        said = [judge.view(t, s2, _HOUR_MS, n) for n, t in enumerate(second.statements)]
        new = [*said, *(judge.view(t, s2, _HOUR_MS, 100 + n) for n, t in enumerate(second.inferred))]
        if pair["class"] == "keep":
            retired = [await judge.retires(n, o) for n in new for o in old]
            out.append(Outcome(pair, bool(said) and not any(retired), False, any(retired),
                               first.statements, second.statements))
            continue
        slot = marked = supersedes = False
        for n in said:
            for o in old[: len(first.statements)]:
                if not judge.same_slot(n, o) or n.tense != "present":
                    continue
                if pair.get("ended"):
                    # The ending covers the original: no narrower than it ("the gym" ends "the gym every week").
                    ended = set(_words(n.object)) - _ARTICLES
                    hit = n.negated and not o.negated and bool(ended) and ended <= set(_words(o.object))
                else:
                    hit = not n.negated and set(_words(str(pair["new"]))) <= set(_words(n.object)) and (
                        judge.norm(n.object) != judge.norm(o.object))
                if hit:
                    slot = True
                    marked = marked or n.revision is not None
                    supersedes = supersedes or await judge.retires(n, o)
        out.append(Outcome(pair, slot, marked, supersedes, first.statements, second.statements))
    return out


def _rate(rows: list[Outcome], attr: str) -> float | None:
    return sum(bool(getattr(r, attr)) for r in rows) / len(rows) if rows else None


def _cell(value: float | None) -> str:
    return "   -" if value is None else f"{value:4.2f}"


def table(outcomes: list[Outcome]) -> list[str]:
    """One row per class and the totals: n, slot, slot + marked, supersedes per half, and the gap."""
    head = (f"{'class':14} {'dev n':>5} {'slot':>5} {'+mark':>5} {'supers':>6}   {'test n':>6} {'slot':>5} "
            f"{'+mark':>5} {'supers':>6}   {'gap':>5}")
    lines = [head]

    def row(name: str, rows: list[Outcome]) -> str:
        dev = [r for r in rows if r.pair["half"] == "dev"]
        test = [r for r in rows if r.pair["half"] == "test"]
        d, t = _rate(dev, "passed"), _rate(test, "passed")
        gap = f"{d - t:+5.2f}" if d is not None and t is not None else "    -"
        if name == "keep" or name == "keep (kept)":
            return (f"{name:14} {len(dev):5} {'':>5} {_cell(d):>5} {'':>6}   {len(test):6} {'':>5} {_cell(t):>5} "
                    f"{'':>6}   {gap}")
        return (f"{name:14} {len(dev):5} {_cell(_rate(dev, 'slot')):>5} {_cell(d):>5} "
                f"{_cell(_rate(dev, 'supersedes')):>6}   {len(test):6} {_cell(_rate(test, 'slot')):>5} "
                f"{_cell(t):>5} {_cell(_rate(test, 'supersedes')):>6}   {gap}")

    for cls in CLASSES:
        rows = [r for r in outcomes if r.pair["class"] == cls]
        lines.append(row("keep (kept)" if cls == "keep" else cls, rows))
    changes = [r for r in outcomes if r.pair["class"] != "keep"]
    lines.append(row("all changes", changes))
    unseen = [r for r in changes if not r.pair.get("seen")]
    lines.append(row("  not in brief", unseen))
    return lines


def _said(triples: list[Any]) -> str:
    return "; ".join(
        f"({t.subject}|{t.predicate}|{t.object}{'|NEG' if t.negated else ''}|{t.tense}"
        f"{'|' + t.revision if t.revision else ''})" for t in triples
    ) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="import mnemonet from this src/ directory instead")
    parser.add_argument("--misses", action="store_true", help="print every dev pair it gets wrong")
    parser.add_argument("--file", type=Path, default=DATA, help="another file of pairs in the same form")
    args = parser.parse_args()
    sys.path.insert(0, args.src or str(Path(__file__).resolve().parent.parent / "src"))
    from mnemonet.llm.offline.model import OfflineLanguageModel
    from mnemonet.settings import Settings

    pairs = load(args.file)
    model = OfflineLanguageModel(Settings(), today=lambda: date(2026, 11, 23))
    started = time.perf_counter()
    outcomes = asyncio.run(run(model, pairs))
    seconds = time.perf_counter() - started
    print(f"{len(pairs)} pairs ({sum(p['class'] != 'keep' for p in pairs)} changes), model from "
          f"{Path(sys.modules['mnemonet'].__file__ or '').parent}; slot: same (subject, predicate) with the new "
          "value, present; +mark: and revision set (the score); supers: the policy retires the original")
    print("\n".join(table(outcomes)))
    print(f"({seconds:.1f} s)")
    if args.misses:
        for r in outcomes:
            if r.pair["half"] == "dev" and not r.passed:
                (_, t1), (_, t2) = r.pair["before"], r.pair["after"]
                print(f"[{r.pair['class']}] {t1!r} / {t2!r}")
                print(f"    before: {_said(r.before)}\n    after:  {_said(r.after)}")


if __name__ == "__main__":
    main()
