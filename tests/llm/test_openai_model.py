"""The OpenAI-compatible provider over httpx against the local fake chat-completions server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mnemonet.llm import LanguageModelError, OpenAICompatibleLanguageModel

CLAIM = {
    "triple": {"subject": "user", "predicate": "prefers", "object": "afternoon", "negated": False, "confidence": 0.8},
    "concepts": [{"name": "afternoon", "kind": "time"}],
}


def chat(content: str, prompt_tokens: int = 40, completion_tokens: int = 9) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "model": "local",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


@pytest.fixture
async def model(fake_server):
    llm = OpenAICompatibleLanguageModel(fake_server.settings(openai_model="local", openai_api_key="sekrit"))
    yield llm
    await llm.aclose()


async def test_json_schema_request_and_valid_reply(model, fake_server) -> None:
    fake_server.push(body=chat(json.dumps(CLAIM)))
    claim = await model.parse_claim("user prefers afternoon (confidence 0.8)", "agent")

    assert (claim.triple.object, claim.triple.confidence) == ("afternoon", 0.8)
    sent = fake_server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer sekrit"
    body = sent["json"]
    assert body["model"] == "local"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "record_claim"
    assert body["messages"][0]["role"] == "system" and "<claim>" in body["messages"][1]["content"]
    usage = model.usage()
    assert (usage["calls"], usage["input_tokens"], usage["output_tokens"]) == (1, 40, 9)


async def test_broken_json_is_repaired_without_another_request(model, fake_server) -> None:
    broken = "Sure! Here is the result:\n```json\n" + json.dumps(CLAIM)[:-1] + ",}\n```\nHope it helps."
    fake_server.push(body=chat(broken))
    claim = await model.parse_claim("user prefers afternoon", "agent")
    assert claim.triple.predicate == "prefers"
    assert len(fake_server.requests) == 1


async def test_invalid_reply_is_retried_once_with_the_error(model, fake_server) -> None:
    fake_server.push(body=chat(json.dumps({"concepts": []})))
    fake_server.push(body=chat(json.dumps(CLAIM)))
    claim = await model.parse_claim("user prefers afternoon", "agent")

    assert claim.triple.object == "afternoon"
    second = fake_server.requests[1]["json"]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["content"] == '{"concepts": []}'
    assert "triple: Field required" in second[-1]["content"]
    assert model.usage()["calls"] == 1 and model.usage()["requests"] == 2


async def test_invalid_twice_fails_clearly(model, fake_server) -> None:
    fake_server.push(body=chat("no json here"))
    fake_server.push(body=chat('{"claims": [{"subject": "user"}]}'))
    with pytest.raises(LanguageModelError, match=
        r"invalid record_inferred_claims result after one retry: .*predicate: Field required"):
        await model.infer_claims("I work at Acme")
    assert "no JSON object in the reply" in fake_server.requests[1]["json"]["messages"][-1]["content"]
    assert model.usage()["failures"] == 1


async def test_json_schema_unsupported_falls_back_and_remembers(model, fake_server) -> None:
    fake_server.push(400, {"error": {"message": "response_format type json_schema is not supported"}})
    fake_server.push(body=chat(json.dumps(CLAIM)))
    fake_server.push(body=chat(json.dumps(CLAIM)))
    await model.parse_claim("user prefers afternoon", "agent")
    await model.parse_claim("user prefers afternoon", "agent")

    formats = [r["json"]["response_format"]["type"] for r in fake_server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert "JSON schema" in fake_server.requests[1]["json"]["messages"][1]["content"]


async def test_other_400_is_not_retried(model, fake_server) -> None:
    fake_server.push(400, {"error": {"message": "model 'local' not found"}})
    with pytest.raises(LanguageModelError, match="HTTP 400: .*model 'local' not found"):
        await model.parse_claim("user prefers afternoon", "agent")
    assert len(fake_server.requests) == 1


async def test_429_and_503_are_retried_then_give_up(model, fake_server) -> None:
    fake_server.push(429, {"error": {"message": "busy"}}, headers={"retry-after": "0"})
    fake_server.push(body=chat("Afternoon [st-2]."))
    answer = await model.answer("when?", [("st-2", "user prefers afternoon")])
    assert answer.cited == ["st-2"] and model.usage()["retries"] == 1
    assert "response_format" not in fake_server.requests[-1]["json"]

    for _ in range(3):
        fake_server.push(503, {"error": {"message": "loading model"}})
    with pytest.raises(LanguageModelError, match=r"gave up after 3 attempt\(s\): HTTP 503"):
        await model.summarise("meetings", ["user prefers afternoon"], None)


async def test_unreachable_server_fails_after_retries() -> None:
    from mnemonet.settings import Settings

    llm = OpenAICompatibleLanguageModel(Settings(openai_base_url="http://127.0.0.1:9/v1", llm_max_retries=1,
                                                 llm_retry_backoff=0.001, llm_timeout=1.0))
    try:
        with pytest.raises(LanguageModelError, match=r"gave up after 2 attempt\(s\): connection failed"):
            await llm.answer("q", [])
    finally:
        await llm.aclose()
