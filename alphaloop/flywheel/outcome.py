"""The T+5 outcome of a portfolio decision: what its weights earned over the next five trading
days, net of the harness cost, against the alternative a person's verdict names.

Conventions (the same as the backtest's, so a decision is judged as the evaluator would):

* A decision dated ``D`` was made from prices up to ``D - 1``; its weights earn the returns of
  days ``D, D+1, ..., D+4`` (the first five trading days on or after ``D``). Its T+5 outcome
  exists once the price table has the close of ``D+4``.
* Buy and hold: the weights are set once at the close of ``D - 1`` and then drift with prices,
  with no rebalancing inside the five days. A weight ``w_i`` earns ``w_i * (P_i[D+4] / P_i[D-1]
  - 1)``; what the weights leave uninvested (``1 - sum w``) is cash earning nothing. Rebalancing
  daily back to the weights would charge costs the decision never incurs and credit a
  rebalancing return nobody earned.
* Cost: ``eval_cost_bps`` per unit of one-way turnover ``sum |w - w_pre|`` to reach the weights
  from the pre-decision weights, charged once at the start. Keeping the pre-decision weights
  costs nothing, and neither does a decision that sent no orders (a hold day).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
from pydantic import BaseModel, ConfigDict

HORIZON = 5  # trading days a decision is judged over

Weights = Mapping[str, float]


class Outcome(BaseModel):
    """Both sides' net T+5 returns and the window they were measured on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: str  # the last close before the decision (D - 1)
    end: str  # the close of D + 4
    proposed: float
    alternative: float

    @property
    def gap(self) -> float:
        return abs(self.proposed - self.alternative)


def turnover(weights: Weights, pre: Weights) -> float:
    """One-way turnover ``sum |w - w_pre|`` over the union of symbols (cash is implied)."""
    names = set(weights) | set(pre)
    return float(sum(abs(weights.get(s, 0.0) - pre.get(s, 0.0)) for s in names))


def _hold_return(weights: Weights, growth: Mapping[str, float]) -> float:
    """Buy-and-hold return of ``weights`` when each symbol's price grew by ``growth[s]`` (a
    ratio, end over start); uninvested weight is cash earning nothing."""
    return float(sum(w * (growth[s] - 1.0) for s, w in weights.items() if w))


def _net_return(
    weights: Weights, pre: Weights, growth: Mapping[str, float], cost_bps: float
) -> float:
    """:func:`_hold_return` less the cost of trading from ``pre`` to ``weights``."""
    return _hold_return(weights, growth) - cost_bps / 1e4 * turnover(weights, pre)


def t5_window(dates: pd.DatetimeIndex, decision_date: str) -> tuple[int, int] | None:
    """Row indices ``(D - 1, D + 4)`` of a decision in a sorted price index, or None when the
    table does not reach five trading days past it (or has no close before it)."""
    start = int(dates.searchsorted(pd.Timestamp(decision_date), side="left"))
    end = start + HORIZON - 1
    if start < 1 or end >= len(dates):
        return None
    return start - 1, end


def t5_outcome(
    prices: pd.DataFrame,
    decision_date: str,
    proposed: Weights,
    alternative: Weights,
    pre: Weights,
    cost_bps: float,
    *,
    held: bool = False,
) -> Outcome | None:
    """The T+5 outcome of ``proposed`` against ``alternative`` (both traded to from ``pre``),
    or None when the prices do not reach five trading days past the decision yet. ``held``: the
    decision sent no orders (a hold day), so its side is charged no turnover.

    Raises:
        ValueError: a weighted symbol has no prices, or a price in the window is not finite.
    """
    window = t5_window(pd.DatetimeIndex(prices.index), decision_date)
    if window is None:
        return None
    i0, i1 = window
    names = {s for w in (proposed, alternative) for s, x in w.items() if x}
    missing = sorted(names - set(prices.columns))
    if missing:
        raise ValueError(f"no prices for {', '.join(missing)} in the price data")
    growth = {}
    for s in names:
        p0, p1 = float(prices[s].iloc[i0]), float(prices[s].iloc[i1])
        if not (math.isfinite(p0) and math.isfinite(p1) and p0 > 0):
            raise ValueError(f"{s} has no usable price between rows {i0} and {i1}")
        growth[s] = p1 / p0
    return Outcome(
        start=prices.index[i0].date().isoformat(),
        end=prices.index[i1].date().isoformat(),
        proposed=_net_return(proposed, pre, growth, 0.0 if held else cost_bps),
        alternative=_net_return(alternative, pre, growth, cost_bps),
    )
