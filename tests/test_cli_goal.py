"""The README's goal phrase through the command line, on a real session: its drawdown limit is
enforced (every deeper trial a violation, the TEST gate at 15%, the result named as outside the
limits), the session journals what it understood, the review prints it with the objective
named as what it is, a flag wins over the text, and a limit its flag would refuse is refused
before anything is journaled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.settings import Settings

README_GOAL = "maximise Sharpe, max drawdown under 15%"
SESSION = ["--data", "synthetic", "--mode", "cufolio_only", "--proposer", "random",
           "--noise-seeds", "2", "--budget", "3", "--seed", "5", "--json"]  # fmt: skip


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_the_readmes_goal_enforces_its_drawdown_limit(settings: Settings) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert README_GOAL in readme  # the phrase a user copies
    run = _run("research", README_GOAL, *SESSION)
    assert run.exit_code == 0, run.output
    assert "understood from the goal: max drawdown <= 15% (max drawdown under 15%)" in run.stderr
    review = json.loads(run.stdout)  # one JSON document: what was understood went to stderr
    session, final = review["session"], review["final"]
    assert session["objective"]["max_drawdown"] == 0.15 and session["objective"]["metric"] == (
        "sharpe"
    )
    gates = {g["gate"]: g for g in final["gates"]["results"]}
    assert gates["max_drawdown"]["threshold"] == 0.15  # the TEST gate is the goal's, not 30%
    scored = [t for t in review["trials"] if t["metrics"] and t["kind"] != "test"]
    deep = [t for t in scored if t["metrics"]["max_drawdown"] > 0.15]
    assert deep, "the synthetic market gives trials deeper than 15%: the test needs one"
    assert all(t["violation"] and "exceeds the limit 15.0%" in t["violation"] for t in deep)
    assert all(t["violation"] is None for t in scored if t not in deep)
    reported = next(t for t in review["trials"] if t["id"] == session["best_trial_id"])
    within = reported["metrics"]["max_drawdown"] <= 0.15
    assert final["admissible"] is within
    if not within:
        reason = final["admissible_reason"]
        assert "no trial reported meets the limits (max drawdown <= 15.0%)" in reason
    understood = review["understood"]
    assert understood["applied"] == {"metric": "sharpe", "max_drawdown": 0.15}
    with Journal(settings.journal_path) as j:
        events = j.logs.events(session["id"], kind="GoalRead")
    assert [e.payload["applied"] for e in events] == [understood["applied"]]
    text = _run("journal", session["id"])
    assert text.exit_code == 0, text.output
    out = " ".join(text.stdout.split())
    assert "understood from the goal: max drawdown <= 15% (max drawdown under 15%)" in out
    assert "objective: Sharpe, fold mean \u2212 1 SE; limits: max drawdown \u2264 15%" in out


def test_a_flag_wins_over_the_goal_and_a_refused_limit_journals_nothing(
    settings: Settings,
) -> None:
    run = _run("research", README_GOAL, "--max-drawdown", "0.3", *SESSION)
    assert run.exit_code == 0, run.output
    assert "the goal says max drawdown <= 15%; --max-drawdown 0.3 wins" in run.stderr
    assert json.loads(run.stdout)["session"]["objective"]["max_drawdown"] == 0.3
    refused = _run("research", "maximise Sharpe, max drawdown under 150%", *SESSION)
    assert refused.exit_code == 2
    assert "max drawdown under 150%" in refused.stderr and "max_drawdown" in refused.stderr
    with Journal(settings.journal_path) as j:
        assert len(j.sessions.list()) == 1  # the refused one was never journaled


def test_a_phrase_not_understood_is_named_back(settings: Settings) -> None:
    run = _run("research", "maximise Sharpe, volatility under 10%", *SESSION)
    assert run.exit_code == 0, run.output
    assert "not understood: 'volatility under 10%'" in " ".join(run.stderr.split())
    assert json.loads(run.stdout)["understood"]["reading"]["not_understood"]


@pytest.mark.parametrize("flag", ["--metric", "--max-turnover"])
def test_a_flag_left_out_is_not_a_flag_given(settings: Settings, flag: str) -> None:
    """The request the command line builds leaves an option it was not given unset, so the
    goal may set it (and one given, even at its default value, wins)."""
    from alphaloop.cli import _options

    seen: dict[str, Any] = {}
    model = _options.build_request

    def spy(m: Any, values: dict[str, Any], context: Any) -> Any:
        built = model(m, values, context)
        seen["set"] = built.model_fields_set
        raise SystemExit(0)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_options, "build_request", spy)
        _run("research", README_GOAL, "--data", "synthetic")
        assert "metric" not in seen["set"] and "max_turnover" not in seen["set"]
        _run("research", README_GOAL, flag, "sharpe" if flag == "--metric" else "2")
        assert flag.removeprefix("--").replace("-", "_") in seen["set"]
