"""LangChain adapters over a mnemonet network (``mnemonet[langchain]``).

- ``MnemonetRetriever``: a ``BaseRetriever`` over hybrid ``search`` (vector + keyword), each hit loaded
  with its provenance: documents carry the statement or observation id (``Document.id`` and
  ``metadata["id"]``), kind, score, source (who said it) and time (``created_at``, Unix ms, and
  ``created``, ISO 8601). With ``answer=True`` the first document is ``remember``'s answer, citing ids.
- ``MnemonetChatMessageHistory``: a ``BaseChatMessageHistory`` that observes each message with its
  speaker (the human's name, the assistant's name) as a turn of the session: metadata ``session``,
  so each turn is embedded in the context of the one before, and an idempotency key from the session
  and the turn, so a retried write is written once. ``clear`` retracts the session's turns: the memory
  is append-only, the history keeps them, taken back.

Both talk to a node through ``HttpMemoryClient`` on an event-loop thread of their own (sync and async
calls alike); call ``close()`` when done.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the LangChain adapters need langchain-core: pip install 'mnemonet[langchain]'") from exc
from pydantic import ConfigDict, PrivateAttr

from mnemonet.integrations.keyed import Numbered, load_all, load_run
from mnemonet.integrations.runner import LoopThread
from mnemonet.p2p.client import HttpMemoryClient

T = TypeVar("T")
SESSION_KEY = "session"  # the metadata key the store reads as the conversation (settings.search_session_key)
CLEAR_REASON = "chat history cleared"


class _Connection:
    """An ``HttpMemoryClient`` living on a loop thread of its own."""

    def __init__(self, url: str | Sequence[str], token: str, timeout: float, name: str) -> None:
        urls = url.split(",") if isinstance(url, str) else list(url)
        self.runner = LoopThread(name)

        async def make() -> HttpMemoryClient:
            return HttpMemoryClient(urls, token, timeout=timeout)

        self.client = self.runner.run(make)

    def run(self, make: Callable[[HttpMemoryClient], Coroutine[Any, Any, T]]) -> T:
        return self.runner.run(lambda: make(self.client))

    async def arun(self, make: Callable[[HttpMemoryClient], Coroutine[Any, Any, T]]) -> T:
        return await self.runner.arun(lambda: make(self.client))

    def close(self) -> None:
        self.runner.close(self.client.aclose)


def _iso(epoch_ms: Any) -> str | None:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat() if isinstance(epoch_ms, int) else None


class MnemonetRetriever(BaseRetriever):
    """Documents from the memory for a query: hybrid search hits with their provenance.

    ``kinds`` limits the hits (``observation``, ``statement``, ``concept``, ``summary``); ``answer``
    puts ``remember``'s answer first (metadata ``cited``: the ids it rests on, ``confidence``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    url: str
    token: str = ""
    k: int = 5
    kinds: list[str] | None = None
    space: str | None = None
    answer: bool = False
    timeout: float = 120.0
    _connection: _Connection = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._connection = _Connection(self.url, self.token, self.timeout, "mnemonet-langchain-retriever")

    def close(self) -> None:
        """Close the connections and the loop thread."""
        self._connection.close()

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._connection.run(lambda client: self._documents(client, query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return await self._connection.arun(lambda client: self._documents(client, query))

    async def _documents(self, client: HttpMemoryClient, query: str) -> list[Document]:
        out: list[Document] = []
        if self.answer:
            said = await client.remember(query, space=self.space)
            out.append(Document(page_content=said.text, metadata={
                "kind": "answer", "cited": list(said.cited), "confidence": said.confidence,
                "provider": said.provider}))
        hits = await client.search(query, k=self.k, kinds=self.kinds, space=self.space)
        loaded = {item["id"]: item for item in await load_all(client, [h.id for h in hits], self.space)}
        for hit in hits:
            item = loaded.get(hit.id, {})
            metadata = {"id": hit.id, "kind": hit.kind, "score": hit.score, "source": item.get("source"),
                        "created_at": item.get("created_at"), "created": _iso(item.get("created_at"))}
            if hit.space is not None:
                metadata["space"] = hit.space
            out.append(Document(id=hit.id, page_content=hit.text, metadata=metadata))
        return out


class MnemonetChatMessageHistory(BaseChatMessageHistory):
    """One conversation's messages as observations of ``space``, each said by its speaker.

    ``human`` and ``assistant`` name the speakers (the sources of their turns); a token whose name is
    not both needs ``speak-for``. ``messages`` reads the session back from the memory, so a new process
    (or another agent) with the same ``session_id`` and token continues it: the turns' keys are scoped
    by the token that writes them, so another token's session of the same id is a session of its own.
    """

    def __init__(self, url: str | Sequence[str], session_id: str, token: str = "", *, human: str = "user",
                 assistant: str = "assistant", space: str = "default", timeout: float = 120.0) -> None:
        self.session_id = session_id
        self.human, self.assistant, self.space = human, assistant, space
        self._connection = _Connection(url, token, timeout, "mnemonet-chat-history")

    def close(self) -> None:
        """Close the connections and the loop thread."""
        self._connection.close()

    def _key(self, turn: int) -> str:
        digest = hashlib.sha256(self.session_id.encode()).hexdigest()
        return f"chat:{digest}:{turn}"

    async def _turns(self, client: HttpMemoryClient) -> list[Numbered]:
        return await load_run(client, self._key, self.space)

    def _message(self, turn: Numbered) -> BaseMessage:
        observation = turn.observation
        role = (observation.get("metadata") or {}).get("role")
        kind = {"ai": AIMessage, "system": SystemMessage}.get(str(role), HumanMessage)
        return kind(content=observation["text"], name=observation.get("source"), id=observation["id"])

    async def _read(self, client: HttpMemoryClient) -> list[BaseMessage]:
        return [self._message(t) for t in await self._turns(client) if not t.retracted]

    def _speaker(self, message: BaseMessage) -> str:
        return self.assistant if message.type == "ai" else message.name or self.human

    async def _add(self, client: HttpMemoryClient, messages: Sequence[BaseMessage]) -> None:
        turn = len(await self._turns(client))
        for message in messages:
            text = message.text if isinstance(message.content, list) else str(message.content)
            if not text.strip():
                continue  # nothing said (a tool call's empty content): no observation
            turn += 1
            await client.observe(text, self._speaker(message), idempotency_key=self._key(turn), space=self.space,
                                 metadata={SESSION_KEY: self.session_id[:500], "turn": str(turn),
                                           "role": message.type})

    async def _clear(self, client: HttpMemoryClient) -> None:
        for turn in await self._turns(client):
            if not turn.retracted:
                speaker = turn.observation.get("source") or self.human
                await client.retract(turn.observation["id"], CLEAR_REASON, speaker, space=self.space)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # a read of the memory, not a field
        """The session's messages in order, without those taken back by ``clear``."""
        return self._connection.run(self._read)

    async def aget_messages(self) -> list[BaseMessage]:
        """The session's messages in order (async)."""
        return await self._connection.arun(self._read)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Observe each message as the next turn, said by its speaker."""
        self._connection.run(lambda client: self._add(client, messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Observe each message as the next turn (async)."""
        await self._connection.arun(lambda client: self._add(client, messages))

    def clear(self) -> None:
        """Retract the session's turns (append-only: kept in the history, never current again)."""
        self._connection.run(self._clear)

    async def aclear(self) -> None:
        """Retract the session's turns (async)."""
        await self._connection.arun(self._clear)
