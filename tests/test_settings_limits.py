"""Input limits come from the settings, which may lower the records' ceilings but never raise them.

Issue 20: with ``MNEMONET_MAX_NAME_CHARS=300`` a 250-character subject passed
the language layer and was refused by the record after the model call was
paid for. Now such a setting is refused at start, naming the ceiling.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mnemonet.llm.offline.model import OfflineLanguageModel
from mnemonet.model.errors import InvalidInput
from mnemonet.model.records import MAX_ITEMS, MAX_NAME_CHARS, MAX_TEXT_CHARS, SourceSpec, StatementSpec, check_text
from mnemonet.settings import Settings

CEILINGS = {"max_text_chars": MAX_TEXT_CHARS, "max_name_chars": MAX_NAME_CHARS,
            "max_concepts_per_write": MAX_ITEMS, "max_statements_per_write": MAX_ITEMS}


@pytest.mark.parametrize("name", sorted(CEILINGS))
def test_a_limit_above_the_records_ceiling_is_refused_naming_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.model_fields[name].default == CEILINGS[name]
    with pytest.raises(ValidationError, match=rf"{name}\n.*less than or equal to {CEILINGS[name]}"):
        Settings.model_validate({name: CEILINGS[name] + 100})
    monkeypatch.setenv(f"MNEMONET_{name.upper()}", str(CEILINGS[name] + 100))
    with pytest.raises(ValidationError, match=name):
        Settings()


def test_what_the_language_layer_lets_through_the_records_accept() -> None:
    longest = "n" * Settings().max_name_chars
    assert SourceSpec(name=longest).name == longest
    statement = StatementSpec(id="st-1", subject=longest, predicate="likes", object=longest)
    assert statement.subject == longest
    assert check_text("t" * Settings().max_text_chars) == "t" * MAX_TEXT_CHARS


async def test_a_lowered_limit_is_applied_before_the_model_is_called() -> None:
    model = OfflineLanguageModel(Settings(llm="offline", max_name_chars=20, max_text_chars=50))
    with pytest.raises(InvalidInput, match="source: longer than 20 characters"):
        await model.extract_observation("Alice lives in Paris.", source="s" * 21)
    with pytest.raises(InvalidInput, match="text: longer than 50 characters"):
        await model.extract_observation("word " * 11, source="alice")
    assert model.usage()["calls"] == 0
