"""JSON nested too deeply is found without decoding it (``model.jsontext``)."""

from __future__ import annotations

import json

from mnemonet.model.jsontext import nested_deeper


def test_depth_is_counted_outside_strings_only() -> None:
    assert not nested_deeper(json.dumps({"a": [[1, 2], {"b": [3]}]}), limit=4)
    assert nested_deeper(json.dumps({"a": [[1, 2], {"b": [[3]]}]}), limit=4)
    # Brackets inside strings, escaped quotes included, are text, not nesting.
    assert not nested_deeper(json.dumps({"t": "[[[[{{{{ \" [[[[ ]]]]"}), limit=2)


def test_text_past_the_decoder_s_recursion_is_found_before_decoding() -> None:
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert nested_deeper(deep)
    assert not nested_deeper(json.dumps({"text": "plain"}))
