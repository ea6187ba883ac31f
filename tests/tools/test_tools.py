"""The chat tools against a real journal written by a short TPE session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from alphaloop.journal import Journal
from alphaloop.knobs import KNOBS, ConfigDelta, TrialConfig, clip
from alphaloop.market import load_market
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.spec import Objective
from alphaloop.tools import TOOLS, Tool, ToolContext, call_tool, tool_specs
from alphaloop.trials import TrialBudget, run_trial

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]


def make_settings(home: Path) -> Settings:
    # Explicit None: the machine's own endpoint settings must not leak into these tests.
    return Settings(ALPHALOOP_HOME=str(home), ALPHALOOP_LLM_BASE_URL=None, ALPHALOOP_LLM_MODEL=None)


def short_spec(**kw: Any) -> SessionSpec:
    values: dict[str, Any] = dict(
        goal="maximise Sharpe",
        mode="cufolio_only",
        budget=3,
        proposer="tpe",
        data="synthetic",
        noise_seeds=2,
        objective=Objective(metric="sharpe"),
    )
    return SessionSpec(**{**values, **kw})


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, str]:
    settings = make_settings(tmp_path_factory.mktemp("tools") / "home")
    sid = create_session(short_spec(), settings)
    run_session(sid, settings)
    return settings, sid


def call(settings: Settings, name: str, args: dict[str, Any] | str, **ctx: Any) -> Any:
    return call_tool(
        TOOLS,
        name,
        args if isinstance(args, str) else json.dumps(args),
        ToolContext(settings, **ctx),
    )


def test_every_tool_spec_is_accepted_by_a_strict_server() -> None:
    specs = tool_specs()
    assert {s["function"]["name"] for s in specs} == {
        "list_sessions",
        "summarize_session",
        "leaderboard",
        "explain_trial",
        "compare_trials",
        "knob_info",
        "run_trial",
        "validate_session",
        "start_research",
        "stop_research",
        "start_walk",
        "walk_verdict",
    }
    fake.validate_chat_request(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": specs,
            "tool_choice": "auto",
        }
    )


def test_list_summarize_and_leaderboard_match_the_journal(session: tuple[Settings, str]) -> None:
    settings, sid = session
    listed = call(settings, "list_sessions", {})
    summary = call(settings, "summarize_session", {"session_id": sid})
    board = call(settings, "leaderboard", {"session_id": sid, "k": 3})
    assert listed.ok and summary.ok and board.ok
    with Journal(settings.journal_path) as j:
        s, best = j.sessions.get(sid), j.trials.best(sid)
        score = j.trials.ranking(sid).score_of(best)  # a baseline run: the default's seed mean
        top = j.trials.leaderboard(sid, 3)
        counted = j.trials.counted(sid)
    [row] = listed.data["sessions"]
    assert (row["id"], row["counted_trials"]) == (sid, counted)
    assert row["best_validation_objective"] == pytest.approx(score)
    assert summary.data["best_trial"]["id"] == best.id
    assert summary.data["session"]["counted_trials"] == counted == 3
    assert summary.data["final"] == s.final.journaled()
    assert [(t["id"], t["objective"]) for t in board.data["trials"]] == [
        (t.id, t.objective) for t in top
    ]
    assert json.loads(board.content) == board.data


def test_explain_and_compare_trials_match_the_journal(session: tuple[Settings, str]) -> None:
    settings, sid = session
    with Journal(settings.journal_path) as j:
        a, b = [t for t in j.trials.of_session(sid) if t.kind == "search"][:2]
        clips = j.logs.clips(b.id)
    explained = call(settings, "explain_trial", {"trial_id": b.id})
    assert explained.ok
    trial = explained.data["trial"]
    assert trial["config"] == b.config and trial["objective"] == b.objective
    assert trial["metrics"] == b.metrics and trial["rationale"] == b.rationale
    assert trial["clips"] == [c.model_dump(mode="json") for c in clips]
    assert "val_returns" not in trial
    compared = call(settings, "compare_trials", {"trial_a": a.id, "trial_b": b.id})
    assert compared.ok
    diff = compared.data["config_differences"]
    assert diff == {
        k: {"a": a.config[k], "b": b.config[k]} for k in a.config if a.config[k] != b.config[k]
    }
    assert compared.data["metrics"]["sharpe"]["b_minus_a"] == pytest.approx(
        b.metrics["sharpe"] - a.metrics["sharpe"]
    )


def test_knob_info() -> None:
    result = call(make_settings(Path("unused")), "knob_info", {"mode": "cufolio_only"})
    names = [k["name"] for k in result.data["knobs"]]
    assert names == ["cvar_alpha", "max_position_pct", "n_scenarios", "cufolio_hold_days"]
    assert result.data["knobs"][0]["low"] == KNOBS["cvar_alpha"].low
    bad = call(make_settings(Path("unused")), "knob_info", {"names": ["alpha_boost"]})
    assert not bad.ok and "unknown knobs alpha_boost" in bad.data["error"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("summarize_session", {"session_id": "s-nope"}, "s-nope"),
        ("explain_trial", {"trial_id": 987654}, "987654"),
        ("leaderboard", {"session_id": "x", "k": 0}, "k: Input should be greater than"),
        ("leaderboard", {"session": "x"}, "invalid arguments"),
        ("leaderboard", "{oops", "not a JSON object"),
        ("compare_trials", {"trial_a": 1, "trial_b": 1}, "two different"),
        ("drop_tables", {}, "unknown tool 'drop_tables'"),
        ("run_trial", {"changes": {"cvar_alpha": "5%"}, "data": "synthetic"}, "percentage"),
        ("run_trial", {"data": "no/such/file.csv"}, "file.csv"),
    ],
)
def test_errors_come_back_as_results(
    session: tuple[Settings, str], name: str, args: Any, message: str
) -> None:
    settings, _ = session
    result = call(settings, name, args)
    assert not result.ok
    assert message in result.data["error"]
    assert json.loads(result.content) == result.data


def test_no_journal_yet_is_an_error_result_naming_no_path(tmp_path: Path) -> None:
    result = call(make_settings(tmp_path / "empty"), "list_sessions", {})
    assert not result.ok and "no journal yet" in result.data["error"]
    # the result is sent to the LLM endpoint: it says where nothing is on this machine
    assert str(tmp_path) not in result.content and "/empty" not in result.content


class _NoArgs(BaseModel):
    pass


def test_a_tool_bug_s_message_names_no_path(tmp_path: Path) -> None:
    def broken(args: Any, ctx: ToolContext) -> dict[str, Any]:
        return {"text": (tmp_path / "gone" / "secret.csv").read_text()}

    tool = Tool(name="broken", description="raises", args_model=_NoArgs, fn=broken)
    ctx = ToolContext(settings=make_settings(tmp_path))
    result = call_tool({"broken": tool}, "broken", "{}", ctx)
    assert not result.ok and "FileNotFoundError" in result.data["error"]
    assert "secret.csv" in result.data["error"] and str(tmp_path) not in result.content


def test_run_trial_clips_like_a_session_and_matches_the_evaluator(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "home")
    asked: list[str] = []
    args = {"changes": {"max_position_pct": 0.9, "cvar_alpha": "0.97"}, "data": "synthetic"}
    result = call(settings, "run_trial", args, confirm=lambda q: asked.append(q) or True)
    assert result.ok and len(asked) == 1 and "run_trial" in asked[0]
    [c] = result.data["clips"]
    assert (c["knob"], c["proposed"], c["applied"]) == ("max_position_pct", 0.9, 0.3)
    data = load_market("synthetic")
    config, _ = clip(
        TrialConfig(),
        ConfigDelta(changes={"max_position_pct": 0.9, "cvar_alpha": 0.97}),
        data.n_assets,
    )
    oracle = run_trial("cufolio_only", config, data, TrialBudget(), 0)
    assert result.data["objective"] == pytest.approx(oracle.objective)
    assert result.data["config"] == config.model_dump()
    assert result.data["window"].startswith("validation")


def test_declined_confirmation_runs_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "home")
    result = call(
        settings, "start_research", {"goal": "g", "data": "synthetic"}, confirm=lambda q: False
    )
    assert not result.ok and "declined" in result.data["error"]
    assert not settings.journal_path.exists()


def test_start_and_stop_research(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "home")
    progress: list[str] = []
    result = call(
        settings,
        "start_research",
        {"goal": "maximise Sharpe", "budget": 1, "noise_seeds": 2, "data": "synthetic"},
        on_progress=progress.append,
    )
    assert result.ok, result.data
    sid = result.data["session_id"]
    with Journal(settings.journal_path) as j:
        s = j.sessions.get(sid)
        assert s.status == "finished" and j.trials.counted(sid) == 1
    assert result.data["final"]["stop_reason"] == s.final.stop_reason
    assert any("started" in p for p in progress) and any("trial" in p for p in progress)
    done = call(settings, "stop_research", {"session_id": sid})
    assert done.ok and done.data["stop_requested"] is False
    waiting = create_session(short_spec(), settings)
    stopped = call(settings, "stop_research", {"session_id": waiting})
    assert stopped.ok and stopped.data["stop_requested"] is True
    with Journal(settings.journal_path) as j:
        assert j.sessions.stop_requested(waiting)
