"""The PPO training options (--truncate-drawdown, --stop-properly, --advantage) on ``research
start`` and ``train``: journaled with the session, reloaded as they were, and refused out of
range with exit 2 before anything is journaled."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget

OPTIONS = ["--advantage", "reinforce_pp", "--truncate-drawdown", "0.25", "--stop-properly", "0.5"]
EXPECTED = {"truncate_drawdown": 0.25, "stop_properly": 0.5, "advantage": "reinforce_pp"}


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_research_start_journals_the_options_and_reloads_them(settings: Settings) -> None:
    result = run_cli(
        "research", "maximise Sharpe", "--mode", "ppo_only", "--budget", "1", "--noise-seeds",
        "2", "--data", "synthetic", "--proposer", "random", "--total-timesteps", "256",
        *OPTIONS, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with Journal(settings.journal_path) as journal:
        (session,) = journal.sessions.list()
        trials = journal.trials.of_session(session.id)
    budget = session.spec.trial_budget
    assert budget.model_dump(include=set(EXPECTED)) == EXPECTED
    assert budget == TrialBudget(total_timesteps=256, **EXPECTED)
    assert any(t.status != "crash" for t in trials)


def test_research_start_shows_the_options(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alphaloop import ops

    seen: list[Any] = []
    monkeypatch.setattr(ops.research, "start_session", lambda spec, *_: seen.append(spec) or "s-x")
    monkeypatch.setattr("alphaloop.cli.research._run_session_view", lambda *args: None)
    result = run_cli(
        "research", "maximise Sharpe", "--mode", "unified", "--data", "synthetic", *OPTIONS
    )
    assert result.exit_code == 0, result.output
    assert (
        "PPO training: reinforce_pp advantages (no critic); episodes truncated at a 25.0% "
        "drawdown, stop_properly 0.5" in " ".join(result.output.split())
    )
    assert seen[0].trial_budget.advantage == "reinforce_pp"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--truncate-drawdown", "1"], "--truncate-drawdown: Input should be less than 1, got 1.0"),
        (["--stop-properly", "0.3"], "stop_properly 0.3 only applies to episodes ended by"),
        (["--advantage", "ppo"], "unknown advantage 'ppo'; choose one of gae, grpo"),
    ],
)
@pytest.mark.parametrize("command", ["research", "train"])
def test_out_of_range_options_exit_2_before_anything_is_journaled(
    settings: Settings, command: str, args: list[str], message: str
) -> None:
    head = ["research", "maximise Sharpe"] if command == "research" else ["train"]
    result = run_cli(*head, "--data", "synthetic", *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not settings.journal_path.exists()


def test_train_reports_the_options(settings: Settings) -> None:
    result = run_cli(
        "train", "--data", "synthetic", "--total-timesteps", "256", "--set", "n_epochs=3",
        *OPTIONS, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {k: payload[k] for k in EXPECTED} == EXPECTED
    assert payload["env_steps"] == 256
    with Journal(settings.journal_path) as journal:
        (session,) = journal.sessions.list()
    assert session.spec.trial_budget.advantage == "reinforce_pp"
