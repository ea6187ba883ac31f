"""What each mode decides: the target weights and rebalance days of a trial on a window.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. Every mode is
a weight-centric pipeline (:mod:`alphaloop.pipeline`) run day by day over the window, the same
pipeline the portfolio manager runs one tick at a time: a backtest and a live book decide the
same weights from the same inputs. The sequential state of a strategy (the scenario
generator, the previous solution behind the turnover penalty, the scenarios PPO rebalances
reuse) starts fresh at the window's first day.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import MarketData
from alphaloop.pipeline import (
    ConstantTiming,
    MeanCvarAllocator,
    StaticUniverse,
    WeightCentricPipeline,
    pipeline_for,
    run_sequence,
)
from alphaloop.portfolio_opt import start_sequence
from alphaloop.rl_engine import trial_threads
from alphaloop.trials.backtest import check_deadline, window_slice
from alphaloop.trials.models import TrialBudget, Window
from alphaloop.vocabulary import MODES, Mode


def check_mode(mode: str) -> None:
    """Raises ``ValueError`` naming the modes when ``mode`` is not one of them."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")


def rolling_cvar(
    data: MarketData,
    win: slice,
    allocator: MeanCvarAllocator,
    deadline: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Targets of ``allocator``'s rolling Mean-CVaR book (minimum CVaR when its
    ``risk_aversion`` is None) over ``win``.

    Every ``hold_days`` the solver sees ``n_scenarios`` block-bootstrapped ``hold_days``-horizon
    returns drawn from the trailing ``scenario_window`` days (never the day being traded), and a
    turnover penalty equal to the cost the evaluator will charge. Built on the weight-centric
    pipeline (:class:`~alphaloop.pipeline.MeanCvarAllocator` as the allocator stage).
    """
    hold = allocator.hold_days
    pipeline = WeightCentricPipeline(StaticUniverse(), allocator, ConstantTiming(), (), hold)
    targets, rebalance, _ = run_sequence(
        pipeline, data.returns, win.start, win.stop, on_rebalance=_deadline_check(deadline)
    )
    return targets, rebalance


def _deadline_check(deadline: float | None) -> Callable[[int], None]:
    return lambda _step: check_deadline(deadline)


def trained_model(
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget,
    seed: int,
    policy_path: Path | None,
    policy_dir: Path | None,
    on_update: Callable[[int, float], None] | None,
    deadline: float | None,
) -> tuple[Any, dict]:
    """The PPO a trial decides with: loaded from ``policy_path``, or trained on TRAIN for the
    budget (and saved under ``policy_dir``); and what training produced."""
    # Imported here, not with the module: they load torch and stable-baselines3 (seconds), which
    # a Mean-CVaR trial never uses, so its worker processes start without them.
    from alphaloop.rl_engine import load_policy, save_policy, train_ppo

    extra: dict = {}
    if policy_path is not None:
        extra["policy_path"] = str(policy_path)
        return load_policy(policy_path), extra

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
    extra["timesteps"] = trained.timesteps
    extra["curve"] = [(int(t), float(r)) for t, r in trained.curve]
    if policy_dir is not None:
        path = Path(policy_dir) / f"ppo-{config_hash(config)[:12]}-s{seed}.zip"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_policy(trained.model, path)
        extra["policy_path"] = str(path)
    return trained.model, extra


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
    extra: dict[str, Any] = {}
    model = None
    # A PPO trial's torch work, training and walk-forward, runs on its thread share (see
    # rl_engine.threads), so trials side by side do not fight over cores.
    with nullcontext() if mode == "cufolio_only" else trial_threads():
        if mode != "cufolio_only":
            model, extra = trained_model(
                config,
                data,
                budget,
                seed,
                Path(policy_path) if policy_path else None,
                Path(policy_dir) if policy_dir else None,
                on_update,
                deadline,
            )
        pipeline = pipeline_for(
            mode,
            config,
            data.n_assets,
            seed=seed,
            scenario_window=budget.scenario_window,
            cost_bps=budget.eval_cost_bps,
            model=model,
        )
        targets, rebalance, _ = run_sequence(
            pipeline, data.returns, win.start, win.stop, on_rebalance=_deadline_check(deadline)
        )
    if not np.all(np.isfinite(targets)):
        raise TrialCrashed("policy produced non-finite weights on the evaluation window")
    return targets, rebalance, extra
