"""The forgiving JSON-object parser."""

from __future__ import annotations

import pytest

from mnemonet.llm.json_repair import parse_json_object


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
        ('Here you go: {"a": "x, }"} -- done', {"a": "x, }"}),
        ('{"a": {"b": "brace } in \\" string"},}', {"a": {"b": 'brace } in " string'}}),
        ('```\n{"a": 1}\n```', {"a": 1}),
    ],
)
def test_repairs(reply: str, expected: dict) -> None:
    assert parse_json_object(reply) == expected


@pytest.mark.parametrize(
    ("reply", "message"),
    [("no json", "no JSON object"), ('{"a": 1', "not closed"), ("[1, 2]",
        "expected a JSON object, got list"), ('{"a": tru}', "invalid JSON")],
)
def test_failures_say_why(reply: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_json_object(reply)
