"""Any OpenAI-compatible chat-completions server (Ollama, LM Studio, vLLM, llama.cpp) over httpx.

Structured results ask for ``response_format: json_schema``; a server that
answers 400 about it gets ``json_object`` from then on (remembered per
instance). Replies are parsed forgivingly (``json_repair``) and validated;
an invalid one is retried once with the error appended to the conversation,
then the call fails with ``LanguageModelError``. 429/5xx/timeouts/transport
errors are retried with backoff like the Anthropic provider.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import httpx

from mnemonet.llm.errors import LanguageModelError
from mnemonet.llm.json_repair import parse_json_object
from mnemonet.llm.prompted import PromptedLanguageModel, Validator
from mnemonet.llm.prompts import PromptLibrary, RenderedPrompt
from mnemonet.llm.retry import Retryable, is_retryable_status, parse_retry_after, retrying
from mnemonet.llm.validation import MalformedResult, checked_reply_text
from mnemonet.settings import Settings

T = TypeVar("T")

_FORMAT_WORDS = ("response_format", "json_schema")


class OpenAICompatibleLanguageModel(PromptedLanguageModel):
    """``LanguageModel`` on ``POST {openai_base_url}/chat/completions``."""

    def __init__(self, settings: Settings, *, prompts: PromptLibrary | None = None) -> None:
        super().__init__(settings, prompts)
        headers = {"Authorization": f"Bearer {settings.openai_api_key}"} if settings.openai_api_key else {}
        self._client = httpx.AsyncClient(
            base_url=settings.openai_base_url.rstrip("/") + "/", timeout=settings.llm_timeout, headers=headers
        )
        self._json_schema_supported = True

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.settings.openai_model}"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call_tool(self, prompt: RenderedPrompt, validate: Validator[T]) -> T:
        if not prompt.tool_name or prompt.schema is None:
            raise LanguageModelError("openai-compatible: prompt has no tool_name/schema for a structured result")
        # The schema goes into the prompt too: a json_object-only server has no other way to see it.
        messages = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": f"{prompt.user}\n\nReply with one JSON object matching this JSON schema:\n"
             f"{json.dumps(prompt.schema)}"},
        ]
        error = ""
        for attempt in range(2):
            content = await self._complete(messages, prompt)
            try:
                return validate(parse_json_object(content))
            except (ValueError, MalformedResult) as exc:
                error = str(exc)
            if attempt == 0:
                messages += [
                    {"role": "assistant", "content": content[:4000]},
                    {"role": "user", "content": f"Your reply was not valid: {error}\n"
                     "Reply again with only the corrected JSON object matching the schema."},
                ]
        raise MalformedResult(f"openai-compatible: invalid {prompt.tool_name} result after one retry: {error}")

    async def _call_text(self, prompt: RenderedPrompt) -> str:
        messages = [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
        return await self._complete(messages, None)

    async def _complete(self, messages: list[dict[str, str]], prompt: RenderedPrompt | None) -> str:
        """One completion (with transport retries); a structured prompt asks for JSON output."""
        body: dict[str, Any] = {
            "model": self.settings.openai_model,
            "messages": messages,
            "max_tokens": self.settings.llm_max_tokens,
            "temperature": 0,
        }
        if prompt is not None:
            body["response_format"] = self._response_format(prompt)
        try:
            data = await self._post(body)
        except _FormatUnsupported:
            self._json_schema_supported = False
            body["response_format"] = {"type": "json_object"}
            data = await self._post(body)
        self._record(data)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LanguageModelError("openai-compatible: reply has no choices[0].message.content") from None
        return checked_reply_text(content, "openai-compatible reply", self.settings)

    def _response_format(self, prompt: RenderedPrompt) -> dict[str, Any]:
        if not self._json_schema_supported:
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": prompt.tool_name, "schema": prompt.schema}}

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        async def attempt() -> dict[str, Any]:
            self._usage.requests += 1
            try:
                response = await self._client.post("chat/completions", json=body)
            except httpx.TimeoutException as exc:
                raise Retryable(f"timed out after {self.settings.llm_timeout}s") from exc
            except httpx.TransportError as exc:
                raise Retryable(f"connection failed: {exc}") from exc
            if response.status_code >= 400:
                detail = f"HTTP {response.status_code}: {response.text[:300]}"
                if is_retryable_status(response.status_code):
                    raise Retryable(detail, parse_retry_after(response.headers))
                if (
                    response.status_code == 400
                    and "json_schema" in json.dumps(body.get("response_format", ""))
                    and any(w in response.text for w in _FORMAT_WORDS)
                ):
                    raise _FormatUnsupported(detail)
                raise LanguageModelError(f"openai-compatible: {detail}")
            if len(response.content) > self.settings.llm_max_reply_chars:
                raise LanguageModelError(
                    f"openai-compatible: reply longer than {self.settings.llm_max_reply_chars} characters"
                )
            try:
                data = response.json()
            except ValueError:
                raise LanguageModelError("openai-compatible: the server's reply is not JSON") from None
            if not isinstance(data, dict):
                raise LanguageModelError("openai-compatible: the server's reply is not a JSON object")
            return data

        return await retrying(
            attempt,
            what="openai-compatible",
            max_retries=self.settings.llm_max_retries,
            base=self.settings.llm_retry_backoff,
            cap=self.settings.llm_retry_max_delay,
            on_retry=self._count_retry,
        )

    def _count_retry(self) -> None:
        self._usage.retries += 1

    def _record(self, data: dict[str, Any]) -> None:
        usage = data.get("usage")
        if isinstance(usage, dict):  # optional on many local servers, and not always well typed
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            self._usage.input_tokens += prompt if isinstance(prompt, int) else 0
            self._usage.output_tokens += completion if isinstance(completion, int) else 0


class _FormatUnsupported(LanguageModelError):
    """The server rejected ``response_format: json_schema`` (HTTP 400 naming it)."""
