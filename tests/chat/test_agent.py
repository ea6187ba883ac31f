"""The chat graph: a scripted model answering through tool calls over a real journal."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from alphaloop.chat import LAST_STEP_NOTE, Chat, chat_graph
from alphaloop.exceptions import LLMUnavailable
from alphaloop.journal import Journal
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]


@pytest.fixture
def researched(llm_settings: SettingsFactory) -> tuple[Settings, str]:
    """Settings on the fake endpoint and a finished short TPE session in their journal."""
    settings = llm_settings()
    spec = SessionSpec(
        goal="maximise Sharpe",
        mode="cufolio_only",
        budget=3,
        proposer="tpe",
        data="synthetic",
        noise_seeds=2,
    )
    sid = create_session(spec, settings)
    run_session(sid, settings)
    return settings, sid


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_graph_is_compiled_with_model_tool_nodes_and_router() -> None:
    nodes = set(chat_graph.get_graph().nodes)
    assert {"call_model", "call_tools"} <= nodes


def test_answers_through_two_tool_calls_that_match_the_journal(
    fake_openai: fake.FakeOpenAI, researched: tuple[Settings, str]
) -> None:
    settings, sid = researched
    fake_openai.push(
        fake.tool_call("list_sessions", {}),
        fake.tool_call("leaderboard", {"session_id": sid, "k": 2}),
        fake.text("<think>read the board</think>The best trial is at the top."),
    )
    answer = Chat(settings).ask("Which trial is best in my last session?")
    assert answer.text == "The best trial is at the top."
    assert [t.name for t in answer.tool_calls] == ["list_sessions", "leaderboard"]
    assert all(t.ok for t in answer.tool_calls) and answer.steps == 3
    with Journal(settings.journal_path) as j:
        top = j.trials.leaderboard(sid, 2)
        chat_calls = [c for c in j.logs.llm_calls() if c.purpose == "chat"]
    listed = json.loads(answer.tool_calls[0].result)
    assert [s["id"] for s in listed["sessions"]] == [sid]
    board = json.loads(answer.tool_calls[1].result)
    assert [(t["id"], t["objective"]) for t in board["trials"]] == [
        (t.id, t.objective) for t in top
    ]
    # The model read exactly those results, in tool messages answering its calls.
    third = fake_openai.chat_requests[2]
    assert [m["content"] for m in tool_messages(third)] == [t.result for t in answer.tool_calls]
    assert third["tool_choice"] == "auto" and len(third["tools"]) == 12
    assert len(chat_calls) == 3 and all(c.ok for c in chat_calls)
    assert chat_calls[0].prompt_tokens == fake.prompt_tokens_for(
        fake_openai.chat_requests[0]["messages"]
    )


def test_tool_errors_go_back_to_the_model(
    fake_openai: fake.FakeOpenAI, researched: tuple[Settings, str]
) -> None:
    settings, _ = researched
    fake_openai.push(
        fake.tool_call("explain_trial", {"trial_id": 424242}),
        fake.tool_call("summarize_session", '{"session_id": "s-missing"'),
        fake.tool_call("summarize_session", {"session_id": "s-missing"}),
        fake.text("I could not find that."),
    )
    answer = Chat(settings).ask("Explain trial 424242")
    assert answer.text == "I could not find that."
    assert [t.ok for t in answer.tool_calls] == [False, False, False]
    errors = [json.loads(t.result)["error"] for t in answer.tool_calls]
    assert "424242" in errors[0] and "s-missing" in errors[2]


def test_step_limit_ends_with_an_answer_without_tools(
    fake_openai: fake.FakeOpenAI, researched: tuple[Settings, str]
) -> None:
    settings, _ = researched

    def endless(body: dict[str, Any]) -> fake.Step:
        if "tools" in body:
            return fake.tool_call("list_sessions", {})
        return fake.text("Here is what I found so far.")

    fake_openai.responder = endless
    answer = Chat(settings, max_steps=3).ask("Keep looking")
    assert answer.step_limit_hit and answer.steps == 3
    assert answer.text == "Here is what I found so far."
    assert len(answer.tool_calls) == 2
    last = fake_openai.chat_requests[-1]
    assert "tools" not in last and last["messages"][-1]["content"] == LAST_STEP_NOTE


def test_conversation_is_kept_across_questions_and_failures_do_not_pollute_it(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    settings = llm_settings(llm_max_retries=0)
    chat = Chat(settings)
    fake_openai.push(fake.text("Hello."))
    chat.ask("hi")
    fake_openai.push(fake.error(500, "down"))
    with pytest.raises(LLMUnavailable):
        chat.ask("are you there?")
    fake_openai.push(fake.text("Yes."))
    chat.ask("again?")
    roles = [(m["role"], m["content"]) for m in fake_openai.chat_requests[-1]["messages"][1:]]
    assert roles == [("user", "hi"), ("assistant", "Hello."), ("user", "again?")]
