"""Folds: a config scored on several windows of the history before TEST, not on one.

A search over N configs on one window mostly finds that window's noise: the sampling error of a
three-year Sharpe is about 0.6, far above the spread between seeds. So a search trial is scored
on ``k`` folds, walked forward through the history before TEST (López de Prado, *Advances in
Financial Machine Learning*, ch. 7):

- The folds have the length of the VALIDATION window and tile the history backwards from its
  end, so the last fold *is* VALIDATION and ``k = 1`` is the single-window scoring of old. A
  session scores on as many as the history before TEST holds (:func:`max_folds`): on the
  embedded S&P 500 set nine three-year folds, 27 of its 30 years, where three used nine. The
  paired test's standard error falls with the square root of the days compared, and racing
  keeps the extra folds cheap (``meta_agent.folding``). The fold length, VALIDATION's, was
  measured against folds half as long in ``benchmarks/bench_power.py``.
- A fold's PPO trains on the data's TRAIN rows before the fold, ending :data:`PURGE_ROWS`
  days before it (the purge): a training sample's reward reaches a holding period past its day,
  so the days just before a fold would leak its first returns into training. Training never
  uses a row after the fold it is scored on, so no embargo is needed (an embargo guards the
  training rows that *follow* a scored block, which walk-forward folds never have).
- No TEST row is ever inside a fold or its training: TEST stays sealed until finalize.
- PPO modes retrain per fold within the session's step budget: fold ``i`` trains
  :func:`fold_timesteps` steps, and the folds' steps add up to ``total_timesteps`` exactly.

:func:`fold_score` aggregates the folds' objectives into the trial's: their mean less one
standard error of that mean. A config whose score rests on one lucky window has a wide spread and
is ranked below one that earns the same mean in every window; one standard error (a one-sided
84% lower bound) is the usual "one-SE rule" of cross-validation (Hastie, Tibshirani and Friedman,
*Elements of Statistical Learning*, 7.10). The keep rule does not rely on it: it tests the
candidate's daily returns across all folds against the incumbent's, paired day by day.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from alphaloop.exceptions import InvalidRequest
from alphaloop.market import MIN_EVAL_ROWS, MIN_TRAIN_ROWS, MarketData
from alphaloop.metrics import Metrics
from alphaloop.trials.models import TrialBudget, TrialResult
from alphaloop.trials.windows import Rows

__all__ = [
    "PURGE_ROWS",
    "aggregate_folds",
    "build_folds",
    "fold_budget",
    "fold_score",
    "fold_timesteps",
    "max_folds",
]

# Days between a fold's training and its first scored day: the longest holding period a knob
# allows (``cufolio_hold_days`` <= 60 is a re-solve interval, not a label horizon; a month of
# trading days covers the reward horizons of every mode's training).
PURGE_ROWS = 21


def _fold_rows(data: MarketData) -> int:
    return data.val.stop - data.val.start


def max_folds(data: MarketData, purge: int = PURGE_ROWS) -> int:
    """The most folds of VALIDATION's length that fit before TEST with a trainable history
    (``MIN_TRAIN_ROWS``) and the purge before the first; at least 1 (VALIDATION itself)."""
    room = data.val.stop - data.train.start - MIN_TRAIN_ROWS - purge
    return max(1, room // max(_fold_rows(data), MIN_EVAL_ROWS))


def build_folds(data: MarketData, k: int, purge: int = PURGE_ROWS) -> list[Rows]:
    """The ``k`` walk-forward folds of ``data`` (oldest first, the last one VALIDATION), each
    with its purged training rows (see the module docstring).

    Raises:
        InvalidRequest: ``k < 1``, or ``k`` folds do not fit before TEST (the message
            names the largest count that does).
    """
    if k < 1:
        raise InvalidRequest(f"the fold count must be at least 1, got {k}")
    length, end = _fold_rows(data), data.val.stop
    most = max_folds(data, purge)
    if k > most:
        first, last = data.window_dates(slice(data.train.start, end))
        raise InvalidRequest(
            f"{data.source!r} is too short for {k} folds: {end - data.train.start} days before "
            f"TEST ({first}..{last}) hold at most {most} folds of {length} days after "
            f"{MIN_TRAIN_ROWS} days of training history and a {purge}-day purge; ask for "
            f"{most} folds or fewer"
        )
    folds = []
    for i in range(k):
        start = end - (k - i) * length
        folds.append(
            Rows(start=start, stop=start + length, train=(data.train.start, start - purge))
        )
    return folds


def fold_timesteps(total: int, k: int, i: int) -> int:
    """The PPO steps fold ``i`` of ``k`` trains: an even share, the first ``total % k`` folds one
    more, so the folds' steps add up to ``total``."""
    return total // k + (1 if i < total % k else 0)


def fold_budget(budget: TrialBudget, k: int, i: int) -> TrialBudget:
    """The budget of fold ``i`` of ``k``: the session's, with its share of the PPO steps (never
    fewer than one per env copy)."""
    steps = max(fold_timesteps(budget.total_timesteps, k, i), budget.n_envs)
    return budget.model_copy(update={"total_timesteps": steps})


def fold_score(objectives: Sequence[float]) -> float:
    """The folds' mean objective less one standard error of it (the objective itself for one
    fold: window noise is then not measured)."""
    if len(objectives) == 1:
        return float(objectives[0])
    mean = statistics.fmean(objectives)
    return mean - statistics.stdev(objectives) / math.sqrt(len(objectives))


def _metrics(folds: Sequence[Metrics]) -> Metrics:
    """Fold metrics in one: the mean of each, the worst drawdown (a limit holds in every fold),
    the days and the compounded total return of all."""
    fields: dict[str, float | int] = {
        name: float(np.mean([getattr(m, name) for m in folds])) for name in Metrics.model_fields
    }
    fields["max_drawdown"] = max(m.max_drawdown for m in folds)
    fields["n_days"] = sum(m.n_days for m in folds)
    fields["total_return"] = float(np.prod([1.0 + m.total_return for m in folds]) - 1.0)
    return Metrics(**fields)


def aggregate_folds(results: Sequence[TrialResult]) -> TrialResult:
    """One trial's result from its folds' (oldest first): :func:`fold_score` as its objective,
    the mean metrics with the worst drawdown, the folds' daily returns end to end (the folds are
    contiguous, so the last ``len(VALIDATION)`` of them are VALIDATION's), and the last fold's
    baselines, weights, policy and training curve (VALIDATION's, where charts replay a trial;
    it trained on the most recent data). Its ``timesteps`` and ``elapsed_s`` are the folds'
    totals."""
    if not results:
        raise ValueError("no fold results to aggregate")
    last = results[-1]
    if len(results) == 1:
        return last
    steps = [r.timesteps for r in results if r.timesteps is not None]
    return last.model_copy(
        update={
            "objective": fold_score([r.objective for r in results]),
            "metrics": _metrics([r.metrics for r in results]),
            "daily_returns": [x for r in results for x in r.daily_returns],
            "elapsed_s": sum(r.elapsed_s for r in results),
            "start_date": results[0].start_date,
            "timesteps": sum(steps) if steps else None,
        }
    )
