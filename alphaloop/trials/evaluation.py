"""The frozen evaluator's one entry point: :func:`evaluate` a subject on a window.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. A subject is a
config (:class:`ConfigSubject`: PPO modes train on the split's TRAIN rows for the budget) or a
published policy (:class:`PolicySubject`: the config with the saved PPO it decides with; nothing
trains). Search trials, final test evaluations, walk-forward windows, replays and the portfolio
manager's reference book all come through here, so one set of rules scores them all and each
result names the evaluator version that produced it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from alphaloop.exceptions import TrialCrashed
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import MarketData
from alphaloop.metrics import compute_metrics, objective_value
from alphaloop.trials.backtest import simulate
from alphaloop.trials.models import TrialBudget, TrialResult
from alphaloop.trials.reference import baselines
from alphaloop.trials.strategies import check_mode, strategy_targets
from alphaloop.trials.windows import EvalWindow, Split, split_for
from alphaloop.vocabulary import DEFAULT_METRIC, METRICS, Mode

__all__ = ["ConfigSubject", "PolicySubject", "Subject", "evaluate"]

logger = logging.getLogger(__name__)


class _Subject(BaseModel):
    """What every subject names: the mode, its knobs, the session's budget, the seed and the
    objective's metric."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    config: TrialConfig = Field(default_factory=TrialConfig)
    budget: TrialBudget = Field(default_factory=TrialBudget)
    seed: int = 0
    metric: str = DEFAULT_METRIC

    @field_validator("mode", mode="before")
    @classmethod
    def _known_mode(cls, mode: Any) -> Any:
        check_mode(mode)  # the message lists the modes, as run_trial's always did
        return mode

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, metric: str) -> str:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        return metric


class ConfigSubject(_Subject):
    """A config to evaluate; a PPO mode trains on the split's TRAIN rows first."""


class PolicySubject(_Subject):
    """A published policy: a PPO mode decides with the saved ``policy_path`` (nothing trains);
    a ``cufolio_only`` policy is its config alone, re-solved with its seed."""

    policy_path: str | None = None

    @model_validator(mode="after")
    def _file_matches_mode(self) -> PolicySubject:
        if self.mode != "cufolio_only" and self.policy_path is None:
            raise ValueError(f"a {self.mode} policy needs its saved policy_path")
        if self.mode == "cufolio_only" and self.policy_path is not None:
            raise ValueError("a cufolio_only policy re-solves its config; it has no policy file")
        return self


Subject = ConfigSubject | PolicySubject


def evaluate(
    subject: Subject,
    window: EvalWindow,
    data: MarketData,
    *,
    policy_dir: str | Path | None = None,
    on_update: Callable[[int, float], None] | None = None,
) -> TrialResult:
    """Scores ``subject`` on ``window`` of ``data`` next to the baselines, at the evaluation cost.

    Args:
        subject: a config (trains for PPO modes) or a published policy (never trains).
        window: ``"validation"``, ``"test"``, or explicit :class:`~alphaloop.trials.Rows` /
            :class:`~alphaloop.trials.Dates` of ``data`` (see :func:`split_for`).
        data: the market data and its split.
        policy_dir: where a freshly trained policy is saved (a config in a PPO mode).
        on_update: called with (timestep, mean episode reward) after each PPO rollout.

    Raises:
        TrialCrashed: no weights or non-finite returns (diverged policy, solver failure).
        TrialTimeout: ``budget.time_limit_s`` ran out.
        ValueError: an unknown window name. InvalidRequest: an explicit window the data
            cannot serve.
    """
    split = split_for(data, window)
    budget = subject.budget
    started = time.monotonic()
    deadline = started + budget.time_limit_s if budget.time_limit_s else None
    targets, rebalance, extra = strategy_targets(
        subject.mode,
        subject.config,
        split.data,
        split.window,
        budget,
        subject.seed,
        policy_path=subject.policy_path if isinstance(subject, PolicySubject) else None,
        policy_dir=policy_dir if isinstance(subject, ConfigSubject) else None,
        on_update=on_update,
        deadline=deadline,
    )
    result = _score(subject, split, (targets, rebalance), started, extra)
    logger.debug(
        "%s on %s %s..%s (seed %d, config %s): %s %.4f in %.1f s",
        subject.mode,
        split.label,
        result.start_date,
        result.end_date,
        subject.seed,
        result.config_hash[:12],
        subject.metric,
        result.objective,
        result.elapsed_s,
    )
    return result


def _score(
    subject: Subject,
    split: Split,
    decisions: tuple[np.ndarray, np.ndarray],
    started: float,
    extra: dict[str, Any],
) -> TrialResult:
    """Backtests the target weights and rebalance days of ``decisions`` on the split's window at
    the evaluation cost and scores the book next to the baselines; ``extra`` is what PPO
    training produced."""
    targets, rebalance = decisions
    budget, data = subject.budget, split.data
    book = simulate(data.returns[split.rows], targets, rebalance, budget.eval_cost_bps)
    if not np.all(np.isfinite(book.net)):
        raise TrialCrashed("the backtest produced non-finite returns")
    metrics = compute_metrics(book.net, book.turnover)
    start_date, end_date = data.window_dates(split.rows)
    return TrialResult(
        mode=subject.mode,
        window=split.label,
        metric=subject.metric,
        objective=objective_value(metrics, subject.metric),
        metrics=metrics,
        baselines=baselines(data, split.window, budget),
        daily_returns=[float(x) for x in book.net],
        final_weights=[float(x) for x in book.final],
        elapsed_s=time.monotonic() - started,
        seed=subject.seed,
        config_hash=config_hash(subject.config),
        data_fingerprint=data.fingerprint,
        start_date=start_date,
        end_date=end_date,
        **extra,
    )
