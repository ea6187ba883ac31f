"""The chat agent: a conversation with the research agent, which answers through tools.

A front end like the command line: it reaches the library only through :mod:`alphaloop.tools`
(and so :mod:`alphaloop.ops`). It loads LangGraph, so ``alphaloop.tools`` does not import it.
"""

from alphaloop.chat.agent import (
    DEFAULT_MAX_STEPS,
    LAST_STEP_NOTE,
    Chat,
    ChatAnswer,
    ChatContext,
    ChatState,
    ToolTrace,
    build_chat_graph,
    chat_graph,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "LAST_STEP_NOTE",
    "Chat",
    "ChatAnswer",
    "ChatContext",
    "ChatState",
    "ToolTrace",
    "build_chat_graph",
    "chat_graph",
]
