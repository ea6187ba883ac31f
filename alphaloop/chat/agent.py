"""Chat with the research agent: an LLM answering through tool calls into the library.

The agent is a front end, like the command line: it offers the model :mod:`alphaloop.tools`,
which do their work through :mod:`alphaloop.ops`; nothing below the operations layer knows it.

The tool loop is a small LangGraph graph::

    START -> call_model -> (route_after_model) -> call_tools -> call_model ... -> END

``call_model`` asks the LLM with every tool offered; ``call_tools`` runs the calls it made and
appends their results; ``route_after_model`` ends the turn when the model answers in text or the
step limit is reached. The last allowed model call is made without tools, so a turn always ends
with an answer rather than a dangling tool call. :class:`Chat` keeps the conversation across
turns; every LLM call is journaled with purpose ``chat``.

One answer has a deadline (``llm_chat_deadline_s``): the model's time over all of the answer's
calls, retries and waits. The tools' own time is not counted (a trial the user asked for, a
confirmation the user is reading): the deadline is there for a model that does not stop. Past
it, the answer ends with an ``LLMUnavailable`` naming the endpoint and what to change.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict

from alphaloop import ops, prompts
from alphaloop.llm import LLMCallRecord, LLMClient
from alphaloop.llm.deadline import Deadline
from alphaloop.settings import Settings
from alphaloop.tools import TOOLS, Tool, ToolContext, call_tool

__all__ = [
    "Chat",
    "ChatAnswer",
    "ChatContext",
    "ChatState",
    "ToolTrace",
    "build_chat_graph",
    "chat_graph",
]

DEFAULT_MAX_STEPS = 8
LAST_STEP_NOTE = (
    "You have used every tool step of this turn. Answer the user now with what you found; "
    "say what is still unknown."
)


class ToolTrace(BaseModel):
    """One tool call of a turn and what it returned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: str
    result: str
    ok: bool


class ChatAnswer(BaseModel):
    """The outcome of one question: the answer text and the tool calls behind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    tool_calls: list[ToolTrace]
    steps: int
    step_limit_hit: bool = False
    # The last reply reached the max tokens of a chat reply and was cut there.
    cut: bool = False


class ChatState(TypedDict, total=False):
    messages: Annotated[list[dict[str, Any]], operator.add]  # OpenAI wire format
    traces: Annotated[list[ToolTrace], operator.add]
    steps: int  # model calls made in this turn
    cut: bool  # the last reply was cut at its max tokens


@dataclass
class ChatContext:
    """Runtime context of the chat graph (not part of the state)."""

    client: LLMClient
    tools: ToolContext
    registry: dict[str, Tool]
    max_steps: int = DEFAULT_MAX_STEPS
    on_tool: Callable[[ToolTrace], None] | None = None
    deadline_s: float | None = None  # the model's time allowed for one answer
    model_time_left: float = 0.0  # of the answer being made


def _deadline(ctx: ChatContext) -> Deadline | None:
    if ctx.deadline_s is None:
        return None
    return Deadline.after(
        ctx.model_time_left,
        limit_s=ctx.deadline_s,
        what="one chat answer",
        setting="ALPHALOOP_LLM_CHAT_DEADLINE",
    )


def call_model(state: ChatState, runtime: Runtime[ChatContext]) -> dict[str, Any]:
    ctx = runtime.context
    steps = state.get("steps", 0) + 1
    messages = list(state["messages"])
    kwargs: dict[str, Any] = {}
    if steps < ctx.max_steps:
        kwargs = {"tools": [t.spec() for t in ctx.registry.values()], "tool_choice": "auto"}
    else:
        messages.append({"role": "user", "content": LAST_STEP_NOTE})
    deadline, began = _deadline(ctx), time.monotonic()
    try:
        if deadline is None:
            reply = ctx.client.chat(messages, purpose="chat", **kwargs)
        else:
            with ctx.client.within(deadline):
                reply = ctx.client.chat(messages, purpose="chat", **kwargs)
    finally:
        ctx.model_time_left -= time.monotonic() - began
    turn: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls and steps < ctx.max_steps:
        # "" rather than null: llama-cpp-python answers a null content with 500.
        turn["content"] = reply.content or ""
        turn["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_raw},
            }
            for c in reply.tool_calls
        ]
    return {"messages": [turn], "steps": steps, "cut": reply.finish_reason == "length"}


def call_tools(state: ChatState, runtime: Runtime[ChatContext]) -> dict[str, Any]:
    ctx = runtime.context
    calls = state["messages"][-1].get("tool_calls") or []
    answers, traces = [], []
    for c in calls:
        fn = c["function"]
        result = call_tool(ctx.registry, fn["name"], fn["arguments"], ctx.tools)
        trace = ToolTrace(
            name=fn["name"], arguments=fn["arguments"], result=result.content, ok=result.ok
        )
        if ctx.on_tool is not None:
            ctx.on_tool(trace)
        traces.append(trace)
        answers.append(
            {
                "role": "tool",
                "tool_call_id": c["id"],
                "name": fn["name"],  # templates without call ids match results by name
                "content": result.content,
            }
        )
    return {"messages": answers, "traces": traces}


def route_after_model(state: ChatState) -> Literal["call_tools", "__end__"]:
    return "call_tools" if state["messages"][-1].get("tool_calls") else END


def build_chat_graph() -> StateGraph:
    builder = StateGraph(ChatState, context_schema=ChatContext)
    builder.add_node("call_model", call_model)
    builder.add_node("call_tools", call_tools)
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", route_after_model, ["call_tools", END])
    builder.add_edge("call_tools", "call_model")
    return builder


chat_graph = build_chat_graph().compile()


class Chat:
    """A conversation with the research agent over the journal at ``settings.journal_path``.

    Args:
        settings: the endpoint and the alphaloop home.
        confirm: asked before a tool runs or stops work (interactive use); None lets it run
            unless ``describe_only``.
        describe_only: tools that run or stop work say what they would do instead (a one-shot
            question nobody can confirm). Read-only tools always run.
        on_tool: told about every tool call as it finishes (for display).
        on_progress: told what a long tool is doing.
        max_steps: model calls allowed per question (tool rounds plus the answer).
        tools: the tools offered (default: all of :data:`alphaloop.tools.TOOLS`).

    Raises:
        InvalidRequest: no endpoint is configured.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        confirm: Callable[[str], bool] | None = None,
        on_tool: Callable[[ToolTrace], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        tools: dict[str, Tool] | None = None,
        describe_only: bool = False,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.settings = settings
        self.client = LLMClient(settings, on_call=self._journal_call)
        system = self.client.system_prompt(prompts.load("chat_system"))
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self.context = ChatContext(
            client=self.client,
            tools=ToolContext(
                settings, confirm=confirm, on_progress=on_progress, describe_only=describe_only
            ),
            registry=dict(tools or TOOLS),
            max_steps=max_steps,
            on_tool=on_tool,
            deadline_s=settings.llm_chat_deadline_s,
        )

    def _journal_call(self, record: LLMCallRecord) -> None:
        ops.notes.log_llm_call(self.settings, **record.model_dump())

    @property
    def tokens_used(self) -> int:
        return self.client.total_tokens

    def ask(self, question: str) -> ChatAnswer:
        """Answers one question, calling tools as the model asks; keeps the exchange.

        Raises:
            LLMError: the endpoint failed through every retry, or the model's time for one
                answer (``llm_chat_deadline_s``) ran out (the question is not kept).
        """
        question = question.strip()
        if not question:
            raise ValueError("ask needs a non-empty question")
        self.context.model_time_left = self.settings.llm_chat_deadline_s
        start = [*self.messages, {"role": "user", "content": question}]
        out = chat_graph.invoke(
            {"messages": start, "traces": [], "steps": 0},
            context=self.context,
            config={"recursion_limit": 2 * self.context.max_steps + 4},
        )
        self.messages = out["messages"]
        last = self.messages[-1]
        hit = out["steps"] >= self.context.max_steps
        text = (last.get("content") or "").strip() if last.get("role") == "assistant" else ""
        if not text:
            text = f"(no answer after {out['steps']} model calls)"
        return ChatAnswer(
            text=text,
            tool_calls=out["traces"],
            steps=out["steps"],
            step_limit_hit=hit,
            cut=out.get("cut", False),
        )
