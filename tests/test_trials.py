"""The frozen evaluator: backtest accounting, evaluation costs, determinism, baselines, windows,
crashes and time limits. Every figure is checked against a recomputation written here."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3.common.policies import ActorCriticPolicy

from alphaloop import rl_engine
from alphaloop.exceptions import TrialCrashed, TrialTimeout
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, load_market
from alphaloop.metrics import TRADING_DAYS
from alphaloop.pipeline import PpoAllocator
from alphaloop.rl_engine import load_policy, policy_weights
from alphaloop.trials import TrialBudget, TrialResult, reference, run_trial, simulate

# PPO small enough to train in well under a second: 2 envs x 64 steps per rollout, 2 rollouts.
TINY_PPO = TrialConfig(
    lookback=5, episode_len=20, rebal_freq=5, n_steps=64, batch_size=64, n_epochs=3
)
TINY_BUDGET = TrialBudget(total_timesteps=256, n_envs=2)


@pytest.fixture(scope="module")
def data() -> MarketData:
    return load_market("synthetic")


def dollar_book(
    returns: np.ndarray, targets: np.ndarray, rebalance: np.ndarray, cost_bps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The accounting of the alphaloop.trials docstring, kept in dollars rather than weights.

    The book starts holding ``targets[0]``; at the open of a rebalance day (never day 0) it
    sells and buys to the target and pays ``cost_bps`` on the one-way turnover of its weights.
    """
    cost = cost_bps / 1e4
    dollars = np.array(targets[0], dtype=float)
    net = np.zeros(len(returns))
    turnover = np.zeros(len(returns))
    for t in range(len(returns)):
        wealth = dollars.sum()
        if rebalance[t] and t > 0:
            turnover[t] = np.abs(targets[t] - dollars / wealth).sum()
            dollars = targets[t] * wealth * (1.0 - cost * turnover[t])
        dollars = dollars * (1.0 + returns[t])
        net[t] = dollars.sum() / wealth - 1.0
    return net, turnover, dollars / dollars.sum()


def perturbed(data: MarketData, rows: slice, seed: int = 9) -> MarketData:
    """A copy of ``data`` whose returns on ``rows`` are replaced by unrelated ones.

    It gets its own fingerprint, as a changed file would, so no cached baseline is reused."""
    returns = data.returns.copy()
    n_rows = len(range(*rows.indices(len(returns))))
    rng = np.random.default_rng(seed)
    returns[rows] = rng.normal(0.0, 0.02, (n_rows, data.n_assets)).clip(-0.3, 0.3)
    return dataclasses.replace(data, returns=returns, fingerprint=f"perturbed-{seed}")


def without_elapsed(result: TrialResult) -> dict[str, Any]:
    return result.model_dump(exclude={"elapsed_s"})


@pytest.fixture
def forget_baselines(monkeypatch: pytest.MonkeyPatch):
    """Returns a function that drops the per-window baseline cache, as a new process starts."""

    def reset() -> None:
        monkeypatch.setattr(reference, "_BASELINES", {})

    return reset


# -- simulate -----------------------------------------------------------------------------------


def test_simulate_two_assets_by_hand() -> None:
    returns = np.array([[0.10, -0.05], [0.02, 0.04], [-0.03, 0.01], [0.05, 0.00]])
    targets = np.array([[0.5, 0.5], [0.5, 0.5], [0.8, 0.2], [0.8, 0.2]])
    rebalance = np.array([True, False, True, False])
    net, turnover, holdings, final = simulate(returns, targets, rebalance, cost_bps=10.0)

    # Day 0: the book already holds 50/50 (no purchase cost): 0.5 * 10% + 0.5 * -5%.
    # Day 1: no trade; the dollars drifted to 0.55 / 0.475 (wealth 1.025) and grow to
    # 0.561 / 0.494 (wealth 1.055).
    # Day 2: at the open the weights are 0.561/1.055 and 0.494/1.055; trading to 80/20 turns
    # over 2 x (0.8 - 0.561/1.055) and pays 10 bps on it, then the day's returns apply.
    # Day 3: the 80/20 book drifted to 0.8 x 0.97 / 0.2 x 1.01 (sum 0.978) and is held.
    day2_turnover = 2 * (0.8 - 0.561 / 1.055)
    expected_net = [
        0.025,
        1.055 / 1.025 - 1,
        (1 - 0.001 * day2_turnover) * (1 + 0.8 * -0.03 + 0.2 * 0.01) - 1,
        (0.776 * 1.05 + 0.202) / 0.978 - 1,
    ]
    np.testing.assert_allclose(net, expected_net, rtol=0, atol=1e-15)
    np.testing.assert_allclose(turnover, [0, 0, day2_turnover, 0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(final, np.array([0.8148, 0.202]) / 1.0168, rtol=0, atol=1e-15)
    # Held through each day: the drifted book, or the target on a rebalance day.
    expected_holdings = [
        [0.5, 0.5],
        [0.55 / 1.025, 0.475 / 1.025],
        [0.8, 0.2],
        [0.776 / 0.978, 0.202 / 0.978],
    ]
    np.testing.assert_allclose(holdings, expected_holdings, rtol=0, atol=1e-15)
    assert day2_turnover == pytest.approx(0.53649289, abs=1e-8)


def test_simulate_matches_dollar_accounting_on_random_books() -> None:
    rng = np.random.default_rng(3)
    returns = rng.normal(0.0005, 0.02, (120, 5)).clip(-0.5, 0.5)
    targets = rng.dirichlet(np.ones(5), 120)
    rebalance = rng.random(120) < 0.3
    rebalance[0] = True  # a rebalance flag on day 0 must not trade either
    for cost_bps in (0.0, 10.0, 45.0):
        net, turnover, _, final = simulate(returns, targets, rebalance, cost_bps)
        want_net, want_turnover, want_final = dollar_book(returns, targets, rebalance, cost_bps)
        np.testing.assert_allclose(net, want_net, rtol=0, atol=1e-13)
        np.testing.assert_allclose(turnover, want_turnover, rtol=0, atol=1e-13)
        np.testing.assert_allclose(final, want_final, rtol=0, atol=1e-13)
    assert turnover[0] == 0 and (turnover[rebalance][1:] > 0).all()
    assert (turnover[~rebalance] == 0).all()


# -- evaluation cost ----------------------------------------------------------------------------


def test_cufolio_ignores_training_knobs_and_charges_the_harness_cost(data: MarketData) -> None:
    plain = run_trial("cufolio_only", TrialConfig(), data, seed=0)
    costly = TrialConfig(turnover_cost_bps=50.0, vol_penalty=5.0, lookback=60, learning_rate=1e-2)
    edited = run_trial("cufolio_only", costly, data, seed=0)
    assert edited.config_hash != plain.config_hash
    assert edited.daily_returns == plain.daily_returns
    assert edited.metrics == plain.metrics
    assert edited.objective == plain.objective
    assert edited.final_weights == plain.final_weights
    # The harness cost is what moves the result: the equality above is not for lack of costs.
    dearer = run_trial("cufolio_only", TrialConfig(), data, TrialBudget(eval_cost_bps=40.0), seed=0)
    assert dearer.daily_returns != plain.daily_returns


@pytest.mark.parametrize(
    ("knob_cost_bps", "vol_penalty", "eval_cost_bps"), [(50.0, 0.0, 10.0), (0.0, 5.0, 25.0)]
)
def test_ppo_validation_charges_eval_cost_bps_times_turnover(
    data: MarketData,
    tmp_path: Path,
    knob_cost_bps: float,
    vol_penalty: float,
    eval_cost_bps: float,
) -> None:
    config = TINY_PPO.model_copy(
        update={"turnover_cost_bps": knob_cost_bps, "vol_penalty": vol_penalty}
    )
    budget = TINY_BUDGET.model_copy(update={"eval_cost_bps": eval_cost_bps})
    result = run_trial("ppo_only", config, data, budget, seed=1, policy_dir=tmp_path)
    # Replay the saved policy's targets through the dollar book, with no cost at all.
    val = data.val
    targets = policy_weights(
        load_policy(result.policy_path),
        data.returns,
        val.start,
        val.stop,
        config.lookback,
        config.rebal_freq,
    )
    rebalance = np.arange(val.stop - val.start) % config.rebal_freq == 0
    gross, turnover, _ = dollar_book(data.returns[val], targets, rebalance, 0.0)
    assert turnover.sum() > 0.1  # the policy trades, so the cost is visible
    charged = (1 + gross) - (1 + np.asarray(result.daily_returns))
    np.testing.assert_allclose(
        charged, eval_cost_bps / 1e4 * turnover * (1 + gross), rtol=0, atol=1e-14
    )
    knob_charge = knob_cost_bps / 1e4 * turnover * (1 + gross)
    assert np.abs(charged - knob_charge).max() > 1e-6
    assert result.metrics.annual_turnover == pytest.approx(turnover.mean() * TRADING_DAYS, 1e-12)


# -- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "config", "budget"),
    [
        ("cufolio_only", TrialConfig(cufolio_hold_days=10), TrialBudget()),
        ("ppo_only", TINY_PPO, TINY_BUDGET),
        ("unified", TINY_PPO, TINY_BUDGET),
    ],
)
def test_same_inputs_same_result_other_seed_other_result(
    data: MarketData, mode: str, config: TrialConfig, budget: TrialBudget, forget_baselines
) -> None:
    forget_baselines()
    first = run_trial(mode, config, data, budget, seed=3)
    # Other trials in between, as in a session: they warm-started the cached solvers.
    run_trial(mode, config.model_copy(update={"cvar_alpha": 0.9}), data, budget, seed=4)
    again = run_trial(mode, config, data, budget, seed=3)
    assert without_elapsed(again) == without_elapsed(first)
    forget_baselines()
    run_trial(mode, config.model_copy(update={"cufolio_hold_days": 7}), data, budget, seed=5)
    fresh = run_trial(mode, config, data, budget, seed=3)
    assert without_elapsed(fresh) == without_elapsed(first)
    other = run_trial(mode, config, data, budget, seed=4)
    assert other.daily_returns != first.daily_returns
    assert other.baselines == first.baselines  # fixed strategies: not seeded by the trial


# -- baselines ----------------------------------------------------------------------------------


def test_equal_weight_baseline_is_monthly_rebalanced_one_over_n(data: MarketData) -> None:
    result = run_trial("cufolio_only", TrialConfig(), data, seed=0)
    rets = data.returns[data.val]
    n_days, n = rets.shape
    rebalance = np.arange(n_days) % 21 == 0
    net, turnover, _ = dollar_book(rets, np.full((n_days, n), 1.0 / n), rebalance, 10.0)
    ew = result.baselines["equal_weight"]
    assert ew.n_days == n_days == 300
    assert ew.sharpe == pytest.approx(net.mean() / net.std(ddof=1) * math.sqrt(252), rel=1e-12)
    assert ew.total_return == pytest.approx(np.prod(1 + net) - 1, rel=1e-12)
    wealth = np.concatenate([[1.0], np.cumprod(1 + net)])
    assert ew.max_drawdown == pytest.approx(
        max(1 - w / wealth[: i + 1].max() for i, w in enumerate(wealth)), rel=1e-12
    )
    assert ew.annual_turnover == pytest.approx(turnover.mean() * 252, rel=1e-12)
    assert ew.cvar_95 == pytest.approx(-np.sort(net)[:15].mean(), rel=1e-12)  # 5% of 300 days
    assert ew.hit_rate == np.mean(net > 0)


def test_baselines_are_shared_by_every_trial_of_a_window(
    data: MarketData, forget_baselines
) -> None:
    forget_baselines()
    a = run_trial("cufolio_only", TrialConfig(), data, seed=0)
    b = run_trial("cufolio_only", TrialConfig(cvar_alpha=0.9, n_scenarios=2000), data, seed=5)
    c = run_trial("ppo_only", TINY_PPO, data, TINY_BUDGET, seed=2)
    assert a.baselines == b.baselines == c.baselines
    assert set(a.baselines) == {"equal_weight", "min_cvar"}
    assert a.baselines["min_cvar"].n_days == 300
    # Computed afresh after other trials, they come out the same: they never depended on it.
    forget_baselines()
    fresh = run_trial("ppo_only", TINY_PPO, data, TINY_BUDGET, seed=8)
    assert fresh.baselines == a.baselines
    test = run_trial("cufolio_only", TrialConfig(), data, seed=0, window="test")
    assert test.baselines["equal_weight"] != a.baselines["equal_weight"]
    assert test.baselines["min_cvar"] != a.baselines["min_cvar"]


# -- windows ------------------------------------------------------------------------------------


def state_dict(path: str) -> dict[str, torch.Tensor]:
    return load_policy(path).policy.state_dict()


def test_ppo_training_never_sees_validation_or_test_returns(
    data: MarketData, tmp_path: Path
) -> None:
    later = perturbed(data, slice(data.val.start, None))
    runs = {}
    for name, market in (("original", data), ("perturbed", later)):
        runs[name] = run_trial(
            "ppo_only", TINY_PPO, market, TINY_BUDGET, seed=0, policy_dir=tmp_path / name
        )
    original, changed = (
        state_dict(runs["original"].policy_path),
        state_dict(runs["perturbed"].policy_path),
    )
    assert original.keys() == changed.keys()
    for key in original:
        torch.testing.assert_close(changed[key], original[key], rtol=0, atol=0)
    assert runs["perturbed"].curve == runs["original"].curve
    assert runs["perturbed"].daily_returns != runs["original"].daily_returns
    # The comparison can tell policies apart: a change inside TRAIN does change the policy.
    earlier = perturbed(data, slice(100, 400))
    moved = run_trial(
        "ppo_only", TINY_PPO, earlier, TINY_BUDGET, seed=0, policy_dir=tmp_path / "train"
    )
    assert any(not torch.equal(state_dict(moved.policy_path)[k], original[k]) for k in original)


def test_cufolio_decisions_never_look_ahead(data: MarketData) -> None:
    # 299 = 13 x 23: with re-solves every 23 days the window's last day is a re-solve day, and
    # the weights held at its close reveal the target chosen that morning.
    config = TrialConfig(cufolio_hold_days=23)
    last = data.val.stop - 1
    base = run_trial("cufolio_only", config, data, seed=0)

    def morning_target(result: TrialResult, market: MarketData) -> np.ndarray:
        undrifted = np.asarray(result.final_weights) / (1 + market.returns[last])
        return undrifted / undrifted.sum()

    # A crash of the largest holding that day: a solver that saw it would hold less of it.
    returns = data.returns.copy()
    returns[last, np.argmax(morning_target(base, data))] = -0.45
    moved_data = dataclasses.replace(data, returns=returns, fingerprint="crash-on-the-last-day")
    moved = run_trial("cufolio_only", config, moved_data, seed=0)
    assert moved.daily_returns[:-1] == base.daily_returns[:-1]
    assert moved.daily_returns[-1] < base.daily_returns[-1] - 0.05
    # That day's own returns changed; the decision taken before they were known did not.
    np.testing.assert_allclose(
        morning_target(moved, moved_data), morning_target(base, data), rtol=0, atol=1e-12
    )
    assert np.abs(np.asarray(moved.final_weights) - base.final_weights).max() > 1e-4


def test_unified_moves_only_targets_that_break_the_cap_or_the_cvar_budget(
    data: MarketData, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = TINY_PPO.model_copy(update={"max_position_pct": 0.25})

    def fixed_policy(weights: np.ndarray):
        # The PPO allocator stage of the pipeline, deciding fixed weights every rebalance.
        def allocate(self: PpoAllocator, day: object, selected: np.ndarray, state: object):
            return weights.copy(), None

        return allocate

    results = {}
    for name, weights in (("equal", np.full(6, 1 / 6)), ("all_in", np.eye(6)[2])):
        monkeypatch.setattr(PpoAllocator, "allocate", fixed_policy(weights))
        for mode in ("ppo_only", "unified"):
            results[name, mode] = run_trial(mode, config, data, TINY_BUDGET, seed=0)
    # Equal weight is within the cap and is the CVaR budget itself: the overlay leaves it.
    assert results["equal", "unified"].daily_returns == results["equal", "ppo_only"].daily_returns
    # All in one asset: ppo_only earns that asset's returns (it never trades)...
    np.testing.assert_allclose(
        results["all_in", "ppo_only"].daily_returns, data.returns[data.val, 2], rtol=0, atol=1e-15
    )
    assert results["all_in", "ppo_only"].metrics.annual_turnover == 0
    # ...while the overlay caps it at 25% on every rebalance (the last one five days before the
    # close, so the final weights drifted only a little since).
    unified = results["all_in", "unified"]
    assert 0.25 - 1e-9 <= max(unified.final_weights) < 0.3
    assert unified.metrics.volatility < 0.8 * results["all_in", "ppo_only"].metrics.volatility


def test_test_window_uses_test_dates_and_only_test_returns(
    data: MarketData, tmp_path: Path
) -> None:
    val_dates, test_dates = data.dates[data.val], data.dates[data.test]
    val = run_trial("cufolio_only", TrialConfig(), data, seed=0)
    test = run_trial("cufolio_only", TrialConfig(), data, seed=0, window="test")
    assert (val.window, val.start_date, val.end_date) == (
        "validation",
        str(val_dates[0].date()),
        str(val_dates[-1].date()),
    )
    assert (test.window, test.start_date, test.end_date) == (
        "test",
        str(test_dates[0].date()),
        str(test_dates[-1].date()),
    )
    assert test.metrics.n_days == len(test.daily_returns) == len(test_dates) == 300
    assert test_dates[0] > val_dates[-1]
    moved = perturbed(data, data.test)
    assert run_trial("cufolio_only", TrialConfig(), moved, seed=0).daily_returns == (
        val.daily_returns
    )
    moved_test = run_trial("cufolio_only", TrialConfig(), moved, seed=0, window="test")
    assert moved_test.daily_returns != test.daily_returns

    # A PPO policy trained once is scored on TEST from its saved file, without training again.
    trained = run_trial("ppo_only", TINY_PPO, data, TINY_BUDGET, seed=0, policy_dir=tmp_path)
    held_out = run_trial(
        "ppo_only", TINY_PPO, data, TINY_BUDGET, window="test", policy_path=trained.policy_path
    )
    assert (held_out.start_date, held_out.end_date) == (test.start_date, test.end_date)
    assert held_out.timesteps is None and held_out.curve == []
    targets = policy_weights(
        load_policy(trained.policy_path),
        data.returns,
        data.test.start,
        data.test.stop,
        TINY_PPO.lookback,
        TINY_PPO.rebal_freq,
    )
    rebalance = np.arange(300) % TINY_PPO.rebal_freq == 0
    net, _, _ = dollar_book(data.returns[data.test], targets, rebalance, 10.0)
    np.testing.assert_allclose(held_out.daily_returns, net, rtol=0, atol=1e-13)


def test_unknown_window_mode_or_metric_is_refused(data: MarketData) -> None:
    with pytest.raises(ValueError, match="unknown window 'train'"):
        run_trial("cufolio_only", TrialConfig(), data, window="train")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown mode 'rl'"):
        run_trial("rl", TrialConfig(), data)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown metric 'alpha'"):
        run_trial("cufolio_only", TrialConfig(), data, metric="alpha")


# -- crashes and time limits --------------------------------------------------------------------


def test_huge_learning_rate_is_a_crash_with_the_reason(data: MarketData) -> None:
    # Above the knob's bound on purpose (model_copy does not validate): the policy diverges.
    config = TINY_PPO.model_copy(update={"learning_rate": 10.0})
    with pytest.raises(TrialCrashed, match=r"policy diverged: non-finite parameters in log_std"):
        run_trial("ppo_only", config, data, TINY_BUDGET, seed=0)


def test_nan_weights_from_the_policy_are_a_crash(
    data: MarketData, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nan_logits(self: object, obs: torch.Tensor) -> object:
        # A diverged policy: its distribution's mode (the deterministic action) is NaN.
        return SimpleNamespace(mode=lambda: torch.full((1, 6), math.nan))

    monkeypatch.setattr(ActorCriticPolicy, "get_distribution", nan_logits)
    for mode in ("ppo_only", "unified"):
        with pytest.raises(TrialCrashed, match="non-finite weights on the evaluation window"):
            run_trial(mode, TINY_PPO, data, TINY_BUDGET, seed=0)


@pytest.mark.parametrize(
    ("mode", "config", "total_timesteps"),
    [("cufolio_only", TrialConfig(), 256), ("ppo_only", TINY_PPO, 100_000)],
)
def test_time_limit_raises_trial_timeout(
    data: MarketData, mode: str, config: TrialConfig, total_timesteps: int
) -> None:
    budget = TrialBudget(total_timesteps=total_timesteps, n_envs=2, time_limit_s=1e-3)
    with pytest.raises(TrialTimeout, match="time limit"):
        run_trial(mode, config, data, budget, seed=0)
    # The same trial with room to finish does finish.
    if mode == "cufolio_only":
        roomy = budget.model_copy(update={"time_limit_s": 600.0})
        assert run_trial(mode, config, data, roomy, seed=0).metrics.n_days == 300


def test_training_options_default_to_training_as_before() -> None:
    budget = TrialBudget()
    assert (budget.truncate_drawdown, budget.stop_properly, budget.advantage) == (None, 1.0, "gae")
    # A journaled budget from before the options existed loads with them at their defaults.
    assert TrialBudget(**{"total_timesteps": 256, "n_envs": 2}) == TINY_BUDGET


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"truncate_drawdown": 0.0}, "greater than 0"),
        ({"truncate_drawdown": 1.0}, "less than 1"),
        ({"truncate_drawdown": 0.2, "stop_properly": 1.5}, "less than or equal to 1"),
        ({"stop_properly": 0.5}, "only applies to episodes ended by truncate_drawdown"),
        ({"advantage": "vtrace"}, "'gae', 'grpo' or 'reinforce_pp'"),
    ],
)
def test_training_options_are_bounded(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrialBudget(**values)


def test_training_options_reach_ppo(data: MarketData, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    real = rl_engine.train_ppo

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return real(*args, **kwargs)

    # A PPO trial imports the trainer from the engine when it runs (see trials.strategies).
    monkeypatch.setattr(rl_engine, "train_ppo", spy)
    budget = TINY_BUDGET.model_copy(
        update={"truncate_drawdown": 0.1, "stop_properly": 0.5, "advantage": "reinforce_pp"}
    )
    result = run_trial("ppo_only", TINY_PPO, data, budget, seed=0)
    assert (seen["truncate_drawdown"], seen["stop_properly"], seen["advantage"]) == (
        0.1,
        0.5,
        "reinforce_pp",
    )
    assert result.timesteps == 256
    # Without the options the same trial trains the default way, to another policy.
    plain = run_trial("ppo_only", TINY_PPO, data, TINY_BUDGET, seed=0)
    assert seen["advantage"] == "gae" and seen["truncate_drawdown"] is None
    assert plain.curve != result.curve
