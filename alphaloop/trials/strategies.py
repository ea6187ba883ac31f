"""What each mode decides: the target weights and rebalance days of a trial on a window.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import MODES, Mode, TrialConfig, config_hash, effective_max_weight
from alphaloop.market import MarketData
from alphaloop.portfolio_opt import (
    bootstrap_scenarios,
    risk_overlay,
    solve_mean_cvar,
    start_sequence,
)
from alphaloop.rl_engine import load_policy, policy_weights, save_policy, train_ppo
from alphaloop.trials.backtest import check_deadline, drifted, window_slice
from alphaloop.trials.models import TrialBudget, Window


def check_mode(mode: str) -> None:
    """Raises ``ValueError`` naming the modes when ``mode`` is not one of them."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")


def rolling_cvar(
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
        check_deadline(deadline)
        t = win.start + day
        history = data.returns[max(0, t - scenario_window) : t]
        scenarios = bootstrap_scenarios(history, hold_days, n_scenarios, rng)
        if current is not None:
            current = drifted(current, data.returns[win.start + last_day : t])
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
            check_deadline(deadline)
            if on_update is not None:
                on_update(timestep, reward)

        trained = train_ppo(
            data.returns[data.train],
            config,
            budget.total_timesteps,
            budget.n_envs,
            seed,
            on_update=progress,
            truncate_drawdown=budget.truncate_drawdown,
            stop_properly=budget.stop_properly,
            advantage=budget.advantage,
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
        check_deadline(deadline)
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
    check_mode(mode)
    start_sequence()
    win = window_slice(data, window)
    if mode == "cufolio_only":
        targets, rebalance = rolling_cvar(
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
