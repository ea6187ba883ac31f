"""LLMClient driving the real ``openai`` client over HTTP against the scripted fake server."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Callable
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import (
    AlphaloopError,
    InvalidRequest,
    LLMError,
    LLMUnavailable,
    Unsupported,
)
from alphaloop.llm import LLMCallRecord, LLMClient, image_part, nemotron_system_prompt, openai_tool
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

FakeOpenAI = fake.FakeOpenAI

SettingsFactory = Callable[..., Settings]
USER = [{"role": "user", "content": "Propose one config edit."}]


class Window(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    start: str = Field(description="ISO date")
    days: int = Field(ge=5, le=60)


class ProposeArgs(BaseModel):
    """A sample argument model: enum, bounds, a nested model (a $ref) and a field named title."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["ppo_only", "cufolio_only", "unified"]
    learning_rate: float = Field(ge=1e-5, le=1e-2, description="PPO Adam step size")
    window: Window
    title: str = Field(default="", max_length=80)
    note: str | None = None


def client_for(settings: Settings, records: list[LLMCallRecord] | None = None) -> LLMClient:
    return LLMClient(settings, on_call=None if records is None else records.append)


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_tool_call_round_trip(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    tool = openai_tool("propose_config_delta", "Propose a config edit.", ProposeArgs)
    args = {"mode": "unified", "learning_rate": 1e-4, "window": {"start": "2020-01-02", "days": 20}}
    fake_openai.push(
        fake.tool_call("propose_config_delta", args, call_id="call_abc"), fake.text("Noted.")
    )
    client = client_for(llm_settings())
    choice = {"type": "function", "function": {"name": "propose_config_delta"}}
    reply = client.chat(USER, tools=[tool], tool_choice=choice, purpose="propose")

    assert reply.finish_reason == "tool_calls"
    [call] = reply.tool_calls
    assert (call.id, call.name) == ("call_abc", "propose_config_delta")
    assert isinstance(call.arguments_raw, str)
    assert json.loads(call.arguments_raw) == args == call.arguments()
    ProposeArgs.model_validate(call.arguments())
    sent = fake_openai.chat_requests[0]
    assert sent["tools"] == [tool] and sent["tool_choice"] == choice

    # The tool result goes back referencing the call id; the strict server checks the link.
    history = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_raw},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": '{"status": "queued"}'},
    ]
    assert client.chat(history, tools=[tool], purpose="propose").content == "Noted."
    assert [r.rejected for r in fake_openai.requests] == [None, None]


def test_think_blocks_stripped(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    fake_openai.push(
        fake.text("<think>\nlower lr? {x}\n</think>\n\nLower the learning rate."),
        fake.text("still thinking about gamma</think>Raise gamma."),
    )
    client = client_for(llm_settings())
    first = client.chat(USER, purpose="chat")
    assert first.content == "Lower the learning rate."
    assert first.raw_content is not None and first.raw_content.startswith("<think>")
    assert client.chat(USER, purpose="chat").content == "Raise gamma."


def test_reasoning_content_is_ignored(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.reasoning("SECRET chain of thought", "final answer"))
    reply = client_for(llm_settings()).chat(USER, purpose="chat")
    assert reply.content == reply.raw_content == "final answer"
    assert "SECRET" not in reply.model_dump_json()


def test_usage_reported_per_call_and_totalled(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    records: list[LLMCallRecord] = []
    client = client_for(llm_settings(), records)
    messages = [{"role": "system", "content": "s" * 40}, {"role": "user", "content": "u" * 83}]
    fake_openai.push(fake.text("a" * 48), fake.tool_call("f", "x" * 21, content="c" * 3))
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}

    one = client.chat(messages, purpose="propose", session_id="s1", trial_id=7)
    two = client.chat(messages, tools=[tool], purpose="propose", session_id="s1", trial_id=8)

    # The fake counts characters // 4: (40 + 83) // 4 = 30 prompt tokens each time,
    # 48 // 4 = 12 and (3 + 21) // 4 = 6 completion tokens.
    assert (one.prompt_tokens, one.completion_tokens) == (30, 12)
    assert (two.prompt_tokens, two.completion_tokens) == (30, 6)
    assert [(r.prompt_tokens, r.completion_tokens, r.trial_id) for r in records] == [
        (30, 12, 7),
        (30, 6, 8),
    ]
    assert all(r.ok and r.error is None and r.session_id == "s1" for r in records)
    assert all(r.purpose == "propose" and r.model == "fake-model" for r in records)
    assert all(r.latency_s > 0 for r in records)
    assert client.total_tokens == 30 + 12 + 30 + 6 and client.calls == 2


def test_missing_usage_is_estimated(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    fake_openai.push(fake.text("b" * 40, include_usage=False))
    reply = client_for(llm_settings()).chat([{"role": "user", "content": "q" * 80}], purpose="chat")
    assert reply.usage_estimated
    assert (reply.prompt_tokens, reply.completion_tokens) == (20, 10)


def test_429_retry_after_is_honoured_but_capped(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    records: list[LLMCallRecord] = []
    client = client_for(llm_settings(llm_backoff_max_s=0.3), records)
    fake_openai.push(fake.error(429, "Rate limit reached", {"Retry-After": "30"}), fake.text("ok"))
    start = time.perf_counter()
    reply = client.chat(USER, purpose="propose")
    elapsed = time.perf_counter() - start
    assert reply.content == "ok" and reply.attempts == 2
    assert 0.3 <= elapsed < 5  # waited the cap, not the 30 s the server asked for
    assert [r.ok for r in records] == [False, True]
    assert "HTTP 429" in (records[0].error or "") and "attempt 1/3" in (records[0].error or "")


def test_429_retry_after_ms_below_the_cap(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    client = client_for(llm_settings(llm_backoff_base_s=0.001, llm_backoff_max_s=2.0))
    fake_openai.push(fake.error(429, headers={"retry-after-ms": "150"}), fake.text("ok"))
    start = time.perf_counter()
    assert client.chat(USER, purpose="propose").content == "ok"
    assert 0.15 <= time.perf_counter() - start < 1.5


def test_5xx_retried_with_backoff(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    records: list[LLMCallRecord] = []
    client = client_for(llm_settings(llm_backoff_base_s=0.05, llm_backoff_max_s=1.0), records)
    fake_openai.push(fake.error(500), fake.error(503), fake.text("ok"))
    start = time.perf_counter()
    reply = client.chat(USER, purpose="propose")
    assert reply.attempts == 3 and len(fake_openai.chat_requests) == 3
    assert time.perf_counter() - start >= 0.05 + 0.10  # base, then doubled
    assert [r.ok for r in records] == [False, False, True]


def test_5xx_gives_up_after_max_retries(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(*[fake.error(502, "bad gateway")] * 3)
    with pytest.raises(LLMUnavailable, match=r"HTTP 502.*gave up after 3 attempts") as info:
        client_for(llm_settings(llm_max_retries=2)).chat(USER, purpose="propose")
    assert info.value.attempts == 3 and info.value.status_code == 502


def test_read_timeout_is_not_retried(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # The server took the request and sent nothing back: it may be generating. Asking again
    # would generate again, so the call ends at its timeout with what to change.
    records: list[LLMCallRecord] = []
    client = client_for(llm_settings(llm_timeout_s=0.2, llm_max_retries=3), records)
    fake_openai.push(fake.delay(2.0), fake.text("never asked for"))
    start = time.perf_counter()
    with pytest.raises(LLMUnavailable, match=r"within the 0\.2 s one request may take") as info:
        client.chat(USER, purpose="propose")
    assert time.perf_counter() - start < 1.5
    message = str(info.value)
    assert "ALPHALOOP_LLM_TIMEOUT" in message and "ALPHALOOP_LLM_MAX_TOKENS (now 1024)" in message
    assert "not asked again" in message and "gave up" not in message
    assert len(fake_openai.chat_requests) == 1 and fake_openai.pending == 1
    assert [r.ok for r in records] == [False] and records[0].latency_s >= 0.2


def test_wrong_key_not_retried(llm_settings: SettingsFactory) -> None:
    with FakeOpenAI(api_key="sk-right") as server:
        records: list[LLMCallRecord] = []
        settings = llm_settings(llm_base_url=server.base_url, llm_api_key="sk-wrong")
        with pytest.raises(LLMError, match=r"rejected the API key: set ALPHALOOP_LLM_API_KEY"):
            client_for(settings, records).chat(USER, purpose="propose")
        assert len(server.chat_requests) == 1 and len(records) == 1 and not records[0].ok

        server.push(fake.text("ok"))
        settings = llm_settings(llm_base_url=server.base_url, llm_api_key="sk-right")
        assert client_for(settings).chat(USER, purpose="propose").content == "ok"
        assert server.requests[-1].headers["authorization"] == "Bearer sk-right"


def test_no_key_sends_placeholder(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    fake_openai.push(fake.text("ok"))
    client_for(llm_settings()).chat(USER, purpose="propose")
    assert fake_openai.requests[0].headers["authorization"] == "Bearer not-needed"


def test_unknown_model_not_retried(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    settings = llm_settings(llm_model="nemotron-typo")
    with pytest.raises(LLMError) as info:
        client_for(settings).chat(USER, purpose="propose")
    message = str(info.value)
    assert "unknown model 'nemotron-typo'" in message and fake_openai.base_url in message
    assert "ALPHALOOP_LLM_MODEL" in message and "GET /v1/models" in message
    assert len(fake_openai.chat_requests) == 1 and info.value.status_code == 404


def test_wrong_base_url_is_404_too(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    settings = llm_settings(llm_base_url=fake_openai.base_url.removesuffix("/v1") + "/api")
    with pytest.raises(LLMError, match="wrong base URL"):
        client_for(settings).chat(USER, purpose="propose")


def test_connection_refused(llm_settings: SettingsFactory) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    records: list[LLMCallRecord] = []
    settings = llm_settings(llm_base_url=f"http://127.0.0.1:{port}/v1", llm_max_retries=1)
    with pytest.raises(LLMUnavailable, match=r"cannot reach .* is the server running") as info:
        client_for(settings, records).chat(USER, purpose="propose")
    assert info.value.attempts == 2 and [r.ok for r in records] == [False, False]


def test_malformed_body_is_not_retried(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # A 200 whose stream breaks off in a garbled chunk: the server answered, so it generated.
    fake_openai.push(fake.malformed(), fake.text("never asked for"))
    with pytest.raises(LLMError, match="not a chat completion"):
        client_for(llm_settings(llm_max_retries=2)).chat(USER, purpose="propose")
    assert len(fake_openai.chat_requests) == 1 and fake_openai.pending == 1


def test_200_without_choices_is_a_bad_response(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.Step("error", status=200, body={"object": "error", "message": "oops"}))
    with pytest.raises(LLMError, match="no choices"):
        client_for(llm_settings(llm_max_retries=0)).chat(USER, purpose="propose")


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
            "to be set",
        ),
        (500, "tools param requires --jinja flag"),
        (500, "Unsupported param: tools"),
        (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
    ],
)
def test_tools_unsupported_is_distinguishable(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory, status: int, message: str
) -> None:
    tool = openai_tool("propose_config_delta", "Propose.", ProposeArgs)
    fake_openai.push(fake.error(status, message))
    with pytest.raises(Unsupported, match="does not support tool calling"):
        client_for(llm_settings()).chat(USER, tools=[tool], tool_choice="auto", purpose="p")
    assert len(fake_openai.chat_requests) == 1


def test_other_400_is_a_plain_bad_request(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.error(400, "This model's maximum context length is 4096 tokens"))
    with pytest.raises(LLMError, match="maximum context length") as info:
        client_for(llm_settings()).chat(USER, purpose="propose")
    assert not isinstance(info.value, Unsupported)
    assert isinstance(info.value, AlphaloopError)


def test_not_configured(llm_settings: SettingsFactory) -> None:
    with pytest.raises(InvalidRequest, match="ALPHALOOP_LLM_BASE_URL"):
        LLMClient(llm_settings(llm_base_url=None))


def test_nemotron_reasoning_switch(fake_openai: FakeOpenAI, llm_settings: SettingsFactory) -> None:
    on = client_for(llm_settings(llm_reasoning=True))
    off = client_for(llm_settings(llm_reasoning=False))
    assert on.system_prompt("You tune portfolios.") == "detailed thinking on\nYou tune portfolios."
    assert off.system_prompt("You tune portfolios.").splitlines() == [
        "detailed thinking off",
        "You tune portfolios.",
    ]
    assert nemotron_system_prompt("detailed thinking off\nBody", True) == (
        "detailed thinking on\nBody"
    )
    fake_openai.push(fake.text("ok"))
    on.chat([{"role": "system", "content": on.system_prompt("Be brief.")}, *USER], purpose="p")
    sent = fake_openai.chat_requests[0]["messages"][0]
    assert sent["content"].splitlines()[0] == "detailed thinking on"


def test_openai_tool_schema_is_inlined_with_bounds(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    spec = openai_tool("propose_config_delta", "Propose.", ProposeArgs)
    params = spec["function"]["parameters"]
    assert spec["type"] == "function" and spec["function"]["name"] == "propose_config_delta"
    assert not {"$ref", "$defs", "title"} & (_keys(params) - set(params["properties"]))
    props = params["properties"]
    assert props["mode"]["enum"] == ["ppo_only", "cufolio_only", "unified"]
    assert (props["learning_rate"]["minimum"], props["learning_rate"]["maximum"]) == (1e-5, 1e-2)
    assert props["window"]["properties"]["days"] == {"type": "integer", "minimum": 5, "maximum": 60}
    assert props["window"]["additionalProperties"] is False
    assert "title" in props and props["title"]["maxLength"] == 80
    assert params["required"] == ["mode", "learning_rate", "window"]
    assert params["additionalProperties"] is False

    fake_openai.push(fake.text("ok"))
    client = client_for(llm_settings())
    assert client.chat(USER, tools=[spec], tool_choice="required", purpose="p").content == "ok"
    # The strict fake, like simple servers, refuses the un-inlined pydantic schema.
    raw = {
        "type": "function",
        "function": {
            "name": "f",
            "description": "x",
            "parameters": ProposeArgs.model_json_schema(),
        },
    }
    with pytest.raises(LLMError, match=r"\$defs"):
        client.chat(USER, tools=[raw], purpose="p")


def test_recursive_model_cannot_be_inlined() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    with pytest.raises(ValueError, match="recursive"):
        openai_tool("tree", "A tree.", Node)


def test_image_part_accepted_by_server(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    part = image_part(png)
    assert base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) == png
    fake_openai.push(fake.text("An equity curve rising."))
    vision = LLMClient.for_vision(llm_settings(vlm_model="fake-model"))
    message = {"role": "user", "content": [{"type": "text", "text": "Read this chart."}, part]}
    assert vision.chat([message], purpose="chart_read").content == "An equity curve rising."
    bad = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file.png"}}]}
    with pytest.raises(LLMError, match="data URL"):
        vision.chat([bad], purpose="chart_read")


def test_request_carries_temperature_and_max_tokens(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(*[fake.text(x) for x in "abcd"])
    client = client_for(
        llm_settings(
            llm_temperature=0.3, llm_max_tokens=300, llm_chat_max_tokens=900, vlm_max_tokens=200
        )
    )
    client.chat(USER, purpose="propose")
    client.chat(USER, purpose="p", temperature=0.0, max_tokens=256)
    client.chat(USER, purpose="chat")
    client.chat(USER, purpose="chart_read")
    first, second, chat, chart = fake_openai.chat_requests
    # Every request is bounded: a model that never stops is cut at the cap.
    assert (first["temperature"], first["max_tokens"]) == (0.3, 300)
    assert (second["temperature"], second["max_tokens"]) == (0.0, 256)
    assert (chat["max_tokens"], chart["max_tokens"]) == (900, 200)
    assert first["model"] == "fake-model" and "tools" not in first


def test_fake_server_rejects_dangling_tool_ids_and_undeclared_choice(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    client = client_for(llm_settings())
    dangling = [*USER, {"role": "tool", "tool_call_id": "call_nope", "content": "{}"}]
    with pytest.raises(LLMError, match="tool_call_id"):
        client.chat(dangling, purpose="p")
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    choice = {"type": "function", "function": {"name": "g"}}
    with pytest.raises(LLMError, match="undeclared tool"):
        client.chat(USER, tools=[tool], tool_choice=choice, purpose="p")
    assert [r.rejected is not None for r in fake_openai.requests] == [True, True]


def test_responder_scripts_dynamic_replies(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.responder = lambda body: fake.text("echo: " + body["messages"][-1]["content"])
    fake_openai.push(fake.text("queued first"))
    client = client_for(llm_settings())
    assert client.chat(USER, purpose="p").content == "queued first"
    assert client.chat([{"role": "user", "content": "hi"}], purpose="p").content == "echo: hi"


def test_unscripted_request_fails_loudly(
    fake_openai: FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    with pytest.raises(LLMUnavailable, match="no scripted step"):
        client_for(llm_settings(llm_max_retries=0)).chat(USER, purpose="p")


def test_models_endpoint(fake_openai: FakeOpenAI) -> None:
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]
