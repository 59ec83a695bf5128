"""Anthropic Claude through the official async SDK: tool_use for structured results, text for prose.

The SDK's own retries are off (``max_retries=0``) so that one loop, ours,
decides: 429/5xx/timeouts/connection errors back off exponentially with
jitter and honour Retry-After; every other error fails at once. The system
prompt is sent as a text block marked ``cache_control: ephemeral`` so its
long, fixed part is served from Anthropic's prompt cache.
"""

from __future__ import annotations

from typing import Any, TypeVar

import anthropic
from anthropic.types import Message

from mnemonet.llm.errors import LanguageModelError
from mnemonet.llm.prompted import PromptedLanguageModel, Validator
from mnemonet.llm.prompts import PromptLibrary, RenderedPrompt
from mnemonet.llm.retry import Retryable, is_retryable_status, parse_retry_after, retrying
from mnemonet.llm.validation import MalformedResult
from mnemonet.settings import Settings

T = TypeVar("T")


class AnthropicLanguageModel(PromptedLanguageModel):
    """``LanguageModel`` on the Anthropic Messages API."""

    def __init__(self, settings: Settings, *, api_key: str, prompts: PromptLibrary | None = None) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise ValueError("api_key: the Anthropic provider needs ANTHROPIC_API_KEY")
        super().__init__(settings, prompts)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=settings.anthropic_base_url or None,
            max_retries=0,
            timeout=settings.llm_timeout,
        )

    @property
    def name(self) -> str:
        return f"anthropic:{self.settings.anthropic_model}"

    async def aclose(self) -> None:
        await self._client.close()

    async def _call_tool(self, prompt: RenderedPrompt, validate: Validator[T]) -> T:
        if not prompt.tool_name or prompt.schema is None:
            raise LanguageModelError("anthropic: prompt has no tool_name/schema for a structured result")
        message = await self._create(
            prompt,
            tools=[{
                "name": prompt.tool_name,
                "description": f"Record the {prompt.tool_name.replace('_', ' ')} result.",
                "input_schema": prompt.schema,
            }],
            tool_choice={"type": "tool", "name": prompt.tool_name},
        )
        for block in message.content:
            if block.type == "tool_use" and block.name == prompt.tool_name:
                try:
                    return validate(block.input)
                except MalformedResult as exc:
                    raise MalformedResult(f"anthropic: malformed {prompt.tool_name} tool input: {exc}") from None
        raise LanguageModelError(
            f"anthropic: reply has no {prompt.tool_name} tool call (stop_reason={message.stop_reason})"
        )

    async def _call_text(self, prompt: RenderedPrompt) -> str:
        message = await self._create(prompt)
        return "".join(block.text for block in message.content if block.type == "text")

    async def _create(self, prompt: RenderedPrompt, **extra: Any) -> Message:
        request: dict[str, Any] = {
            "model": self.settings.anthropic_model,
            "max_tokens": self.settings.llm_max_tokens,
            "system": [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": prompt.user}],
            **extra,
        }

        async def attempt() -> Message:
            self._usage.requests += 1
            try:
                return await self._client.messages.create(**request)
            except anthropic.APIStatusError as exc:
                detail = f"HTTP {exc.status_code}: {exc.api_message or exc.message}"
                if is_retryable_status(exc.status_code):
                    raise Retryable(detail, parse_retry_after(exc.response.headers)) from exc
                raise LanguageModelError(f"anthropic: {detail}") from exc
            except anthropic.APITimeoutError as exc:
                raise Retryable(f"timed out after {self.settings.llm_timeout}s") from exc
            except anthropic.APIConnectionError as exc:
                raise Retryable(f"connection failed: {exc}") from exc

        message = await retrying(
            attempt,
            what="anthropic",
            max_retries=self.settings.llm_max_retries,
            base=self.settings.llm_retry_backoff,
            cap=self.settings.llm_retry_max_delay,
            on_retry=self._count_retry,
        )
        self._record(message)
        return message

    def _count_retry(self) -> None:
        self._usage.retries += 1

    def _record(self, message: Message) -> None:
        u = message.usage
        self._usage.input_tokens += u.input_tokens or 0
        self._usage.output_tokens += u.output_tokens or 0
        self._usage.cache_creation_input_tokens += u.cache_creation_input_tokens or 0
        self._usage.cache_read_input_tokens += u.cache_read_input_tokens or 0
