"""Walk-forward evaluation of one config, and the evaluator's reruns a stress test needs.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. A search scores
a config on one validation window; walk-forward asks whether the config holds up window after
window, on days the search never scored: the span from the first unseen day (the start of
TEST, or a later day a user names, such as the first of prices appended after the session) to
the end of the data is cut into consecutive, non-overlapping evaluation windows, each trained
on days that end the day before it:
*anchored* trains on every day before the window, *rolling* on a fixed number of days before
it. Each window is then one :func:`~alphaloop.trials.evaluate` of the config on explicit rows
with those training rows, so the evaluator's rules hold unchanged: the evaluation cost is
always charged, decisions only look back, and PPO modes retrain per window with the session's
budget. ``cufolio_only`` learns from nothing but its trailing scenario window, so its anchored
and rolling windows coincide.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData
from alphaloop.market.splits import MIN_EVAL_ROWS, MIN_TRAIN_ROWS
from alphaloop.metrics import Metrics, max_drawdown, sharpe
from alphaloop.trials.backtest import Backtest, simulate
from alphaloop.trials.evaluation import ConfigSubject, evaluate
from alphaloop.trials.models import TrialBudget
from alphaloop.trials.reference import BASELINE_HOLD_DAYS
from alphaloop.trials.strategies import strategy_targets
from alphaloop.trials.windows import Rows, split_for
from alphaloop.vocabulary import Mode

logger = logging.getLogger(__name__)

Scheme = Literal["anchored", "rolling"]
SCHEMES: tuple[Scheme, ...] = ("anchored", "rolling")
DEFAULT_WINDOWS = 4
# Rolling training length, in evaluation windows: long enough to hold a scenario window.
ROLLING_TRAIN_WINDOWS = 3


class WalkForwardWindow(BaseModel):
    """One evaluation window: what trained on what, and how it scored next to the baselines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scheme: Scheme
    index: int
    train_start: str
    train_end: str
    eval_start: str
    eval_end: str
    train_days: int
    eval_days: int
    metrics: Metrics
    baselines: dict[str, Metrics]
    net: list[float]
    timesteps: int | None = None


class SchemeSummary(BaseModel):
    """A scheme's windows taken together."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scheme: Scheme
    n_windows: int
    mean_sharpe: float
    median_sharpe: float
    worst_sharpe: float
    positive_windows: int
    beat_equal_weight: int
    pooled_sharpe: float
    pooled_max_drawdown: float


class WalkForward(BaseModel):
    """Every window of every scheme, and a summary per scheme."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: str
    eval_cost_bps: float
    windows: tuple[WalkForwardWindow, ...]
    summaries: tuple[SchemeSummary, ...]


def walk_forward_splits(
    data: MarketData,
    n_windows: int = DEFAULT_WINDOWS,
    scheme: Scheme = "anchored",
    train_days: int | None = None,
    start: int | None = None,
) -> list[tuple[slice, slice]]:
    """The (train, evaluation) row slices of each window; every train slice ends where its
    evaluation slice starts.

    Args:
        data: the session's data; windows tile ``start`` to the last day.
        n_windows: how many evaluation windows.
        scheme: ``anchored`` (train from the first day) or ``rolling`` (``train_days`` days).
        train_days: rolling train length; default three evaluation windows, at least the
            smallest training window the knobs allow.
        start: the first row windows may score; the start of TEST (the first day no search
            scored) when None.

    Raises:
        ValueError: too many windows for the days, or an unknown scheme.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; use {' or '.join(SCHEMES)}")
    start = data.test.start if start is None else start
    stop = len(data.returns)
    length = (stop - start) // n_windows if n_windows >= 1 else 0
    if length < MIN_EVAL_ROWS:
        raise ValueError(
            f"{n_windows} walk-forward windows over {stop - start} unseen days leave {length} "
            f"days each; each needs >= {MIN_EVAL_ROWS}"
        )
    rolling = max(train_days or ROLLING_TRAIN_WINDOWS * length, MIN_TRAIN_ROWS)
    splits = []
    for i in range(n_windows):
        a = start + i * length
        b = stop if i == n_windows - 1 else a + length
        first = 0 if scheme == "anchored" else max(0, a - rolling)
        splits.append((slice(first, a), slice(a, b)))
    return splits


def _window(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget,
    seed: int,
    scheme: Scheme,
    index: int,
    split: tuple[slice, slice],
    policy_dir: Path | None,
) -> WalkForwardWindow:
    train, evaluation = split
    subject = ConfigSubject(mode=mode, config=config, budget=budget, seed=seed)
    result = evaluate(subject, Rows.of(evaluation, train), data, policy_dir=policy_dir)
    train_start, train_end = data.window_dates(train)
    return WalkForwardWindow(
        scheme=scheme,
        index=index,
        train_start=train_start,
        train_end=train_end,
        eval_start=result.start_date,
        eval_end=result.end_date,
        train_days=train.stop - train.start,
        eval_days=evaluation.stop - evaluation.start,
        metrics=result.metrics,
        baselines=result.baselines,
        net=result.daily_returns,
        timesteps=result.timesteps,
    )


def _summary(scheme: Scheme, windows: Sequence[WalkForwardWindow]) -> SchemeSummary:
    sharpes = np.array([w.metrics.sharpe for w in windows])
    pooled = np.concatenate([w.net for w in windows])
    ew = [w.baselines.get("equal_weight") for w in windows]
    return SchemeSummary(
        scheme=scheme,
        n_windows=len(windows),
        mean_sharpe=float(sharpes.mean()),
        median_sharpe=float(np.median(sharpes)),
        worst_sharpe=float(sharpes.min()),
        positive_windows=int((sharpes > 0).sum()),
        beat_equal_weight=sum(
            1 for w, e in zip(windows, ew, strict=True) if e and w.metrics.sharpe > e.sharpe
        ),
        pooled_sharpe=sharpe(pooled),
        pooled_max_drawdown=max_drawdown(pooled),
    )


def _rescheme(
    scored: WalkForwardWindow, scheme: Scheme, data: MarketData, train: slice
) -> WalkForwardWindow:
    """A window already scored, under another scheme's name and training span."""
    start, end = data.window_dates(train)
    return scored.model_copy(
        update={
            "scheme": scheme,
            "train_start": start,
            "train_end": end,
            "train_days": train.stop - train.start,
        }
    )


def walk_forward(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    budget: TrialBudget | None = None,
    seed: int = 0,
    *,
    n_windows: int = DEFAULT_WINDOWS,
    schemes: Sequence[Scheme] = SCHEMES,
    train_days: int | None = None,
    start: int | None = None,
    policy_dir: str | Path | None = None,
) -> WalkForward:
    """Evaluates ``config`` window by window (see the module docstring).

    Args:
        mode, config, data, budget, seed: as for :class:`~alphaloop.trials.ConfigSubject`.
        n_windows: evaluation windows per scheme.
        schemes: ``anchored``, ``rolling`` or both.
        train_days: the rolling scheme's training length (see :func:`walk_forward_splits`).
        start: the first row windows may score (see :func:`walk_forward_splits`).
        policy_dir: where PPO policies trained per window are saved (not kept when None).

    Raises:
        ValueError: bad windows or scheme. TrialCrashed / TrialTimeout: as a trial.
    """
    budget = budget or TrialBudget()
    windows: list[WalkForwardWindow] = []
    summaries = []
    # cufolio_only decides from its trailing scenario window alone, whatever TRAIN holds: a
    # window it already scored is the same result under another scheme.
    scored: dict[tuple[int, int], WalkForwardWindow] = {}
    for scheme in schemes:
        splits = walk_forward_splits(data, n_windows, scheme, train_days, start)
        done = []
        for i, split in enumerate(splits):
            key = (split[1].start, split[1].stop)
            if mode == "cufolio_only" and key in scored:
                w = _rescheme(scored[key], scheme, data, split[0])
            else:
                w = _window(
                    mode,
                    config,
                    data,
                    budget,
                    seed,
                    scheme,
                    i,
                    split,
                    Path(policy_dir) if policy_dir else None,
                )
                scored[key] = w
            logger.debug("walk-forward %s window %d: Sharpe %.3f", scheme, i, w.metrics.sharpe)
            done.append(w)
        windows.extend(done)
        summaries.append(_summary(scheme, done))
    return WalkForward(
        mode=mode,
        eval_cost_bps=budget.eval_cost_bps,
        windows=tuple(windows),
        summaries=tuple(summaries),
    )


def span_reruns(
    mode: Mode,
    config: TrialConfig,
    data: MarketData,
    span: slice,
    budget: TrialBudget,
    seed: int,
    policy_path: str | Path | None = None,
) -> dict[str, Callable[[float], Backtest]]:
    """The config and equal weight (rebalanced monthly, as the baseline) over ``span``, each as a
    function of the cost in bps: the decisions are made once, at the evaluation cost, and only
    the charge changes (what :func:`alphaloop.validation.stress_test` re-runs). A PPO mode
    without ``policy_path`` trains on every day before ``span``."""
    split = split_for(data, Rows.of(span, slice(0, span.start) if span.start else None))
    targets, rebalance, _ = strategy_targets(
        mode, config, split.data, split.window, budget, seed, policy_path=policy_path
    )
    rets = data.returns[span]
    n_days, n = rets.shape
    monthly = np.zeros(n_days, dtype=bool)
    monthly[::BASELINE_HOLD_DAYS] = True
    equal = np.full((n_days, n), 1.0 / n)
    return {
        "strategy": lambda bps: simulate(rets, targets, rebalance, bps),
        "equal_weight": lambda bps: simulate(rets, equal, monthly, bps),
    }
