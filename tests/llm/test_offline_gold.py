"""The offline model against the gold table (tests/llm/gold_offline.yaml), scored by bench/offline_gold.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from mnemonet.llm import OfflineLanguageModel
from mnemonet.settings import Settings

BENCH = Path(__file__).resolve().parents[2] / "bench" / "offline_gold.py"
# The targets are 0.85 precision and 0.80 recall; measured 0.891 / 0.905 (README, quality section).
PRECISION_FLOOR = 0.85
RECALL_FLOOR = 0.80


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("offline_gold", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["offline_gold"] = module
    spec.loader.exec_module(module)
    return module


def test_gold_table_is_large_and_mostly_real_chat() -> None:
    cases = _scorer().load_cases()
    assert len(cases) >= 200
    assert sum(1 for c in cases if c.get("ref", "").startswith("conv-")) >= 120
    for case in cases:
        for triple in case["triples"]:
            assert len(triple) == 5 and triple[4] in ("past", "present", "future"), case["text"]


async def test_precision_and_recall_reach_the_floor() -> None:
    gold = _scorer()
    result = await gold.score(OfflineLanguageModel(Settings()), gold.load_cases())
    assert result.gold >= 250
    assert result.precision >= PRECISION_FLOOR, "\n".join(result.misses)
    assert result.recall >= RECALL_FLOOR, "\n".join(result.misses)


def test_scorer_matching_rules() -> None:
    gold = _scorer()
    assert gold.family("goes_to") == gold.family("go_to")
    assert gold.family("loves") == gold.family("likes") == gold.family("enjoys")
    assert gold.family("works_for") == gold.family("works_at")
    assert gold.family("works_on") != gold.family("works_at")
    assert gold.object_matches("dentist appointment", "appointment")
    assert gold.object_matches("window seats", "seat")
    assert not gold.object_matches("Sarah, although she might be leaving soon", "Sarah")  # a leaked clause
    assert not gold.object_matches("blue, not green", "blue")
    assert not gold.object_matches("Lisbon next month and then some more words", "Lisbon")
