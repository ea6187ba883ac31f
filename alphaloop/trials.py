"""The frozen evaluator: runs one trial of a mode and scores it. Proposers never edit this file.

What a proposer may change lives in ``alphaloop.knobs``. What it may not — the data split, the
cost charged on the evaluation window, the metric code, the training budget, the baselines — is
fixed here. Knobs shape training only: validation and test always charge ``eval_cost_bps``
whatever ``turnover_cost_bps`` or ``vol_penalty`` a proposer set.

A trial is a pure function of (mode, config, data fingerprint, seed, budget): the same inputs give
the same ``TrialResult`` (up to elapsed time), which is what makes a journaled trial replayable.

Backtest accounting (one convention for every strategy and baseline): at the open of a
rebalance day the book trades from its drifted weights to the target weights, paying
``eval_cost_bps`` per unit of one-way turnover ``sum |w_target - w_drifted|``; between rebalances
weights drift with prices. The book starts on the window's first day already holding its first
target, so no strategy pays for the initial purchase.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import TrialCrashed, TrialTimeout
from alphaloop.knobs import MODES, Mode, TrialConfig, config_hash, effective_max_weight
from alphaloop.market import MarketData
from alphaloop.metrics import OBJECTIVE_METRICS, Metrics, compute_metrics, objective_value
from alphaloop.portfolio_opt import (
    bootstrap_scenarios,
    risk_overlay,
    solve_mean_cvar,
    start_sequence,
)
from alphaloop.rl_engine import (
    DEFAULT_N_ENVS,
    DEFAULT_TOTAL_TIMESTEPS,
    load_policy,
    policy_weights,
    save_policy,
    train_ppo,
)

Window = Literal["validation", "test"]

# The baselines are fixed strategies: they do not move with the knobs, so every trial of a
# session is compared against the same numbers (and they are computed once per window).
BASELINE_HOLD_DAYS = 21
BASELINE_CVAR_ALPHA = 0.95
BASELINE_N_SCENARIOS = 5000
BASELINE_MAX_WEIGHT = 0.25
BASELINE_SEED = 0


class TrialBudget(BaseModel):
    """Session settings every trial of a session shares. Not knobs: a proposer cannot touch them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total_timesteps: int = Field(default=DEFAULT_TOTAL_TIMESTEPS, ge=64, le=50_000_000)
    n_envs: int = Field(default=DEFAULT_N_ENVS, ge=1, le=256)
    eval_cost_bps: float = Field(default=10.0, ge=0, le=500)
    scenario_window: int = Field(
        default=504, ge=60, le=5000, description="trailing days the scenarios are drawn from"
    )
    time_limit_s: float | None = Field(default=None, gt=0)


class TrialResult(BaseModel):
    """What one trial produced on one evaluation window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: str
    window: str
    metric: str
    objective: float
    metrics: Metrics
    baselines: dict[str, Metrics]
    daily_returns: list[float]
    final_weights: list[float]
    elapsed_s: float
    seed: int
    config_hash: str
    data_fingerprint: str
    start_date: str
    end_date: str
    policy_path: str | None = None
    timesteps: int | None = None
    curve: list[tuple[int, float]] = Field(default_factory=list)


class Backtest(NamedTuple):
    """A book run through a window by :func:`simulate`.

    Attributes:
        net: (T,) daily returns net of the evaluation cost.
        turnover: (T,) one-way turnover traded at each day's open.
        holdings: (T, N) weights held through each day, after that day's rebalance.
        final: (N,) weights at the close of the last day.
    """

    net: np.ndarray
    turnover: np.ndarray
    holdings: np.ndarray
    final: np.ndarray


def simulate(
    returns: np.ndarray, targets: np.ndarray, rebalance: np.ndarray, cost_bps: float
) -> Backtest:
    """Runs a book through ``returns`` (T, N) trading to ``targets`` on ``rebalance`` days."""
    cost = cost_bps / 1e4
    held = targets[0].copy()
    net = np.empty(len(returns))
    turnover = np.zeros(len(returns))
    holdings = np.empty_like(returns, dtype=float)
    for t in range(len(returns)):
        if rebalance[t] and t > 0:
            turnover[t] = np.abs(targets[t] - held).sum()
            held = targets[t].copy()
        holdings[t] = held
        gross = float(held @ returns[t])
        net[t] = (1.0 - cost * turnover[t]) * (1.0 + gross) - 1.0
        held = held * (1.0 + returns[t]) / (1.0 + gross)
    return Backtest(net, turnover, holdings, held)


def _drifted(weights: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """Weights after holding ``weights`` through the rows of ``returns``."""
    growth = np.prod(1.0 + returns, axis=0) * weights
    return growth / growth.sum()


def window_slice(data: MarketData, window: Window) -> slice:
    """The rows of ``data.returns`` an evaluation on ``window`` scores."""
    if window == "validation":
        return data.val
    if window == "test":
        return data.test
    raise ValueError(f"unknown window {window!r}; use 'validation' or 'test'")


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise TrialTimeout("trial ran past its time limit")


def _rolling_cvar(
    data: MarketData,
    win: slice,
    *,
    hold_days: int,
    alpha: float,
    max_weight: float,
    n_scenarios: int,
    scenario_window: int,
    cost_bps: float,
    risk_aversion: float | None,
    seed: int,
    deadline: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Targets of a rolling Mean-CVaR (or minimum-CVaR when ``risk_aversion`` is None) book.

    Every ``hold_days`` the solver sees ``n_scenarios`` block-bootstrapped ``hold_days``-horizon
    returns drawn from the trailing ``scenario_window`` days (never the day being traded), and a
    turnover penalty equal to the cost the evaluator will charge.
    """
    rng = np.random.default_rng(seed)
    n_days, n = win.stop - win.start, data.n_assets
    targets = np.empty((n_days, n))
    rebalance = np.zeros(n_days, dtype=bool)
    current: np.ndarray | None = None
    last_day = 0
    for day in range(0, n_days, hold_days):
        _check_deadline(deadline)
        t = win.start + day
        history = data.returns[max(0, t - scenario_window) : t]
        scenarios = bootstrap_scenarios(history, hold_days, n_scenarios, rng)
        if current is not None:
            current = _drifted(current, data.returns[win.start + last_day : t])
        if risk_aversion is None:
            sol = solve_mean_cvar(scenarios, alpha, max_weight, risk_aversion=1e6)
        else:
            sol = solve_mean_cvar(
                scenarios,
                alpha,
                max_weight,
                risk_aversion=risk_aversion,
                prev_weights=current,
                turnover_cost=cost_bps / 1e4,
            )
        current, last_day = sol.weights, day
        targets[day : day + hold_days] = sol.weights
        rebalance[day] = True
    return targets, rebalance


def baseline_backtests(
    data: MarketData, window: Window, budget: TrialBudget
) -> dict[str, Backtest]:
    """The backtests of the two baselines on ``window``: equal weight (rebalanced monthly) and
    rolling minimum CVaR. Not cached; :func:`baselines` caches their metrics."""
    start_sequence()
    win = window_slice(data, window)
    rets = data.returns[win]
    n_days, n = rets.shape
    monthly = np.zeros(n_days, dtype=bool)
    monthly[::BASELINE_HOLD_DAYS] = True
    targets, rebalance = _rolling_cvar(
        data,
        win,
        hold_days=BASELINE_HOLD_DAYS,
        alpha=BASELINE_CVAR_ALPHA,
        max_weight=max(BASELINE_MAX_WEIGHT, 1.0 / n),
        n_scenarios=BASELINE_N_SCENARIOS,
        scenario_window=budget.scenario_window,
        cost_bps=budget.eval_cost_bps,
        risk_aversion=None,
        seed=BASELINE_SEED,
    )
    return {
        "equal_weight": simulate(
            rets, np.full((n_days, n), 1.0 / n), monthly, budget.eval_cost_bps
        ),
        "min_cvar": simulate(rets, targets, rebalance, budget.eval_cost_bps),
    }


_BASELINES: dict[tuple, dict[str, Metrics]] = {}


def baselines(data: MarketData, window: Window, budget: TrialBudget) -> dict[str, Metrics]:
    """Metrics of :func:`baseline_backtests` on ``window``.

    They depend on neither the knobs nor the trial seed, so they are computed once per window and
    data set and reused by every trial of a session.
    """
    win = window_slice(data, window)
    key = (data.fingerprint, win.start, win.stop, budget.eval_cost_bps, budget.scenario_window)
    if key not in _BASELINES:
        _BASELINES[key] = {
            name: compute_metrics(bt.net, bt.turnover)
            for name, bt in baseline_backtests(data, window, budget).items()
        }
    return _BASELINES[key]


def _ppo_targets(
    config: TrialConfig,
    data: MarketData,
    win: slice,
    budget: TrialBudget,
    seed: int,
    policy_path: Path | None,
    policy_dir: Path | None,
    on_update: Callable[[int, float], None] | None,
    deadline: float | None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    extra: dict = {}
    if policy_path is not None:
        model = load_policy(policy_path)
        extra["policy_path"] = str(policy_path)
    else:

        def progress(timestep: int, reward: float) -> None:
            _check_deadline(deadline)
            if on_update is not None:
                on_update(timestep, reward)

        trained = train_ppo(
            data.returns[data.train],
            config,
            budget.total_timesteps,
            budget.n_envs,
            seed,
            on_update=progress,
        )
        model = trained.model
        extra["timesteps"] = trained.timesteps
        extra["curve"] = [(int(t), float(r)) for t, r in trained.curve]
        if policy_dir is not None:
            path = Path(policy_dir) / f"ppo-{config_hash(config)[:12]}-s{seed}.zip"
            path.parent.mkdir(parents=True, exist_ok=True)
            save_policy(model, path)
            extra["policy_path"] = str(path)
    targets = policy_weights(
        model, data.returns, win.start, win.stop, config.lookback, config.rebal_freq
    )
    if not np.all(np.isfinite(targets)):
        raise TrialCrashed("policy produced non-finite weights on the evaluation window")
    rebalance = np.zeros(win.stop - win.start, dtype=bool)
    rebalance[:: config.rebal_freq] = True
    return targets, rebalance, extra


def _overlay(
    targets: np.ndarray,
    rebalance: np.ndarray,
    config: TrialConfig,
    data: MarketData,
    win: slice,
    budget: TrialBudget,
    seed: int,
    deadline: float | None,
) -> np.ndarray:
    """The weight-centric pipeline's risk stage: each PPO target is moved (as little as possible,
    in L1) to respect the position cap and a CVaR budget on fresh scenarios. Scenarios are
    re-drawn every ``cufolio_hold_days`` and reused for the PPO decisions in between."""
    rng = np.random.default_rng(seed)
    cap = effective_max_weight(config, data.n_assets)
    out = targets.copy()
    scenarios: np.ndarray | None = None
    drawn_on = -math.inf
    for day in np.flatnonzero(rebalance):
        _check_deadline(deadline)
        if day - drawn_on >= config.cufolio_hold_days:
            t = win.start + day
            history = data.returns[max(0, t - budget.scenario_window) : t]
            scenarios = bootstrap_scenarios(
                history, config.cufolio_hold_days, config.n_scenarios, rng
            )
            drawn_on = day
        sol = risk_overlay(targets[day], scenarios, config.cvar_alpha, cap)
        end = day + config.rebal_freq
        out[day:end] = sol.weights
    return out


def strategy_targets(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    window: Window,
    budget: TrialBudget,
    seed: int,
    *,
    policy_path: str | Path | None = None,
    policy_dir: str | Path | None = None,
    on_update: Callable[[int, float], None] | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """What a trial decides on ``window``: the target weights of every day (T, N), the
    rebalance days (T,) and what PPO training produced (``policy_path``, ``timesteps``,
    ``curve``). :func:`simulate` turns them into returns; arguments as in :func:`run_trial`.

    The solves of one call form one sequence (see :func:`~alphaloop.portfolio_opt.
    start_sequence`): the same inputs give the same targets, whatever ran before.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    start_sequence()
    win = window_slice(data, window)
    if mode == "cufolio_only":
        targets, rebalance = _rolling_cvar(
            data,
            win,
            hold_days=config.cufolio_hold_days,
            alpha=config.cvar_alpha,
            max_weight=effective_max_weight(config, data.n_assets),
            n_scenarios=config.n_scenarios,
            scenario_window=budget.scenario_window,
            cost_bps=budget.eval_cost_bps,
            risk_aversion=1.0,
            seed=seed,
            deadline=deadline,
        )
        return targets, rebalance, {}
    targets, rebalance, extra = _ppo_targets(
        config,
        data,
        win,
        budget,
        seed,
        Path(policy_path) if policy_path else None,
        Path(policy_dir) if policy_dir else None,
        on_update,
        deadline,
    )
    if mode == "unified":
        targets = _overlay(targets, rebalance, config, data, win, budget, seed, deadline)
    return targets, rebalance, extra


def run_trial(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget | None = None,
    seed: int = 0,
    *,
    window: Window = "validation",
    metric: str = "sharpe",
    policy_path: str | Path | None = None,
    policy_dir: str | Path | None = None,
    on_update: Callable[[int, float], None] | None = None,
) -> TrialResult:
    """Runs one trial and scores it on ``window``.

    Args:
        mode: ``ppo_only``, ``cufolio_only`` or ``unified``.
        config: the knobs (already clipped).
        data: the market data and its split; training only ever sees ``data.train``.
        budget: session settings (PPO timesteps, envs, evaluation cost...).
        seed: seeds PPO, the scenario bootstrap and environment starts.
        window: ``validation`` for search trials, ``test`` once per session at the end.
        metric: which metric is the objective (``sharpe``, ``sortino``, ``calmar``, ``return``).
        policy_path: evaluate this saved policy instead of training one (PPO modes).
        policy_dir: where a freshly trained policy is saved.
        on_update: called with (timestep, mean episode reward) after each PPO rollout.

    Raises:
        TrialCrashed: the trial could not produce weights (diverged policy, solver failure).
        TrialTimeout: ``budget.time_limit_s`` ran out.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if metric not in OBJECTIVE_METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(OBJECTIVE_METRICS)}")
    budget = budget or TrialBudget()
    started = time.monotonic()
    deadline = started + budget.time_limit_s if budget.time_limit_s else None
    win = window_slice(data, window)
    targets, rebalance, extra = strategy_targets(
        mode,
        config,
        data,
        window,
        budget,
        seed,
        policy_path=policy_path,
        policy_dir=policy_dir,
        on_update=on_update,
        deadline=deadline,
    )
    net, turnover, _, final = simulate(data.returns[win], targets, rebalance, budget.eval_cost_bps)
    if not np.all(np.isfinite(net)):
        raise TrialCrashed("the backtest produced non-finite returns")
    metrics = compute_metrics(net, turnover)
    start_date, end_date = data.window_dates(win)
    return TrialResult(
        mode=mode,
        window=window,
        metric=metric,
        objective=objective_value(metrics, metric),
        metrics=metrics,
        baselines=baselines(data, window, budget),
        daily_returns=[float(x) for x in net],
        final_weights=[float(x) for x in final],
        elapsed_s=time.monotonic() - started,
        seed=seed,
        config_hash=config_hash(config),
        data_fingerprint=data.fingerprint,
        start_date=start_date,
        end_date=end_date,
        **extra,
    )
