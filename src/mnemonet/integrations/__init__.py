"""Adapters for the frameworks agents are built in, on top of the HTTP client like ``cli``, ``web`` and ``mcp``.

- ``integrations.langgraph``: ``MnemonetStore``, LangGraph's long-term memory store (``mnemonet[langgraph]``).
- ``integrations.langchain``: ``MnemonetRetriever`` and ``MnemonetChatMessageHistory`` (``mnemonet[langchain]``).
- ``integrations.capture``: ``mnemonet capture``, the Claude Code hook that observes a session's turns.

Each framework is an optional extra: importing its module without it installed says which extra to install.
"""
