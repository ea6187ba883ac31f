"""``alphaloop trial`` end to end: every mode on synthetic data, and every bad input refused with
its reason and exit code 2 before any work is done."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.knobs import KNOB_NAMES
from alphaloop.market import load_market
from alphaloop.metrics import Metrics
from alphaloop.portfolio_opt import _lp
from alphaloop.trials import reference as trial_reference

# Small PPO: one rollout of 64 steps x 4 envs, three passes over it.
TINY_PPO = ["--total-timesteps", "256", "--set", "n_steps=64", "--set", "n_epochs=3"]
# Above the cap's upper bound, and not an integer: two clips the output must report.
CLIPPED = ["--set", "max_position_pct=0.9", "--set", "lookback=7.6"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Path:
    clean_env.setenv("ALPHALOOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["trial", *args])


def trial_json(*args: str) -> dict[str, Any]:
    result = run_cli("--data", "synthetic", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_hand(metric: str, r: np.ndarray) -> float:
    """The objective recomputed from the daily returns the command printed."""
    wealth = np.cumprod(1 + r)
    if metric == "return":
        return float(wealth[-1] - 1)
    if metric == "sharpe":
        return float(r.mean() / r.std(ddof=1) * math.sqrt(252))
    if metric == "sortino":
        return float(r.mean() / math.sqrt(np.mean(np.minimum(r, 0) ** 2)) * math.sqrt(252))
    peaks = np.maximum.accumulate(np.concatenate([[1.0], wealth]))
    drawdown = float(np.max(1 - np.concatenate([[1.0], wealth]) / peaks))
    return float((wealth[-1] ** (252 / len(r)) - 1) / drawdown)  # calmar


@pytest.mark.parametrize(
    ("mode", "metric", "extra"),
    [
        ("cufolio_only", "sortino", ["--set", "cufolio_hold_days=10"]),
        ("ppo_only", "calmar", TINY_PPO),
        ("unified", "return", TINY_PPO),
    ],
)
def test_each_mode_end_to_end(mode: str, metric: str, extra: list[str], home: Path) -> None:
    out = trial_json("--mode", mode, "--metric", metric, "--seed", "2", *CLIPPED, *extra)
    data = load_market("synthetic")
    assert (out["mode"], out["window"], out["metric"], out["seed"]) == (
        mode,
        "validation",
        metric,
        2,
    )
    assert [out["start_date"], out["end_date"]] == list(data.describe()["validation"])
    assert out["data_fingerprint"] == data.fingerprint
    assert set(out["metrics"]) == set(Metrics.model_fields)
    assert set(out["baselines"]) == {"equal_weight", "min_cvar"}
    returns = np.asarray(out["daily_returns"])
    assert len(returns) == out["metrics"]["n_days"] == 300
    key = "total_return" if metric == "return" else metric
    assert out["objective"] == out["metrics"][key]
    assert out["objective"] == pytest.approx(by_hand(metric, returns), rel=1e-9)
    assert sum(out["final_weights"]) == pytest.approx(1.0, abs=1e-12)
    # Clips are reported with what was asked and what ran, and the config holds what ran.
    clips = {c["knob"]: (c["proposed"], c["applied"]) for c in out["clips"]}
    assert clips == {"max_position_pct": (0.9, 0.3), "lookback": (7.6, 8)}
    assert set(out["config"]) == set(KNOB_NAMES)
    assert (out["config"]["max_position_pct"], out["config"]["lookback"]) == (0.3, 8)
    if mode == "cufolio_only":
        assert out["policy_path"] is None and out["timesteps"] is None
    else:
        assert out["timesteps"] == 256 and len(out["curve"]) == 1
        assert (out["env_steps"], out["total_timesteps"]) == (256, 256)
        policy = Path(out["policy_path"])
        assert policy.is_file() and policy.is_relative_to(home / "policies" / "manual")


def test_trial_output_is_seeded(monkeypatch: pytest.MonkeyPatch) -> None:
    def fresh_process(*args: str) -> dict[str, Any]:
        # HiGHS warm-starts cached LPs from their last solve, which can move the last bits
        # within one process; each command here starts as a new process would.
        _lp.mean_cvar_lp.cache_clear()
        monkeypatch.setattr(trial_reference, "_BASELINES", {})
        return trial_json(*args)

    args = ["--mode", "cufolio_only", "--set", "n_scenarios=2000"]
    first, again = fresh_process(*args, "--seed", "5"), fresh_process(*args, "--seed", "5")
    other = fresh_process(*args, "--seed", "6")
    assert {k: v for k, v in first.items() if k != "elapsed_s"} == {
        k: v for k, v in again.items() if k != "elapsed_s"
    }
    assert other["daily_returns"] != first["daily_returns"]


def test_human_output_shows_the_trial_next_to_the_baselines() -> None:
    result = run_cli("--data", "synthetic", "--set", "max_position_pct=0.9")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for needle in ("bounds clips", "max_position_pct", "equal_weight", "min_cvar", "Sharpe"):
        assert needle in text


def test_human_output_says_when_ppo_trained_fewer_steps_than_the_budget() -> None:
    # 102 steps asked on 4 envs: 25 steps each, 100 in all; the budget is never exceeded.
    args = ["--data", "synthetic", "--mode", "ppo_only", "--set", "n_steps=64", "--set",
            "n_epochs=3"]  # fmt: skip
    result = run_cli(*args, "--total-timesteps", "102")
    assert result.exit_code == 0, result.output
    assert (
        "trained 100 env steps (budget 102: the largest multiple of n_envs = 4 within it)"
        in " ".join(result.output.split())
    )
    exact = run_cli(*args, "--total-timesteps", "100")
    assert exact.exit_code == 0 and "env steps" not in exact.output


PRICES = "date,A,B\n2020-01-02,100,50\n2020-01-03,101,51\n2020-01-06,102,52\n"


@pytest.mark.parametrize(
    ("args", "csv", "message"),
    [
        (["--mode", "rl"], None, "unknown mode 'rl'; choose one of ppo_only, cufolio_only"),
        (["--metric", "alpha"], None, "unknown metric 'alpha'; choose one of sharpe"),
        (["--set", "gamma_ray=1"], None, "unknown knob 'gamma_ray' (value '1'); known knobs:"),
        (["--set", "lookback=abc"], None, "knob 'lookback': 'abc' is not a number"),
        (["--set", "lookback=[/abc]"], None, "knob 'lookback': '[/abc]' is not a number"),
        (["--set", "lookback"], None, "--set takes knob=value, got 'lookback'"),
        (["--set", "lookback=5%"], None, "'5%' is a percentage"),
        (["--data", "{dir}/absent.csv"], None, "price file not found:"),
        (["--data", "{csv}"], "day_of,A,B\nx,1,2\ny,1,2\n", "no date column; name one of date"),
        (
            ["--data", "{csv}"],
            PRICES + "2020-01-03,103,53\n",
            "duplicated date 2020-01-03 (1 duplicate row(s))",
        ),
        (
            ["--data", "{csv}"],
            PRICES.replace("101,51", "0,51"),
            "non-positive price 0.0 for A on 2020-01-03",
        ),
        (["--data", "{csv}"], "date,A\n2020-01-02,1\n2020-01-03,2\n", "need at least two assets"),
        (["--data", "{csv}"], PRICES, "too few rows for the windows"),
        (["--data", "synthetic:x"], None, "synthetic data seed must be an integer, got 'x'"),
        (["--data", "synthetic", "--symbols", "A00,ZZ"], None, "unknown symbol(s) ZZ; available:"),
        (["--data", "synthetic", "--symbols", "A00"], None, "need at least two distinct symbols"),
        (["--data", "synthetic", "--fill", "bfill"], None, "unknown fill policy 'bfill'"),
        (["--total-timesteps", "10"], None, "--total-timesteps: Input should be greater than"),
        (["--truncate-drawdown", "1.5"], None, "--truncate-drawdown: Input should be less than 1"),
        (["--truncate-drawdown", "0"], None, "--truncate-drawdown: Input should be greater than 0"),
        (
            ["--truncate-drawdown", "0.2", "--stop-properly", "-0.5"],
            None,
            "--stop-properly: Input should be greater than or equal to 0, got -0.5",
        ),
        (
            ["--stop-properly", "0.5"],
            None,
            "stop_properly 0.5 only applies to episodes ended by truncate_drawdown",
        ),
        (
            ["--advantage", "vtrace"],
            None,
            "unknown advantage estimator 'vtrace'; choose one of gae, grpo, reinforce_pp",
        ),
    ],
)
def test_bad_input_is_refused_with_its_reason(
    tmp_path: Path, home: Path, args: list[str], csv: str | None, message: str
) -> None:
    path = tmp_path / "prices.csv"
    if csv is not None:
        path.write_text(csv)
    argv = [a.format(dir=tmp_path, csv=path) for a in args]
    if "--data" not in argv:
        argv += ["--data", "synthetic"]
    result = run_cli(*argv)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not home.exists()  # refused before any trial ran or any policy was saved


def test_training_options_run_and_are_reported() -> None:
    args = ["--mode", "ppo_only", *TINY_PPO, "--advantage", "grpo"]
    payload = trial_json(*args, "--truncate-drawdown", "0.2", "--stop-properly", "0.5")
    assert (payload["advantage"], payload["truncate_drawdown"], payload["stop_properly"]) == (
        "grpo",
        0.2,
        0.5,
    )
    assert payload["env_steps"] == 256
    plain = trial_json("--mode", "ppo_only", *TINY_PPO)
    assert (plain["advantage"], plain["truncate_drawdown"], plain["stop_properly"]) == (
        "gae",
        None,
        1.0,
    )
    human = run_cli("--data", "synthetic", *args, "--truncate-drawdown", "0.2")
    assert human.exit_code == 0, human.output
    assert (
        "PPO training: grpo advantages (no critic); episodes truncated at a 20.0% drawdown, "
        "stop_properly 1" in " ".join(human.output.split())
    )
    assert (
        "PPO training" not in run_cli("--data", "synthetic", "--mode", "ppo_only", *TINY_PPO).output
    )
