"""Exact-triple precision and recall of the offline model on the gold table (tests/llm/gold_offline.yaml).

    .venv/bin/python bench/offline_gold.py              # this tree
    .venv/bin/python bench/offline_gold.py --misses     # ... and every sentence it gets wrong
    .venv/bin/python bench/offline_gold.py --src DIR    # another checkout's src/ (e.g. the branch base)

Prints one table: cases, gold and produced triples, matches, precision and
recall, exact (subject, predicate family, object head, negation, tense) and
without tense. How a produced triple matches a gold one is written at the top
of the gold file; ``score`` below is the one implementation, which
tests/llm/test_offline_gold.py also uses for its floor.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

GOLD = Path(__file__).resolve().parent.parent / "tests" / "llm" / "gold_offline.yaml"
# Same-family predicates the gold table does not tell apart (the schema's aliases and then some).
_FAMILY = {
    "love": "like",
    "enjoy": "like",
    "adore": "like",
    "hate": "dislike",
    "detest": "dislike",
    "work_for": "work_at",
    "reside_in": "live_in",
    "is_from": "come_from",
    "is_called": "have_name",
}
# A clause that leaked into an object: "Sarah, although she might be leaving soon".
_LEAK_WORDS = frozenset(
    {
        "although",
        "because",
        "while",
        "though",
        "which",
        "who",
        "whom",
        "that",
        "not",
        "when",
        "if",
        "but",
        "since",
        "until",
        "so",
    }
)
_MAX_OBJECT_WORDS = 6


def load_cases(path: Path = GOLD) -> list[dict[str, Any]]:
    """The gold cases: text, speaker, optional date and ref, triples."""
    cases: list[dict[str, Any]] = yaml.safe_load(path.read_text())["cases"]
    return cases


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("\u2019", "'").replace("'s", ""))


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _subject(name: str) -> str:
    words = name.lower().replace("\u2019", "'").split()
    while words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def _base(verb: str) -> str:
    irregular = {"has": "have", "is": "be", "does": "do", "goes": "go"}
    if verb in irregular:
        return irregular[verb]
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb


def family(predicate: str) -> str:
    """``goes_to`` and ``go_to``, ``loves`` and ``likes``, ``works_for`` and ``works_at`` are one family."""
    head, _, rest = predicate.lower().partition("_")
    key = "_".join(filter(None, [_base(head), rest]))
    return _FAMILY.get(key, _FAMILY.get(_base(head), key) if not rest else key)


def object_matches(produced: str, head: str) -> bool:
    """The object names the gold head word and carries no leaked clause."""
    words = [_singular(w) for w in _words(produced)]
    wanted = [_singular(w) for w in _words(head)]
    if not wanted or len(words) > _MAX_OBJECT_WORDS or _LEAK_WORDS & set(words):
        return False
    return all(w in words for w in wanted)


def _key(t: Any) -> tuple[str, str, bool, str]:
    return _subject(t.subject), family(t.predicate), bool(t.negated), t.tense


@dataclass
class Score:
    """Counts for one run over the gold table."""

    cases: int = 0
    gold: int = 0
    produced: int = 0
    matched: int = 0
    matched_any_tense: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.produced if self.produced else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.gold if self.gold else 0.0


def _match(produced: list[Any], gold: list[list[Any]], *, tense: bool) -> int:
    used: set[int] = set()
    hits = 0
    for t in produced:
        subj, fam, neg, t_tense = _key(t)
        for i, (g_subj, g_pred, g_head, g_neg, g_tense) in enumerate(gold):
            if i in used or subj != _subject(str(g_subj)) or fam != family(str(g_pred)) or neg != bool(g_neg):
                continue
            if tense and t_tense != g_tense:
                continue
            if object_matches(t.object, str(g_head)):
                used.add(i)
                hits += 1
                break
    return hits


async def score(model: Any, cases: list[dict[str, Any]]) -> Score:
    """Run ``model.extract_observation`` on every case (dated cases seen from their date)."""
    out = Score()
    for case in cases:
        day = case.get("date") or date(2026, 11, 23)
        if isinstance(day, str):
            day = date.fromisoformat(day)
        if "today" in inspect.signature(type(model).__init__).parameters:
            model._today = lambda day=day: day  # the observation's day, as the service would give it
        extraction = await model.extract_observation(case["text"], case["speaker"])
        produced = [t if hasattr(t, "tense") else _Untensed(t) for t in extraction.statements]
        gold = case["triples"]
        hits = _match(produced, gold, tense=True)
        out.cases += 1
        out.gold += len(gold)
        out.produced += len(produced)
        out.matched += hits
        out.matched_any_tense += _match(produced, gold, tense=False)
        if hits < len(gold) or hits < len(produced):
            got = (
                "; ".join(
                    f"{t.subject} {'not ' if t.negated else ''}{t.predicate} {t.object} ({t.tense})" for t in produced
                )
                or "-"
            )
            out.misses.append(f"{case.get('ref', '')} {case['text']!r}\n      got:  {got}\n      gold: {gold}")
    return out


@dataclass
class _Untensed:
    """A triple from a model that knows no tense (the branch base): everything is present."""

    t: Any

    def __getattr__(self, name: str) -> Any:
        return "present" if name == "tense" else getattr(self.t, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="import mnemonet from this src/ directory instead")
    parser.add_argument("--misses", action="store_true", help="print every sentence with a wrong or missing triple")
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, args.src)
    from mnemonet.llm.offline.model import OfflineLanguageModel
    from mnemonet.settings import Settings

    cases = load_cases()
    model = OfflineLanguageModel(Settings())
    started = time.perf_counter()
    result = asyncio.run(score(model, cases))
    seconds = time.perf_counter() - started
    sourced = sum(1 for c in cases if c.get("ref"))
    print(
        f"gold: {len(cases)} sentences ({sourced} from LoCoMo turns), {result.gold} triples; model from "
        f"{Path(sys.modules['mnemonet'].__file__ or '').parent}"
    )
    print(f"{'':24} {'produced':>9} {'matched':>8} {'precision':>10} {'recall':>7}")
    print(
        f"{'exact (with tense)':24} {result.produced:>9} {result.matched:>8} {result.precision:>10.3f}"
        f" {result.recall:>7.3f}"
    )
    p_any = result.matched_any_tense / result.produced if result.produced else 0.0
    r_any = result.matched_any_tense / result.gold if result.gold else 0.0
    print(f"{'without tense':24} {result.produced:>9} {result.matched_any_tense:>8} {p_any:>10.3f} {r_any:>7.3f}")
    print(f"({seconds:.1f} s for {len(cases)} sentences)")
    if args.misses:
        print("\n".join(result.misses))


if __name__ == "__main__":
    main()
