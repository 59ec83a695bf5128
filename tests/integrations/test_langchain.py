"""The LangChain retriever and chat history against a real node."""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage
from netsupport import client_token

from mnemonet.integrations.langchain import MnemonetChatMessageHistory, MnemonetRetriever
from mnemonet.node.peer_node import PeerNode
from mnemonet.service import SpacedMemory


async def test_the_retriever_returns_documents_with_ids_sources_and_times(
    store_node: PeerNode, memory: SpacedMemory
) -> None:
    written = await memory.observe("Dana works at Globex in Berlin", "alice")
    await memory.observe("The standup moved to ten o'clock", "bob")
    retriever = await asyncio.to_thread(MnemonetRetriever, url=store_node.url, token=client_token("read"), k=4)
    try:
        documents = await retriever.ainvoke("where does Dana work?")
        assert documents and documents[0].page_content
        by_id = {d.id: d for d in documents}
        assert all(d.id == d.metadata["id"] for d in documents)
        ids = {written.observation_id, *(s.id for s in written.statements)}
        found = [by_id[i] for i in ids if i in by_id]
        assert found, [d.metadata for d in documents]
        assert all(d.metadata["source"] == "alice" and isinstance(d.metadata["created_at"], int)
                   and d.metadata["created"].startswith("20") for d in found)
        assert {d.metadata["kind"] for d in found} <= {"observation", "statement"}
        sync = await asyncio.to_thread(retriever.invoke, "where does Dana work?")
        assert [d.id for d in sync] == [d.id for d in documents]
    finally:
        await asyncio.to_thread(retriever.close)

    answering = await asyncio.to_thread(MnemonetRetriever, url=store_node.url, token=client_token("read"),
                                        answer=True, k=2)
    try:
        first, *_ = await answering.ainvoke("where does Dana work?")
        assert first.metadata["kind"] == "answer" and "Globex" in first.page_content
        assert set(first.metadata["cited"]) & ids
    finally:
        await asyncio.to_thread(answering.close)


async def test_the_chat_history_observes_each_message_with_its_speaker_once(
    store_node: PeerNode, memory: SpacedMemory
) -> None:
    token = client_token("read,write,speak-for", name="chatbot")
    history = await asyncio.to_thread(MnemonetChatMessageHistory, store_node.url, "support-42", token,
                                      human="maria", assistant="helper")
    try:
        await history.aadd_messages([HumanMessage("My printer is an HP LaserJet 4"), AIMessage("Noted, thanks")])
        await history.aadd_messages([HumanMessage("I work from the Lyon office")])
        messages = await history.aget_messages()
        assert [(m.type, m.name, m.content) for m in messages] == [
            ("human", "maria", "My printer is an HP LaserJet 4"), ("ai", "helper", "Noted, thanks"),
            ("human", "maria", "I work from the Lyon office")]
        recent = await memory.get_recent_observations(10)
        assert sorted((o.source, o.metadata["turn"]) for o in recent) == [
            ("helper", "2"), ("maria", "1"), ("maria", "3")]
        assert {o.metadata["session"] for o in recent} == {"support-42"}
        answer = await memory.remember("which office does maria work from?")
        assert "Lyon" in answer.text
        # A new process continues the same session; the sync API from a thread.
        again = await asyncio.to_thread(MnemonetChatMessageHistory, store_node.url, "support-42", token,
                                        human="maria", assistant="helper")
        try:
            await asyncio.to_thread(again.add_user_message, "Thanks!")
            assert [m.content for m in await asyncio.to_thread(lambda: again.messages)][-1] == "Thanks!"
            await asyncio.to_thread(again.clear)
            assert await history.aget_messages() == []
        finally:
            await asyncio.to_thread(again.close)
        assert len(await memory.get_recent_observations(10)) == 4  # cleared is retracted, not erased
    finally:
        await asyncio.to_thread(history.close)


async def test_another_token_s_session_of_the_same_id_is_its_own(store_node: PeerNode, memory: SpacedMemory) -> None:
    # Turn keys are scoped by the token that writes them (issue 31 row 13): a second token with the same
    # session id neither collides with the first one's turns nor reads them as its own.
    histories = [await asyncio.to_thread(MnemonetChatMessageHistory, store_node.url, "support-42",
                                         client_token("read,write,speak-for", name=bot), human="maria",
                                         assistant=bot) for bot in ("helper", "other-helper")]
    try:
        first, second = histories
        await first.aadd_messages([HumanMessage("My printer is an HP LaserJet 4"), AIMessage("Noted")])
        await second.aadd_messages([HumanMessage("My desk is on floor 3")])
        assert [m.content for m in await first.aget_messages()] == ["My printer is an HP LaserJet 4", "Noted"]
        assert [m.content for m in await second.aget_messages()] == ["My desk is on floor 3"]
        assert sorted((o.source, o.metadata["turn"]) for o in await memory.get_recent_observations(10)) == [
            ("helper", "2"), ("maria", "1"), ("maria", "1")]
    finally:
        for history in histories:
            await asyncio.to_thread(history.close)
