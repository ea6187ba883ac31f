"""Streamed replies put together as each server streams them, through the real ``openai``
client: text, reasoning, tool calls (llama-cpp-python repeating the call's name in every delta,
Ollama sending the call whole), usage where the server sends it and an estimate where it does
not, and servers that will not stream."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from alphaloop.llm import LLMCallRecord, LLMClient
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]
USER = [{"role": "user", "content": "Propose one config edit, please."}]
TOOL = {
    "type": "function",
    "function": {
        "name": "propose_config_delta",
        "parameters": {"type": "object", "properties": {"changes": {"type": "object"}}},
    },
}
ARGS = {"changes": {"cvar_alpha": 0.93, "n_scenarios": 4000}, "rationale": "a calmer tail"}
# Which kinds send usage in a stream (llama-cpp-python never does).
SENDS_USAGE = {"openai": True, "vllm": True, "llama-server": True, "ollama": True,
               "llama-cpp-python": False}  # fmt: skip


def settings_for(server: fake.FakeOpenAI, llm_settings: SettingsFactory) -> Settings:
    return llm_settings(llm_base_url=server.base_url)


@pytest.mark.parametrize("kind", list(SENDS_USAGE))
def test_a_streamed_tool_call_is_assembled_as_the_server_sends_it(
    kind: str, llm_settings: SettingsFactory
) -> None:
    options = {"tool_parser": True} if kind == "vllm" else {}
    with fake.FakeOpenAI(kind=kind, **options) as server:
        server.push(fake.tool_call("propose_config_delta", ARGS, call_id="call_7"))
        records: list[LLMCallRecord] = []
        client = LLMClient(settings_for(server, llm_settings), on_call=records.append)
        reply = client.chat(USER, tools=[TOOL], tool_choice="auto", purpose="propose")
        sent = server.chat_requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    [call] = reply.tool_calls
    assert (call.id, call.name) == ("call_7", "propose_config_delta")  # the name once
    assert json.loads(call.arguments_raw) == ARGS
    assert reply.finish_reason == "tool_calls" and reply.attempts == 1
    prompt = fake.prompt_tokens_for(sent["messages"])
    completion = len(json.dumps(ARGS)) // 4
    if SENDS_USAGE[kind]:
        assert not reply.usage_estimated
        assert (reply.prompt_tokens, reply.completion_tokens) == (prompt, completion)
    else:
        # Estimated: the chunks that carried text (a token each, at least: 21 argument pieces)
        # or the characters generated (the name's too) // 4, whichever is larger.
        generated = len(json.dumps(ARGS)) + len("propose_config_delta")
        assert reply.usage_estimated
        assert reply.completion_tokens == max(21, generated // 4) == 26
    assert [(r.ok, r.completion_tokens) for r in records] == [(True, reply.completion_tokens)]


@pytest.mark.parametrize("kind", list(SENDS_USAGE))
def test_streamed_text_drops_reasoning_and_think_blocks(
    kind: str, llm_settings: SettingsFactory
) -> None:
    with fake.FakeOpenAI(kind=kind) as server:
        server.push(
            fake.text("<think>maybe lower gamma</think>\n\nLower the learning rate."),
            fake.reasoning("SECRET chain of thought", "Raise gamma."),
        )
        client = LLMClient(settings_for(server, llm_settings))
        first = client.chat(USER, purpose="chat")
        second = client.chat(USER, purpose="chat")
        assert all(r["stream"] is True for r in server.chat_requests)
    assert first.content == "Lower the learning rate." and first.finish_reason == "stop"
    assert first.raw_content is not None and first.raw_content.startswith("<think>")
    assert second.content == second.raw_content == "Raise gamma."
    assert "SECRET" not in second.model_dump_json()


def test_a_server_that_cannot_stream_tools_is_asked_whole_at_once(
    llm_settings: SettingsFactory,
) -> None:
    # llama-server builds of early 2025: a 500 "Cannot use tools with stream". No generation
    # ran, so the request goes again at once without streaming, and the client remembers.
    with fake.FakeOpenAI(kind="llama-server", stream_tools=False) as server:
        server.push(fake.tool_call("propose_config_delta", ARGS), fake.text("Done."))
        records: list[LLMCallRecord] = []
        settings = llm_settings(llm_base_url=server.base_url, llm_max_retries=0)
        client = LLMClient(settings, on_call=records.append)
        reply = client.chat(USER, tools=[TOOL], tool_choice="auto", purpose="chat")
        again = client.chat(USER, purpose="chat")
        sent = server.chat_requests
    assert reply.tool_calls[0].arguments() == ARGS and again.content == "Done."
    assert [r.get("stream", False) for r in sent] == [True, False, False]
    assert [r.ok for r in records] == [False, True, True]
    assert "Cannot use tools with stream" in (records[0].error or "")


def test_a_server_answering_a_stream_request_whole_is_read(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # A proxy (or an old server) that ignores "stream" and sends the completion as JSON.
    whole = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Whole."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }  # fmt: skip
    fake_openai.push(fake.Step("error", status=200, body=whole))
    reply = LLMClient(llm_settings()).chat(USER, purpose="chat")
    assert fake_openai.chat_requests[0]["stream"] is True
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == ("Whole.", 5, 2)
