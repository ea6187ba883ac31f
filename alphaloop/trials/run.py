"""One trial, end to end: decide on a window, backtest, score, compare with the baselines.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import Mode, TrialConfig, config_hash
from alphaloop.market import MarketData
from alphaloop.metrics import OBJECTIVE_METRICS, compute_metrics, objective_value
from alphaloop.trials.backtest import simulate, window_slice
from alphaloop.trials.models import TrialBudget, TrialResult, Window
from alphaloop.trials.reference import baselines
from alphaloop.trials.strategies import check_mode, strategy_targets

logger = logging.getLogger(__name__)


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
    check_mode(mode)
    if metric not in OBJECTIVE_METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(OBJECTIVE_METRICS)}")
    budget = budget or TrialBudget()
    started = time.monotonic()
    deadline = started + budget.time_limit_s if budget.time_limit_s else None
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
    result = _score(
        mode, config, data, budget, seed, window, metric, (targets, rebalance), started, extra
    )
    logger.debug(
        "trial %s on %s (seed %d, config %s): %s %.4f in %.1f s",
        mode,
        window,
        seed,
        result.config_hash[:12],
        metric,
        result.objective,
        result.elapsed_s,
    )
    return result


def _score(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget,
    seed: int,
    window: Window,
    metric: str,
    decisions: tuple[np.ndarray, np.ndarray],
    started: float,
    extra: dict[str, Any],
) -> TrialResult:
    """Backtests the target weights and rebalance days of ``decisions`` on ``window`` at the
    evaluation cost and scores the book next to the baselines; ``extra`` is what PPO training
    produced."""
    targets, rebalance = decisions
    win = window_slice(data, window)
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
