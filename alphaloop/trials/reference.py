"""The reference strategies every trial is compared against: equal weight and minimum CVaR.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it.
"""

from __future__ import annotations

import numpy as np

from alphaloop.market import MarketData
from alphaloop.metrics import Metrics, compute_metrics
from alphaloop.pipeline import MeanCvarAllocator
from alphaloop.portfolio_opt import start_sequence
from alphaloop.trials.backtest import Backtest, simulate, window_slice
from alphaloop.trials.models import TrialBudget, Window
from alphaloop.trials.strategies import rolling_cvar

# The baselines are fixed strategies: they do not move with the knobs, so every trial of a
# session is compared against the same numbers (and they are computed once per window).
BASELINE_HOLD_DAYS = 21
BASELINE_CVAR_ALPHA = 0.95
BASELINE_N_SCENARIOS = 5000
BASELINE_MAX_WEIGHT = 0.25
BASELINE_SEED = 0


def equal_weight_backtest(data: MarketData, window: Window, budget: TrialBudget) -> Backtest:
    """Equal weight (1/N) on ``window``, rebalanced monthly at the evaluation cost."""
    rets = data.returns[window_slice(data, window)]
    n_days, n = rets.shape
    monthly = np.zeros(n_days, dtype=bool)
    monthly[::BASELINE_HOLD_DAYS] = True
    return simulate(rets, np.full((n_days, n), 1.0 / n), monthly, budget.eval_cost_bps)


def baseline_backtests(
    data: MarketData, window: Window, budget: TrialBudget
) -> dict[str, Backtest]:
    """The backtests of the two baselines on ``window``: equal weight (rebalanced monthly) and
    rolling minimum CVaR. Not cached; :func:`baselines` caches their metrics."""
    start_sequence()
    win = window_slice(data, window)
    n = data.returns.shape[1]
    min_cvar = MeanCvarAllocator(
        alpha=BASELINE_CVAR_ALPHA,
        max_weight=max(BASELINE_MAX_WEIGHT, 1.0 / n),
        n_scenarios=BASELINE_N_SCENARIOS,
        hold_days=BASELINE_HOLD_DAYS,
        scenario_window=budget.scenario_window,
        cost_bps=budget.eval_cost_bps,
        risk_aversion=None,
        seed=BASELINE_SEED,
    )
    targets, rebalance = rolling_cvar(data, win, min_cvar)
    return {
        "equal_weight": equal_weight_backtest(data, window, budget),
        "min_cvar": simulate(data.returns[win], targets, rebalance, budget.eval_cost_bps),
    }


BaselineKey = tuple[str, int, int, float, int]
_BASELINES: dict[BaselineKey, dict[str, Metrics]] = {}


def _key(data: MarketData, window: Window, budget: TrialBudget) -> BaselineKey:
    win = window_slice(data, window)
    return (data.fingerprint, win.start, win.stop, budget.eval_cost_bps, budget.scenario_window)


def baselines(data: MarketData, window: Window, budget: TrialBudget) -> dict[str, Metrics]:
    """Metrics of :func:`baseline_backtests` on ``window``.

    They depend on neither the knobs nor the trial seed, so they are computed once per window and
    data set and reused by every trial of a session (in every process running its trials: see
    :func:`known_baselines`).
    """
    key = _key(data, window, budget)
    if key not in _BASELINES:
        _BASELINES[key] = {
            name: compute_metrics(bt.net, bt.turnover)
            for name, bt in baseline_backtests(data, window, budget).items()
        }
    return _BASELINES[key]


def known_baselines() -> dict[BaselineKey, dict[str, Metrics]]:
    """The baselines this process has computed (or been given), by window: what a process
    running trials of the same session hands to another, so each window's baselines are
    computed once per session rather than once per worker process (about a second for a
    session's folds). They are a pure function of their key, so where they were computed
    changes no number."""
    return dict(_BASELINES)


def remember_baselines(known: dict[BaselineKey, dict[str, Metrics]]) -> None:
    """Takes in the baselines another process of the session computed (:func:`known_baselines`)."""
    for key, metrics in known.items():
        _BASELINES.setdefault(key, metrics)
