"""The backtest every strategy and baseline is scored with, and the evaluation windows.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. Accounting: at
the open of a rebalance day the book trades from its drifted weights to the target weights,
paying ``eval_cost_bps`` per unit of one-way turnover; between rebalances weights drift with
prices.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from alphaloop.exceptions import TrialTimeout
from alphaloop.market import MarketData
from alphaloop.trials.models import Window


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


def window_slice(data: MarketData, window: Window) -> slice:
    """The rows of ``data.returns`` an evaluation on ``window`` scores."""
    if window == "validation":
        return data.val
    if window == "test":
        return data.test
    raise ValueError(f"unknown window {window!r}; use 'validation' or 'test'")


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise TrialTimeout("trial ran past its time limit")
