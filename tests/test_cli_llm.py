"""``alphaloop research --proposer llm`` and ``alphaloop chat`` end to end: the real CLI, the real
journal and the real ``openai`` client against the scripted server."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.meta_agent.proposers.llm import PROPOSE_TOOL, proposal_prompt
from alphaloop.settings import Settings, get_settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

GOAL = "maximise Sharpe"
LLM_SESSION = [
    "research",
    GOAL,
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
def env(
    fake_openai: fake.FakeOpenAI, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """The environment a user would set: home, endpoint, model, fast retries."""
    values = {
        "ALPHALOOP_HOME": str(tmp_path / "home"),
        "ALPHALOOP_LLM_BASE_URL": fake_openai.base_url,
        "ALPHALOOP_LLM_MODEL": fake_openai.models[0],
        "ALPHALOOP_LLM_TIMEOUT": "0.5",
        "ALPHALOOP_LLM_MAX_RETRIES": "2",
        "ALPHALOOP_LLM_BACKOFF_BASE": "0.01",
        "ALPHALOOP_LLM_BACKOFF_MAX": "0.05",
    }
    for key, value in values.items():
        clean_env.setenv(key, value)
    yield get_settings()


def run_cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    return result


def delta(changes: dict[str, Any] | str, rationale: str) -> fake.Step:
    raw = (
        changes
        if isinstance(changes, str)
        else json.dumps({"changes": changes, "rationale": rationale})
    )
    return fake.tool_call(PROPOSE_TOOL, raw)


def test_llm_session_survives_every_fault_and_journals_it(
    fake_openai: fake.FakeOpenAI, env: Settings
) -> None:
    # Each search trial's proposal, with the endpoint and the model misbehaving on the way.
    script = [
        fake.error(429, "rate limited", headers={"Retry-After": "1"}),
        delta({"cvar_alpha": 0.97, "max_position_pct": 0.6}, "wider caps"),  # 0.6 is clipped
        fake.error(500, "boom"),
        fake.error(503, "loading model"),
        delta({"n_scenarios": "3e3", "alpha_boost": 2}, "fewer scenarios"),  # unknown dropped
        fake.error(502, "bad gateway"),
        delta({"cufolio_hold_days": "5%"}, "percent"),  # invalid row, reason fed back
        delta('{"changes": {"cufolio_hold_days": NaN}, "rationale": "nan"}', ""),  # invalid
        delta({"cufolio_hold_days": 10}, "re-solve more often"),
    ]
    fake_openai.push(*script)
    result = run_cli(*LLM_SESSION, "--budget", "3")
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    sid = review["session"]["id"]
    assert fake_openai.pending == 0
    with Journal(env.journal_path) as j:
        search = j.trials.of_session(sid, kind="search")
        calls = j.logs.llm_calls(sid)
        clips = j.logs.session_clips(sid)
        session = j.sessions.get(sid)
        tests = j.trials.of_session(sid, kind="test")
    done = [t for t in search if t.status != "invalid"]
    invalid = [t for t in search if t.status == "invalid"]
    assert [t.proposer for t in done] == ["llm"] * 3
    assert [t.rationale for t in done] == [
        "wider caps",
        "fewer scenarios [dropped unknown knobs: alpha_boost]",
        "re-solve more often",
    ]
    assert [t.delta["changes"] for t in done] == [
        {"cvar_alpha": 0.97, "max_position_pct": 0.6},
        {"n_scenarios": 3000.0},
        {"cufolio_hold_days": 10.0},
    ]
    [clipped] = [c for c in clips if c.knob == "max_position_pct"]
    assert (clipped.trial_id, clipped.proposed, clipped.applied) == (done[0].id, 0.6, 0.3)
    assert len(invalid) == 2
    assert "percentage" in invalid[0].error and "finite" in invalid[1].error
    assert session.status == "finished"
    # Every attempt is journaled; the ok ones carry the fake's deterministic usage.
    requests = fake_openai.chat_requests
    assert [c.ok for c in calls] == [s.kind == "reply" and not s.delay_s for s in script]
    ok_requests = [
        r for r, s in zip(requests, script, strict=True) if s.kind == "reply" and not s.delay_s
    ]
    ok_steps = [s for s in script if s.kind == "reply" and not s.delay_s]
    assert [(c.prompt_tokens, c.completion_tokens) for c in calls if c.ok] == [
        (fake.prompt_tokens_for(r["messages"]), fake.completion_tokens_for(s))
        for r, s in zip(ok_requests, ok_steps, strict=True)
    ]
    # The clip of the first proposal is shown to the model in the next prompt.
    second_prompt = requests[2]["messages"][1]["content"]
    assert "max_position_pct proposed 0.6 -> applied 0.3" in second_prompt
    assert "| cvar_alpha | cvar | 0.85 | 0.99 | float |" in second_prompt
    assert "## Top trials by objective (ascending, the best is last)" in second_prompt
    assert "wider caps" in second_prompt  # the history holds the first trial
    # No test-window figure reaches the model, now or in a prompt built after finalize.
    assert tests and all(t.metrics for t in tests)
    figures = window_figures(tests)
    assert len(figures) > 20
    sent = json.dumps(requests)
    with Journal(env.journal_path) as j:
        later = later_prompt(j, sid, env)
    for text in figures:
        assert text not in sent and text not in later


def window_figures(tests: list[Any]) -> set[str]:
    """Renderings of every non-integer test-window figure a prompt could show."""
    out: set[str] = set()
    for t in tests:
        for value in [t.objective, *t.metrics.values()]:
            if value is None or not math.isfinite(value) or float(value).is_integer():
                continue
            out |= {repr(value), f"{value:.6g}", f"{value:.5f}"}
    return out


def later_prompt(journal: Journal, sid: str, settings: Settings) -> str:
    """The prompt the proposer would get now, with the test rows in the journal."""
    from alphaloop.meta_agent.nodes import proposal_context
    from alphaloop.meta_agent.session import _context

    spec = journal.sessions.get(sid).spec
    return proposal_prompt(proposal_context(_context(journal, sid, spec, settings, None)))


def test_repeated_garbage_falls_back_to_tpe_in_a_session(
    fake_openai: fake.FakeOpenAI, env: Settings
) -> None:
    fake_openai.responder = lambda body: fake.text("I would rather not say.")
    result = run_cli(*LLM_SESSION, "--budget", "2")
    assert result.exit_code == 0, result.output
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(env.journal_path) as j:
        search = j.trials.of_session(sid, kind="search")
        events = j.logs.events(sid, kind="ProposerFallback")
    done = [t for t in search if t.status != "invalid"]
    assert [t.proposer for t in done] == ["tpe (fallback)"] * 2
    assert sum(t.status == "invalid" for t in search) == 6  # 3 per step
    assert len(events) == 2 and "unusable LLM replies" in events[0].payload["reason"]


def test_max_tokens_total_stops_the_session(fake_openai: fake.FakeOpenAI, env: Settings) -> None:
    fake_openai.responder = lambda body: delta({"cvar_alpha": 0.9}, "r")
    result = run_cli(*LLM_SESSION, "--budget", "5", "--max-tokens-total", "50")
    assert result.exit_code == 0, result.output
    review = json.loads(result.stdout)
    assert "token budget of 50" in review["final"]["stop_reason"]
    assert review["counted_trials"] == 1
    assert len(fake_openai.chat_requests) == 1


def test_chat_ask_answers_through_tools(fake_openai: fake.FakeOpenAI, env: Settings) -> None:
    fake_openai.responder = lambda body: delta({"cvar_alpha": 0.9}, "r")
    assert run_cli(*LLM_SESSION, "--budget", "1").exit_code == 0
    fake_openai.responder = None
    with Journal(env.journal_path) as j:
        [s] = j.sessions.list()
        best = j.trials.best(s.id)
    fake_openai.push(
        fake.tool_call("list_sessions", {}),
        fake.tool_call("explain_trial", {"trial_id": best.id}),
        fake.text(f"Trial {best.id} is best with Sharpe {best.objective:.3f}."),
    )
    result = run_cli("chat", "--ask", "What is my best trial?", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["text"] == f"Trial {best.id} is best with Sharpe {best.objective:.3f}."
    explained = json.loads(out["tool_calls"][1]["result"])["trial"]
    assert explained["objective"] == best.objective and explained["config"] == best.config
    plain = run_cli("chat", "--ask", "hello")  # the responder is gone: the server answers 500
    assert plain.exit_code == 1 and "server error" in plain.output


def test_chat_without_endpoint_exits_2(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ALPHALOOP_HOME", str(tmp_path))
    result = run_cli("chat", "--ask", "anything")
    assert result.exit_code == 2
    for needle in ("ALPHALOOP_LLM_BASE_URL", "ALPHALOOP_LLM_MODEL", "alphaloop journal"):
        assert needle in " ".join(result.output.split())


def test_chat_ask_says_what_a_mutating_tool_would_do_unless_yes(
    fake_openai: fake.FakeOpenAI, env: Settings
) -> None:
    fake_openai.responder = lambda body: delta({"cvar_alpha": 0.9}, "r")
    assert run_cli(*LLM_SESSION, "--budget", "1").exit_code == 0
    fake_openai.responder = None
    with Journal(env.journal_path) as j:
        [s] = j.sessions.list()
    stop = fake.tool_call("stop_research", {"session_id": s.id})
    # A read-only tool runs, the mutating one is only described: nothing changes.
    fake_openai.push(fake.tool_call("list_sessions", {}), stop, fake.text("It would stop it."))
    result = run_cli("chat", "--ask", "stop my session", "--json")
    assert result.exit_code == 0, result.output
    listed, stopped = json.loads(result.stdout)["tool_calls"]
    assert listed["ok"] and not stopped["ok"]
    said = json.loads(stopped["result"])["error"]
    assert said.startswith("not run: this would call stop_research(") and "--yes" in said
    with Journal(env.journal_path) as j:
        assert j.logs.events(s.id, kind="StopRequested") == []
    # With --yes the same call acts.
    fake_openai.push(stop, fake.text("Asked it to stop."))
    result = run_cli("chat", "--ask", "stop my session", "--yes", "--json")
    assert result.exit_code == 0, result.output
    [acted] = json.loads(result.stdout)["tool_calls"]
    assert acted["ok"] and json.loads(acted["result"])["session_id"] == s.id


def test_interactive_chat_asks_before_acting_and_never_before_reading(
    fake_openai: fake.FakeOpenAI, env: Settings
) -> None:
    from alphaloop.chat import Chat

    asked: list[str] = []
    agent = Chat(env, confirm=lambda q: asked.append(q) or False)
    fake_openai.push(
        fake.tool_call("list_sessions", {}),
        fake.tool_call("stop_research", {"session_id": "s-20260101-120000-ab12"}),
        fake.text("You declined."),
    )
    answer = agent.ask("stop s-20260101-120000-ab12")
    assert asked == ['stop_research({"session_id": "s-20260101-120000-ab12"})']
    assert [t.ok for t in answer.tool_calls] == [True, False]
    assert "declined" in json.loads(answer.tool_calls[1].result)["error"]
