"""The evaluation corpus of everyday memory updates (bench/data/scenarios.yaml) and its judge: fast, no databases.

``python bench/scenarios.py`` plays the corpus; here only its shape, its dev/test split and the judging rules
are checked.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    if "bench_scenarios" in sys.modules:  # test_updates.py loads the same file under this name
        return sys.modules["bench_scenarios"]
    spec = importlib.util.spec_from_file_location("bench_scenarios", REPO / "bench" / "scenarios.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


scenarios = _bench()


def test_the_corpus_loads_with_every_class_well_filled() -> None:
    cases = scenarios.load_corpus()
    assert len(cases) >= 170
    assert len({c.name for c in cases}) == len(cases)
    counts = Counter(c.kind for c in cases)
    assert set(counts) == set(scenarios.CLASSES) and len(counts) >= 16
    assert min(counts.values()) >= 10, counts
    for case in cases:
        assert case.question and case.lines
        assert sum((case.expect is not None, case.abstain, bool(case.keep))) == 1, case.name
    assert all(c.keep for c in cases if c.kind == "coexistence")
    assert all(c.abstain for c in cases if c.kind == "unanswerable")
    assert all(any(isinstance(s, scenarios.Action) for s in c.lines) for c in cases if c.kind == "retraction")
    assert all(20 <= len(c.lines) <= 60 for c in cases if c.kind == "import")


@pytest.mark.parametrize("name", ["scenarios_more.yaml", "scenarios_heldout.yaml", "scenarios_polar.yaml",
                                  "scenarios_heldout_e.yaml", "scenarios_round12.yaml", "scenarios_round13.yaml",
                                  "scenarios_heldout_i.yaml", "scenarios_round14.yaml", "scenarios_heldout_m.yaml",
                                  "scenarios_heldout_o.yaml", "scenarios_heldout_q.yaml"])
def test_the_further_sets_load_apart_from_the_corpus(name: str) -> None:
    cases = scenarios.load_corpus(REPO / "bench" / "data" / name)
    assert len(cases) >= 30 and len({c.name for c in cases}) == len(cases)
    assert not {c.name for c in cases} & {c.name for c in scenarios.load_corpus()}


def test_the_split_is_per_class_halves_and_deterministic() -> None:
    cases = scenarios.load_corpus()
    halves = scenarios.split(cases)
    again = scenarios.split(scenarios.load_corpus())
    assert [c.name for c in halves["dev"]] == [c.name for c in again["dev"]]
    assert [c.name for c in halves["test"]] == [c.name for c in again["test"]]
    dev, test = ({c.name for c in halves[n]} for n in scenarios.SPLITS)
    assert not dev & test and dev | test == {c.name for c in cases}
    for kind, n in Counter(c.kind for c in cases).items():
        assert sum(c.kind == kind for c in halves["dev"]) == (n + 1) // 2
        assert sum(c.kind == kind for c in halves["test"]) == n // 2


def test_the_split_does_not_depend_on_the_order_of_the_file(tmp_path: Path) -> None:
    entries = yaml.safe_load(scenarios.CORPUS.read_text())
    random.Random(7).shuffle(entries)
    shuffled = tmp_path / "shuffled.yaml"
    shuffled.write_text(yaml.safe_dump(entries, allow_unicode=True, sort_keys=False))
    original, reordered = scenarios.split(scenarios.load_corpus()), scenarios.split(scenarios.load_corpus(shuffled))
    for name in scenarios.SPLITS:
        assert {c.name for c in original[name]} == {c.name for c in reordered[name]}


def test_the_split_seed_is_the_one_fixed_before_tuning() -> None:
    assert scenarios.SPLIT_SEED == 20261126


def _case(**fields: object) -> object:
    base: dict[str, object] = {"name": "n", "kind": "relocation", "lines": [("user", "I live in Oslo.")],
                               "question": "where do I live?"}
    return scenarios.Case(**{**base, **fields})


def test_expect_is_judged_on_the_lead_line_alone() -> None:
    case = _case(expect="Porto", reject=["Lisbon"])
    cited = "From memory: you live in Porto [st-1a2b3c4d].\nEvidence:\n  - user lives in Porto"
    assert scenarios.judge(case, cited).passed
    assert scenarios.judge(case, "from memory: YOU LIVE IN PORTO.").passed
    assert not scenarios.judge(case, "From memory: you live in Lisbon.\nEvidence:\n  - user lives in Porto").passed
    assert not scenarios.judge(case, "Unresolved: you live in Porto; you live in Lisbon.").passed
    assert not scenarios.judge(case, "Nothing in memory answers that.").passed
    assert scenarios.judge(case, "From memory: you live in Porto.").lead == "From memory: you live in Porto."


def test_cited_ids_neither_match_nor_reject() -> None:
    case = _case(expect="12", reject=["8 people", "ab"])
    assert not scenarios.judge(case, "From memory: the team has 8 members [st-12abcdef].").passed
    assert scenarios.judge(case, "From memory: the team has 12 people [st-ab8c0d1e].").passed
    assert not scenarios.judge(case, 'user said "we grew" (Thu 12 Nov 22:15); before that: 9 members.').passed


def test_abstention_is_the_composer_sentence_first() -> None:
    case = _case(abstain=True, reject=["Leeds"])
    assert scenarios.ABSTAIN_PREFIX == "Nothing in memory answers"
    assert scenarios.judge(case, "Nothing in memory answers that.\nRelated:\n  - user's sister lives in Leeds").passed
    assert not scenarios.judge(case, "From memory: your sister lives in Leeds.").passed
    assert not scenarios.judge(case, "I think you live in York.").passed
    assert not scenarios.judge(case, "Nothing in memory answers that, but Leeds is known.").passed


KEPT = """From memory: you speak Spanish [st-aa11bb22].
Evidence:
  - user speaks Spanish (0.90, user, st-aa11bb22)
  - user speaks French (0.90, user, st-cc33dd44)"""


def test_keep_needs_every_fact_shown_and_none_changed() -> None:
    case = _case(kind="coexistence", keep=["French", "Spanish"])
    assert scenarios.judge(case, KEPT).passed
    assert scenarios.judge(case, "From memory: you speak French and Spanish.").passed
    assert not scenarios.judge(case, "From memory: you speak Spanish.\nEvidence:\n  - user speaks Spanish").passed
    superseded = ("From memory: you speak Spanish.\nEvidence:\n  - user speaks Spanish\n  - user speaks French\n"
                  "Changed:\n  - user speaks French (st-1) -> user speaks Spanish (st-2), superseded")
    assert not scenarios.judge(case, superseded).passed
    only_related = "From memory: you speak Spanish.\nRelated:\n  - user speaks French"
    assert not scenarios.judge(case, only_related).passed
    assert scenarios.sections(superseded)["Changed"] == ["user speaks French (st-1) -> user speaks Spanish (st-2), "
                                                         "superseded"]
    assert scenarios.kept_both(scenarios.judge(case, KEPT))
    assert not scenarios.kept_both(scenarios.judge(case, superseded))


@pytest.mark.parametrize(("entry", "message"), [
    ({"lines": ["no source here"]}, r"line 1 'no source here' is not"),
    ({"class": "gossip"}, r"class 'gossip' is not one of"),
    ({"abstain": True}, r"give exactly one of expect, abstain: true or keep"),
    ({"expect": None}, r"give exactly one of expect"),
    ({"lines": ["user: hi", "!retract 3"]}, r"line 2 '!retract 3': 3 is not the number of an observed line"),
    ({"lines": ["user: hi", "!forget user", "!retract 2"]},
     r"line 3 '!retract 2': 2 is not the number of an observed line"),
    ({"lines": ["user: hi", "!erase user"]}, r"line 2 '!erase user' is not an action"),
    ({"ask": None}, r"missing 'ask'"),
    ({"questoin": "typo"}, r"unknown keys \['questoin'\]"),
    ({"reject": "Paris"}, r"reject must be a list"),
])
def test_a_malformed_entry_is_refused_with_its_place(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    good = {"name": "fine", "class": "relocation", "lines": ["user: I live in Oslo."], "ask": "where?",
            "expect": "Oslo"}
    bad = {**good, "name": "broken one", **entry}
    path = tmp_path / "corpus.yaml"
    path.write_text(yaml.safe_dump([good, bad], sort_keys=False))
    with pytest.raises(ValueError, match=r"scenario 2 \('broken one'\): " + message):
        scenarios.load_corpus(path)


def test_a_name_used_twice_is_refused(tmp_path: Path) -> None:
    entry = {"name": "same", "class": "switch", "lines": ["user: I use Vim."], "ask": "editor?", "expect": "Vim"}
    path = tmp_path / "corpus.yaml"
    path.write_text(yaml.safe_dump([entry, entry]))
    with pytest.raises(ValueError, match=r"scenario 2 \('same'\): the name 'same' is used twice"):
        scenarios.load_corpus(path)


def test_actions_are_read_with_their_targets(tmp_path: Path) -> None:
    path = tmp_path / "corpus.yaml"
    path.write_text(yaml.safe_dump([{
        "name": "acts", "class": "retraction", "ask": "where?", "abstain": True,
        "lines": ["bob: Ann lives in Rome.", "ann: I live in Pisa.", "!retract 2", "!retract-statements 1",
                  "!forget bob"]}]))
    [case] = scenarios.load_corpus(path)
    assert case.lines[:2] == [("bob", "Ann lives in Rome."), ("ann", "I live in Pisa.")]
    assert case.lines[2:] == [scenarios.Action("retract", line=2), scenarios.Action("retract-statements", line=1),
                              scenarios.Action("forget", source="bob")]
    assert case.asker == "user"


def test_the_summary_line_reads_both_halves_and_the_gap() -> None:
    def outcome(passed: bool) -> object:
        return scenarios.Outcome(_case(expect="x"), "lead", passed)

    played = {"dev": [outcome(True), outcome(True), outcome(False), outcome(True)],
              "test": [outcome(True), outcome(False)]}
    assert scenarios.summary_line(played) == "scenarios: dev 3/4 = 0.75, test 1/2 = 0.50, gap 0.25"
    report = scenarios.split_report(played)
    assert "| relocation | 3/4 | 0.75 |" in report and report.endswith(scenarios.summary_line(played))
