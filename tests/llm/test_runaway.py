"""A server that ignores ``max_tokens`` and never stops, one that stalls mid-stream, one that
dies, one not up yet: what the client does about each, through the real ``openai`` client.

The stream is cut at ``max_tokens`` on the client's side and closed (the server sees the client
go); a generation that was running is never asked again (a stall or a reset costs one attempt);
what ran none (a refused connection, a 503) is retried; and a caller's deadline holds over
retries and waits."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from alphaloop.exceptions import LLMUnavailable
from alphaloop.llm import LLMCallRecord, LLMClient
from alphaloop.llm.deadline import Deadline
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]
USER = [{"role": "user", "content": "What helped most in my last session?"}]
KINDS = ("openai", "vllm", "llama-server", "llama-cpp-python", "ollama")


def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def client_for(settings: Settings, records: list[LLMCallRecord]) -> LLMClient:
    return LLMClient(settings, on_call=records.append)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_never_stops_is_cut_at_max_tokens(
    kind: str, llm_settings: SettingsFactory
) -> None:
    with fake.FakeOpenAI(kind=kind) as server:
        server.push(fake.endless("tok "))
        records: list[LLMCallRecord] = []
        client = client_for(llm_settings(llm_base_url=server.base_url), records)
        start = time.perf_counter()
        reply = client.chat(USER, purpose="chat", max_tokens=64)
        elapsed = time.perf_counter() - start
        # The client closed the stream, and the server saw it go (a real one stops there).
        assert wait_for(lambda: server.streams[0].end == "client closed")
        assert server.streams[0].max_tokens == 64 and server.streams[0].chunks >= 64
    assert elapsed < 4.0
    assert reply.finish_reason == "length" and reply.raw_content == "tok " * 64
    assert reply.completion_tokens == 64 and reply.usage_estimated  # the usage never came
    assert [(r.ok, r.finish_reason, r.completion_tokens) for r in records] == [(True, "length", 64)]


def test_a_stall_mid_stream_is_not_asked_again(llm_settings: SettingsFactory) -> None:
    with fake.FakeOpenAI() as server:
        server.push(fake.stall(after=5), fake.text("never asked for"))
        records: list[LLMCallRecord] = []
        settings = llm_settings(llm_base_url=server.base_url, llm_timeout_s=0.5,
                                llm_max_retries=4)  # fmt: skip
        start = time.perf_counter()
        with pytest.raises(LLMUnavailable) as info:
            client_for(settings, records).chat(USER, purpose="propose")
        elapsed = time.perf_counter() - start
        assert len(server.chat_requests) == 1 and server.pending == 1
    assert 0.5 <= elapsed < 2.0
    message = str(info.value)
    assert "within the 0.5 s one request may take (ALPHALOOP_LLM_TIMEOUT)" in message
    assert "still generating after 5 tokens" in message and "not asked again" in message
    assert [r.ok for r in records] == [False]


@pytest.mark.parametrize("after", [0, 5], ids=["before-answering", "mid-stream"])
def test_a_server_that_dies_while_answering_is_not_asked_again(
    llm_settings: SettingsFactory, after: int
) -> None:
    with fake.FakeOpenAI() as server:
        server.push(fake.reset(after=after), fake.text("never asked for"))
        records: list[LLMCallRecord] = []
        settings = llm_settings(llm_base_url=server.base_url, llm_max_retries=4)
        with pytest.raises(LLMUnavailable, match="dropped the connection") as info:
            client_for(settings, records).chat(USER, purpose="chat")
        assert len(server.chat_requests) == 1 and server.pending == 1
    said = "before answering" if after == 0 else "after 5 tokens of its answer"
    assert said in str(info.value) and "model 'fake-model' at 127.0.0.1:" in str(info.value)
    assert [r.ok for r in records] == [False]


def test_a_refused_connection_is_retried_until_the_server_is_up(
    llm_settings: SettingsFactory,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = fake.FakeOpenAI(port=port).push(fake.endless())
    records: list[LLMCallRecord] = []

    def on_call(record: LLMCallRecord) -> None:  # the server comes up after the 2nd refusal
        records.append(record)
        if len(records) == 2:
            server.start()

    settings = llm_settings(llm_base_url=f"http://127.0.0.1:{port}/v1", llm_max_retries=4,
                            llm_backoff_base_s=0.05, llm_backoff_max_s=0.2)  # fmt: skip
    try:
        reply = LLMClient(settings, on_call=on_call).chat(USER, purpose="chat", max_tokens=32)
    finally:
        server.close()
    assert reply.attempts == 3 and reply.finish_reason == "length"
    assert reply.raw_content == "tok " * 32
    assert [r.ok for r in records] == [False, False, True]
    assert all("cannot reach" in (r.error or "") for r in records[:-1])


def test_a_503_is_retried_and_the_runaway_answer_then_cut(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.error(503, "loading model"), fake.endless())
    records: list[LLMCallRecord] = []
    reply = client_for(llm_settings(), records).chat(USER, purpose="chat", max_tokens=16)
    assert reply.attempts == 2 and reply.finish_reason == "length"
    assert [r.ok for r in records] == [False, True] and "HTTP 503" in (records[0].error or "")


def test_a_deadline_cuts_a_slow_endless_stream_and_says_what_to_change(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(fake.endless(every_s=0.01))
    client = LLMClient(llm_settings(llm_chat_max_tokens=100_000))
    deadline = Deadline.after(0.8, limit_s=0.8, what="one chat answer",
                              setting="ALPHALOOP_LLM_CHAT_DEADLINE")  # fmt: skip
    start = time.perf_counter()
    with client.within(deadline), pytest.raises(LLMUnavailable) as info:
        client.chat(USER, purpose="chat")
    assert 0.8 <= time.perf_counter() - start < 2.0
    message = str(info.value)
    assert "within the 0.8 s one chat answer may take (ALPHALOOP_LLM_CHAT_DEADLINE)" in message
    assert "still generating after" in message
    assert "lower ALPHALOOP_LLM_CHAT_MAX_TOKENS (now 100000)" in message
    assert wait_for(lambda: fake_openai.streams[0].end == "client closed")


def test_a_retry_after_past_the_deadline_ends_at_once(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    # A 429 ran no generation and is worth waiting for, but not past the caller's deadline.
    fake_openai.push(fake.error(429, "busy", headers={"Retry-After": "30"}), fake.text("late"))
    client = LLMClient(llm_settings(llm_backoff_max_s=30.0))
    deadline = Deadline.after(1.0, limit_s=1.0, what="one chat answer",
                              setting="ALPHALOOP_LLM_CHAT_DEADLINE")  # fmt: skip
    start = time.perf_counter()
    with client.within(deadline), pytest.raises(LLMUnavailable, match="HTTP 429") as info:
        client.chat(USER, purpose="chat")
    assert time.perf_counter() - start < 1.0
    assert "ALPHALOOP_LLM_CHAT_DEADLINE" in str(info.value) and fake_openai.pending == 1
