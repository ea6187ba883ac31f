"""Spans around every research iteration, and the exact prompt journaled per LLM proposal: LLM
sessions through the CLI against the scripted server, spans caught by an in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from alphaloop import telemetry
from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.meta_agent.prompt_log import render_proposal_prompt
from alphaloop.meta_agent.proposers.llm import PROPOSE_TOOL
from alphaloop.settings import Settings, get_settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

LLM_SESSION = [
    "research",
    "maximise Sharpe",
    "--proposer",
    "llm",
    "--data",
    "synthetic",
    "--mode",
    "cufolio_only",
    "--noise-seeds",
    "2",
    "--json",
]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider=provider)
    yield exporter
    telemetry.reset()


@pytest.fixture
def env(fake_openai: fake.FakeOpenAI, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Settings:
    for key, value in {
        "ALPHALOOP_HOME": str(tmp_path / "home"),
        "ALPHALOOP_LLM_BASE_URL": fake_openai.base_url,
        "ALPHALOOP_LLM_MODEL": fake_openai.models[0],
        "ALPHALOOP_LLM_TIMEOUT": "5",
        "ALPHALOOP_LLM_MAX_RETRIES": "1",
        "ALPHALOOP_LLM_BACKOFF_BASE": "0.01",
    }.items():
        clean_env.setenv(key, value)
    return get_settings()


def delta(changes: dict[str, Any], rationale: str) -> fake.Step:
    return fake.tool_call(PROPOSE_TOOL, json.dumps({"changes": changes, "rationale": rationale}))


def children(all_spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in all_spans if s.parent and s.parent.span_id == parent.context.span_id]


def test_an_llm_session_traces_each_iteration_and_journals_each_prompt(
    fake_openai: fake.FakeOpenAI, env: Settings, spans: InMemorySpanExporter
) -> None:
    # The second reply is unusable: its prompt is journaled with the invalid row it became.
    script = [
        delta({"cvar_alpha": 0.97}, "deeper tail"),
        delta({"cufolio_hold_days": "5%"}, "percent"),
        delta({"cufolio_hold_days": 10}, "re-solve more often"),
    ]
    fake_openai.push(*script)
    result = CliRunner().invoke(app, [*LLM_SESSION, "--budget", "2"])
    assert result.exit_code == 0, result.output
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(env.journal_path) as j:
        search = j.trials.of_session(sid, kind="search")
        rendered = render_proposal_prompt(j, sid, search[0].idx)
    requests = fake_openai.chat_requests
    assert [t.status == "invalid" for t in search] == [False, True, False]
    # The journaled prompt is the request's messages, exactly (the retry turn included).
    assert [json.loads(t.prompt) for t in search] == [r["messages"] for r in requests]
    assert len(json.loads(search[2].prompt)) == 4  # system, user, the refused call, the reason
    # TPE rows have no prompt; the LLM's first prompt re-renders from the journal as sent.
    assert rendered == search[0].prompt
    assert all(t.prompt is None for t in j_rows(env, sid) if t.kind != "search")

    finished = spans.get_finished_spans()
    iterations = [s for s in finished if s.name == "research.iteration"]
    ran = [t for t in search if t.status != "invalid"]
    assert [s.attributes["alphaloop.trial.idx"] for s in iterations] == [t.idx for t in ran]
    for it in iterations:
        assert it.attributes["alphaloop.session.id"] == sid
        assert it.attributes["alphaloop.mode"] == "cufolio_only"
        names = sorted(s.name for s in children(finished, it))
        assert names[0] == "research.propose" and names[-1] == "research.trial"
        assert names.count("research.record") == 1
    chats = [s for s in finished if s.name == "chat fake-model"]
    assert len(chats) == 3
    for chat, request, step in zip(chats, requests, script, strict=True):
        assert chat.parent is not None
        [parent] = [s for s in finished if s.context.span_id == chat.parent.span_id]
        assert parent.name == "research.propose"
        a = chat.attributes
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"]) == ("chat", "openai")
        assert a["gen_ai.request.model"] == "fake-model" == a["gen_ai.response.model"]
        assert a["gen_ai.usage.input_tokens"] == fake.prompt_tokens_for(request["messages"])
        assert a["gen_ai.usage.output_tokens"] == fake.completion_tokens_for(step)
    # Two LLM calls (the refused reply and its retry) share the second iteration's propose.
    assert len({c.parent.span_id for c in chats}) == 2


def j_rows(settings: Settings, sid: str) -> list[Any]:
    with Journal(settings.journal_path) as j:
        return j.trials.of_session(sid)


@pytest.mark.slow
def test_with_two_workers_each_trial_nests_under_its_iteration_and_prompts_show_the_rest(
    fake_openai: fake.FakeOpenAI, env: Settings, spans: InMemorySpanExporter
) -> None:
    counter = iter(range(100))
    fake_openai.responder = lambda body: delta(
        {"cvar_alpha": 0.86 + 0.01 * next(counter)}, "a little deeper each time"
    )
    result = CliRunner().invoke(app, [*LLM_SESSION, "--budget", "3", "--workers", "2"])
    assert result.exit_code == 0, result.output
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(env.journal_path) as j:
        search = j.trials.of_session(sid, kind="search")
        rendered = [render_proposal_prompt(j, sid, t.idx) for t in search]
    assert len(search) == 3 and all(t.counted for t in search)
    # Each prompt re-renders from the journal, the trials then in flight included.
    assert rendered == [t.prompt for t in search]
    second = json.loads(search[1].prompt)[1]["content"]
    assert (
        "## Trials running now" in second and f"- trial {search[0].idx}: cvar_alpha=0.86" in second
    )
    assert "## Trials running now" not in json.loads(search[0].prompt)[1]["content"]

    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    iterations = [s for s in finished if s.name == "research.iteration"]
    assert sorted(s.attributes["alphaloop.trial.idx"] for s in iterations) == [
        t.idx for t in search
    ]
    trials = [s for s in finished if s.name == "research.trial"]
    assert {s.attributes["alphaloop.trial.idx"] for s in trials} >= {t.idx for t in search}
    for trial in trials:
        parent = by_id[trial.parent.span_id]
        assert parent.name == "research.iteration"
        if trial.attributes["alphaloop.trial.kind"] == "search":
            assert (
                parent.attributes["alphaloop.trial.idx"] == trial.attributes["alphaloop.trial.idx"]
            )
    # The two first iterations overlapped: both were open while the first trial ran.
    first, second_it = sorted(iterations, key=lambda s: s.attributes["alphaloop.trial.idx"])[:2]
    assert second_it.start_time < first.end_time
