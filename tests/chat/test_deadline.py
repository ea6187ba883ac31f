"""One chat answer has a deadline: the model's time over all the answer's calls. Against a
server that ignores ``max_tokens`` and never stops, the answer ends within it with a message
naming the endpoint and what to change; a reply cut at the max tokens is said to be cut; the
tools' own time is not the model's."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict
from typer.testing import CliRunner

from alphaloop.chat import Chat
from alphaloop.cli import app
from alphaloop.exceptions import LLMUnavailable
from alphaloop.journal import Journal
from alphaloop.settings import Settings
from alphaloop.tools import Tool

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]


def chat_calls(settings: Settings) -> list:
    with Journal(settings.journal_path) as journal:
        return [c for c in journal.logs.llm_calls() if c.purpose == "chat"]


def test_an_answer_from_a_model_that_never_stops_ends_at_the_deadline(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # The cap is far away (a slow model would reach it in minutes): the deadline ends it.
    settings = llm_settings(llm_chat_deadline_s=1.5, llm_chat_max_tokens=100_000,
                            llm_timeout_s=60.0)  # fmt: skip
    fake_openai.push(fake.endless(every_s=0.01))
    chat = Chat(settings)
    start = time.perf_counter()
    with pytest.raises(LLMUnavailable) as info:
        chat.ask("What helped most in my last session?")
    assert 1.5 <= time.perf_counter() - start < 3.5
    message = str(info.value)
    port = fake_openai.base_url.split(":")[2].split("/")[0]
    assert f"model 'fake-model' at 127.0.0.1:{port}" in message and "/v1" not in message
    assert "within the 1.5 s one chat answer may take (ALPHALOOP_LLM_CHAT_DEADLINE)" in message
    assert "Raise ALPHALOOP_LLM_CHAT_DEADLINE" in message
    assert "lower ALPHALOOP_LLM_CHAT_MAX_TOKENS (now 100000)" in message
    assert "bigger model" in message
    assert len(fake_openai.chat_requests) == 1  # a running generation is not asked again
    [call] = chat_calls(settings)
    assert not call.ok and "ALPHALOOP_LLM_CHAT_DEADLINE" in (call.error or "")
    assert [m["role"] for m in chat.messages] == ["system"]  # the question is not kept


def test_a_reply_cut_at_the_max_tokens_is_an_answer_said_to_be_cut(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.endless("ok "))
    answer = Chat(llm_settings(llm_chat_max_tokens=40)).ask("Say ok.")
    assert answer.cut and answer.text == ("ok " * 40).strip()


class _Nothing(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def test_the_deadline_counts_the_model_not_the_tools(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # A tool taking 1.5 s between two quick model calls: past a 1 s deadline in wall time,
    # well within it in the model's.
    def slow(args: _Nothing, ctx: object) -> dict[str, str]:
        time.sleep(1.5)
        return {"status": "done"}

    tools = {"slow_tool": Tool("slow_tool", "Takes a while.", _Nothing, slow)}
    fake_openai.push(fake.tool_call("slow_tool", {}), fake.text("Done."))
    chat = Chat(llm_settings(llm_chat_deadline_s=1.0), tools=tools)
    answer = chat.ask("Run the slow tool.")
    assert answer.text == "Done." and [t.name for t in answer.tool_calls] == ["slow_tool"]
    assert 0 < chat.context.model_time_left < 1.0


def test_chat_ask_against_a_server_that_never_stops_exits_1_with_the_message(
    fake_openai: fake.FakeOpenAI, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    env = {
        "ALPHALOOP_HOME": str(tmp_path / "home"),
        "ALPHALOOP_LLM_BASE_URL": fake_openai.base_url,
        "ALPHALOOP_LLM_MODEL": "/models/SmolLM2-135M-Instruct-Q8_0.gguf",
        "ALPHALOOP_LLM_CHAT_DEADLINE": "1.5",
        "ALPHALOOP_LLM_BACKOFF_BASE": "0.01",
    }
    for key, value in env.items():
        clean_env.setenv(key, value)
    server = fake.FakeOpenAI(models=(env["ALPHALOOP_LLM_MODEL"],)).start()
    clean_env.setenv("ALPHALOOP_LLM_BASE_URL", server.base_url)
    server.push(fake.endless(every_s=0.01))
    try:
        start = time.perf_counter()
        result = CliRunner().invoke(app, ["chat", "--ask", "what helped most?", "--json"])
        elapsed = time.perf_counter() - start
    finally:
        server.close()
    assert result.exit_code == 1, result.output
    assert elapsed < 4.0
    said = result.stderr
    assert "model 'SmolLM2-135M-Instruct-Q8_0.gguf' at 127.0.0.1:" in said
    assert "/models/" not in said  # a model given as a file shows its name only
    assert "ALPHALOOP_LLM_CHAT_DEADLINE" in said and "ALPHALOOP_LLM_CHAT_MAX_TOKENS" in said
    assert result.stdout == ""  # an error is no answer: stdout stays empty
    assert len(server.chat_requests) == 1 and server.chat_requests[0]["stream"] is True
