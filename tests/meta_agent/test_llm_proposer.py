"""LLMProposer against the scripted OpenAI-compatible server, through the real ``openai`` client.

The journal here is a small recorder with the writer methods the proposer calls, so each test
sees exactly what would be journaled; tests/test_cli_llm.py runs the same proposer on the real
journal inside whole sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from alphaloop.knobs import KNOBS, BoundsClip, TrialConfig, knobs_for_mode
from alphaloop.meta_agent.proposers import ProposalContext, TPEProposer, TrialView
from alphaloop.meta_agent.proposers.llm import (
    PROPOSE_TOOL,
    LLMProposer,
    proposal_prompt,
    propose_tool,
)
from alphaloop.settings import Settings
from alphaloop.spec import Objective

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]
SESSION = "s-test"
# vLLM's words when the server was started without --enable-auto-tool-choice.
VLLM_NO_TOOLS = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)


class RecordingJournal:
    """The journal's ``trials`` and ``logs`` methods the proposer uses, recording every call
    (one recorder stands for both repositories)."""

    def __init__(self, calls: list[Any] | None = None, events: list[Any] | None = None) -> None:
        self.invalid: list[dict[str, Any]] = []
        self.event_rows: list[tuple[str, dict[str, Any]]] = []
        self.calls: list[dict[str, Any]] = []
        self._prior_calls = calls or []
        self._prior_events = events or []
        self.trials = self.logs = self

    def record_invalid(self, session_id: str, **kwargs: Any) -> None:
        self.invalid.append({"session_id": session_id, **kwargs})

    def add_event(self, session_id: str, kind: str, payload: dict[str, Any]) -> None:
        self.event_rows.append((kind, payload))

    def add_llm_call(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)

    def llm_calls(self, session_id: str | None = None) -> list[Any]:
        return self._prior_calls

    def events(self, session_id: str, kind: str | None = None) -> list[Any]:
        return [e for e in self._prior_events if kind is None or e.kind == kind]

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.event_rows]


def view(idx: int, objective: float | None, status: str = "discard", **kw: Any) -> TrialView:
    metrics = (
        {
            "sharpe": objective or 0.0,
            "max_drawdown": 0.1,
            "annual_return": 0.05,
            "annual_turnover": 1.5,
        }
        if objective is not None
        else {}
    )
    return TrialView(
        idx=idx,
        kind=kw.pop("kind", "search"),
        status=status,
        config=kw.pop("config", TrialConfig()),
        changes=kw.pop("changes", {}),
        objective=objective,
        metrics=metrics,
        **kw,
    )


def context(history: list[TrialView] | None = None, mode: str = "cufolio_only") -> ProposalContext:
    return ProposalContext(
        session_id=SESSION,
        goal="maximise Sharpe, drawdown under 15%",
        objective=Objective(metric="sharpe", max_drawdown=0.15),
        mode=mode,
        n_assets=6,
        budget_total=10,
        budget_left=7,
        noise_floor=0.0123,
        best_config=TrialConfig(cvar_alpha=0.93),
        best_objective=0.91,
        history=history
        if history is not None
        else [
            view(1, 0.8, "keep", kind="baseline"),
            view(
                2,
                0.91,
                "keep",
                config=TrialConfig(cvar_alpha=0.93),
                changes={"cvar_alpha": 0.93},
                rationale="lower alpha",
            ),
            view(3, 0.55, changes={"n_scenarios": 1000}, rationale="fewer scenarios"),
            view(4, None, "crash", error="SolverError: infeasible"),
            view(
                5,
                0.7,
                "discard",
                violation="max drawdown 21.0% exceeds the limit 15.0%",
                changes={"max_position_pct": 0.3},
                clips=[
                    BoundsClip(
                        knob="max_position_pct",
                        proposed=0.5,
                        applied=0.3,
                        low=0.02,
                        high=0.3,
                        reason="0.5 is above the upper bound [0.02, 0.3]",
                    )
                ],
            ),
        ],
        seed=0,
    )


def proposer(
    settings: Settings, journal: RecordingJournal | None = None, **kwargs: Any
) -> LLMProposer:
    journal = journal or RecordingJournal()
    return LLMProposer.from_settings(settings, journal, SESSION, fallback=TPEProposer(), **kwargs)


def delta_call(changes: dict[str, Any] | str, rationale: str = "a reason") -> fake.Step:
    if isinstance(changes, str):
        return fake.tool_call(PROPOSE_TOOL, changes)
    return fake.tool_call(PROPOSE_TOOL, {"changes": changes, "rationale": rationale})


def messages_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


# --- schema and prompt ---------------------------------------------------------------------


def test_tool_schema_is_generated_from_the_knob_models() -> None:
    for mode in ("cufolio_only", "ppo_only", "unified"):
        params = propose_tool(mode)["function"]["parameters"]
        assert params["required"] == ["changes", "rationale"]
        knobs = params["properties"]["changes"]["properties"]
        assert list(knobs) == list(knobs_for_mode(mode))
        for name, schema in knobs.items():
            assert (schema["minimum"], schema["maximum"]) == (KNOBS[name].low, KNOBS[name].high)
            assert schema["type"] == ("integer" if KNOBS[name].is_int else "number")
        assert params["properties"]["changes"]["additionalProperties"] is False


def test_prompt_holds_goal_knob_table_history_failures_clips_and_budget() -> None:
    text = proposal_prompt(context())
    assert "maximise Sharpe, drawdown under 15%" in text
    assert "maximise validation sharpe, max drawdown <= 15%" in text
    assert "cufolio_only" in text and "knob groups used: cvar" in text
    assert "| cvar_alpha | cvar | 0.85 | 0.99 | float | 0.93 | CVaR confidence level |" in text
    assert "| lookback |" not in text  # env knobs do nothing in cufolio_only
    assert "Noise floor (spread of the baseline over seeds): 0.0123" in text
    assert "7 of 10 search trials left" in text
    # Top-k ascending: the best (trial 2, 0.91) is the last row of the table.
    top = text.split("## Top trials")[1].split("## Recent failures")[0]
    rows = [line.split("|")[1].strip() for line in top.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["3", "5", "1", "2"]  # header first, then by objective
    assert "trial 4 crash: SolverError: infeasible" in text
    assert "max drawdown 21.0% exceeds the limit 15.0%" in text
    assert "max_position_pct proposed 0.5 -> applied 0.3" in text


# --- good replies --------------------------------------------------------------------------


def test_tool_call_is_forced_parsed_and_journaled(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    step = delta_call({"cvar_alpha": 0.97, "n_scenarios": "3e3"}, "raise alpha")
    fake_openai.push(step)
    journal = RecordingJournal()
    p = proposer(llm_settings(), journal)
    delta = p.propose(context())
    assert delta.changes == {"cvar_alpha": 0.97, "n_scenarios": 3000.0}
    assert delta.rationale == "raise alpha"
    assert p.last_name == "llm"
    request = fake_openai.chat_requests[0]
    assert request["tool_choice"] == {"type": "function", "function": {"name": PROPOSE_TOOL}}
    assert [t["function"]["name"] for t in request["tools"]] == [PROPOSE_TOOL]
    tokens = (fake.prompt_tokens_for(request["messages"]), fake.completion_tokens_for(step))
    assert p.tokens_used() == sum(tokens)
    [call] = journal.calls
    assert (call["prompt_tokens"], call["completion_tokens"]) == tokens
    assert call["ok"] and call["purpose"] == "propose" and call["session_id"] == SESSION
    assert journal.invalid == [] and journal.event_rows == []


def test_unknown_knobs_next_to_known_ones_are_dropped_and_out_of_bounds_pass(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(delta_call({"cvar_alpha": 1.5, "alpha_boost": 3, "lookback": 30}))
    journal = RecordingJournal()
    delta = proposer(llm_settings(), journal).propose(context())
    # 1.5 is out of bounds: passed through for clip() to clip and report.
    assert delta.changes == {"cvar_alpha": 1.5, "lookback": 30.0}
    assert "dropped unknown knobs: alpha_boost" in delta.rationale
    assert "ignored in cufolio_only: lookback" in delta.rationale
    assert journal.invalid == []


def test_text_reply_with_json_is_understood_without_a_tool_call(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(
        fake.text(
            '<think>hmm</think>Sure:\n```json\n{"changes": {"cvar_hold": 1,'
            ' "cufolio_hold_days": "10",}, "rationale": "faster"}\n```'
        )
    )
    delta = proposer(llm_settings()).propose(context())
    assert delta.changes == {"cufolio_hold_days": 10.0}


# --- unusable replies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"changes": {"cvar_alpha": "5%"}, "rationale": "r"}, "is a percentage"),
        ('{"changes": {"cvar_alpha": NaN}, "rationale": "r"}', "not a finite number"),
        ({"changes": {"alpha_boost": 2}, "rationale": "r"}, "no known knob"),
        ({"changes": {}, "rationale": "r"}, "the edit is empty"),
        ({"changes": {"cvar_alpha": "high"}, "rationale": "r"}, "is not a number"),
        ({"changes": {"learning_rate": 1e-3}, "rationale": "r"}, "have no effect"),
        ({"changes": {"cvar_alpha": 0.93}, "rationale": "r"}, "changes nothing"),
        ("{not json at all", "tool arguments"),
    ],
)
def test_unusable_reply_is_an_invalid_row_and_the_reason_goes_back(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory, arguments: Any, reason: str
) -> None:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    fake_openai.push(delta_call(raw), delta_call({"cvar_alpha": 0.9}, "fixed"))
    journal = RecordingJournal()
    p = proposer(llm_settings(), journal)
    delta = p.propose(context())
    assert delta.changes == {"cvar_alpha": 0.9} and p.last_name == "llm"
    [row] = journal.invalid
    assert reason in row["error"] and row["proposer"] == "llm"
    assert PROPOSE_TOOL in row["delta_raw"]
    second = fake_openai.chat_requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == PROPOSE_TOOL
    assert second[-1]["role"] == "tool" and reason in second[-1]["content"]


def test_repeated_garbage_falls_back_to_tpe(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(
        fake.text("I think you should lower the risk."),
        fake.text("{broken"),
        delta_call({"nope": 1}),
    )
    journal = RecordingJournal()
    # Two texts in a row would switch modes (see the capability tests): not what this tests.
    p = proposer(llm_settings(), journal, text_fallback_after=3)
    delta = p.propose(context())
    assert p.last_name == "tpe (fallback)"
    assert "LLM fallback: 3 unusable LLM replies in a row" in delta.rationale
    assert set(delta.changes) <= set(knobs_for_mode("cufolio_only")) and delta.changes
    assert len(journal.invalid) == 3
    assert journal.kinds() == ["ProposerFallback"]
    assert "no known knob" in journal.event_rows[0][1]["reason"]
    # A user turn (not a tool turn) answers a reply that had no tool call.
    assert fake_openai.chat_requests[1]["messages"][-1]["role"] == "user"
    # The next step asks the LLM again.
    fake_openai.push(delta_call({"cvar_alpha": 0.9}))
    assert p.propose(context()).changes == {"cvar_alpha": 0.9} and p.last_name == "llm"


# --- endpoint faults -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [fake.error(429, "slow down", headers={"Retry-After": "1"}), fake.error(500, "boom")],
    ids=["429-retry-after", "500"],
)
def test_faults_before_a_generation_are_retried(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory, fault: fake.Step
) -> None:
    fake_openai.push(fault, delta_call({"cvar_alpha": 0.9}))
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_timeout_s=0.3), journal)
    assert p.propose(context()).changes == {"cvar_alpha": 0.9}
    assert [c["ok"] for c in journal.calls] == [False, True]
    assert journal.event_rows == [] and journal.invalid == []


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (fake.malformed(), "not a chat completion"),
        (fake.delay(1.0), "sent nothing back"),
        (fake.stall(after=4), "still generating after 4 tokens"),
        (fake.reset(after=4), "dropped the connection after 4 tokens"),
    ],
    ids=["malformed", "timeout", "stall", "reset"],
)
def test_faults_during_a_generation_fall_back_at_once(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory, fault: fake.Step, said: str
) -> None:
    # The server had the request: asking again would generate again. TPE takes the step.
    fake_openai.push(fault, delta_call({"cvar_alpha": 0.9}))
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_timeout_s=0.3, llm_max_retries=4), journal)
    assert p.propose(context()).changes and p.last_name == "tpe (fallback)"
    assert len(fake_openai.chat_requests) == 1 and fake_openai.pending == 1
    assert [c["ok"] for c in journal.calls] == [False] and said in journal.calls[0]["error"]
    assert journal.kinds() == ["ProposerFallback"]


def test_endpoint_down_falls_back_for_the_step_then_disables(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.responder = lambda body: fake.error(503, "overloaded")
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_max_retries=1), journal, disable_after=2)
    for _ in range(3):
        delta = p.propose(context())
        assert p.last_name == "tpe (fallback)" and delta.changes
    # Two steps tried the endpoint (2 attempts each); the third did not call it.
    assert len(fake_openai.chat_requests) == 4
    assert journal.kinds() == ["ProposerFallback", "ProposerFallback"]
    assert journal.event_rows[0][1]["error_type"] == "LLMUnavailable"
    assert "overloaded" in journal.event_rows[0][1]["reason"]
    assert "off for the rest of this run" in journal.event_rows[1][1]["reason"]


def test_no_tool_support_switches_to_json_in_text_for_the_session(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(
        fake.error(400, VLLM_NO_TOOLS),
        fake.text('Here you go: {"changes": {"max_position_pct": "0.2"}, "rationale": "cap",}'),
        fake.text('{"max_position_pct": 0.22, "rationale": "flat form"}'),
    )
    journal = RecordingJournal()
    p = proposer(llm_settings(), journal)
    assert p.propose(context()).changes == {"max_position_pct": 0.2}
    assert p.propose(context()).changes == {"max_position_pct": 0.22}
    first, second, third = fake_openai.chat_requests
    assert "tools" in first and "tools" not in second and "tools" not in third
    assert "exactly one JSON object" in messages_text(third)
    # Refused tools: JSON under response_format json_schema next, remembered by the event.
    assert second["response_format"]["type"] == "json_schema"
    assert journal.kinds() == ["ToolsUnsupported", "LLMModeChanged"] and journal.invalid == []
    assert journal.event_rows[1][1]["mode"] == "json_schema"


def test_resumed_proposer_remembers_tokens_and_json_mode(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    prior = [
        SimpleNamespace(prompt_tokens=100, completion_tokens=20, ok=True),
        SimpleNamespace(prompt_tokens=0, completion_tokens=0, ok=False),
    ]
    journal = RecordingJournal(calls=prior, events=[SimpleNamespace(kind="ToolsUnsupported")])
    p = proposer(llm_settings(), journal)
    assert p.tokens_used() == 120 and p.use_tools is False
    fake_openai.push(fake.text('{"changes": {"cvar_alpha": 0.9}, "rationale": "r"}'))
    p.propose(context())
    assert "tools" not in fake_openai.chat_requests[0]
    assert p.tokens_used() > 120


def test_nemotron_reasoning_switch_goes_in_the_system_prompt(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(delta_call({"cvar_alpha": 0.9}))
    proposer(llm_settings(llm_reasoning=True)).propose(context())
    system = fake_openai.chat_requests[0]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].splitlines()[0] == "detailed thinking on"
