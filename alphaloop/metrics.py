"""Performance metrics of a daily return series (the probabilistic and deflated Sharpe ratios, which
judge a selection, are validation's: :mod:`alphaloop.validation.sharpe`).

Conventions: inputs are *simple* daily returns; annualisation uses 252 trading days; risk figures
(max drawdown, CVaR) are positive numbers meaning "how much was / can be lost".
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from alphaloop.vocabulary import METRICS

TRADING_DAYS = 252
# One basis point: below any drawdown a daily-rebalanced book really suffers, far above float
# noise. See :func:`calmar`.
CALMAR_MIN_DRAWDOWN = 1e-4
# The same basis point as the floor of a daily downside deviation. See :func:`sortino`.
SORTINO_MIN_DOWNSIDE = 1e-4


def as_returns(returns: np.ndarray | list[float]) -> np.ndarray:
    """``returns`` as a flat float array, refused when empty or not finite."""
    r = np.asarray(returns, dtype=float).ravel()
    if r.size == 0:
        raise ValueError("need at least one return to compute a metric, got an empty series")
    if not np.all(np.isfinite(r)):
        raise ValueError("returns contain NaN or inf")
    return r


def sharpe(returns: np.ndarray | list[float], periods: int = TRADING_DAYS) -> float:
    """Annualised Sharpe ratio (zero risk-free rate); 0 for a series with no variation."""
    r = as_returns(returns)
    sd = r.std(ddof=1) if r.size > 1 else 0.0
    return float(r.mean() / sd * math.sqrt(periods)) if sd > 1e-15 else 0.0


def sortino(returns: np.ndarray | list[float], periods: int = TRADING_DAYS) -> float:
    """Annualised Sortino ratio: mean over the downside deviation sqrt(mean(min(r, 0)^2)), the
    deviation floored at :data:`SORTINO_MIN_DOWNSIDE`.

    A series with no losing day has no downside to divide by. Answering 0 there ranked a
    strategy that never lost below worse ones under ``--metric sortino``; :func:`calmar` met the
    same case and this follows its convention: the risk is floored at one basis point, so the
    ratio stays finite (JSON), continuous as the downside vanishes, orders such strategies by
    their mean, and leaves every downside deviation above the floor untouched. A book that
    earns nothing scores 0 whatever the floor.
    """
    r = as_returns(returns)
    dd = math.sqrt(float(np.mean(np.minimum(r, 0.0) ** 2)))
    return float(r.mean() / max(dd, SORTINO_MIN_DOWNSIDE) * math.sqrt(periods))


def equity_curve(returns: np.ndarray | list[float]) -> np.ndarray:
    """Wealth path starting at 1.0 (length T + 1)."""
    r = as_returns(returns)
    return np.concatenate([[1.0], np.cumprod(1.0 + r)])


def max_drawdown(returns: np.ndarray | list[float]) -> float:
    """Largest peak-to-trough loss of the equity curve, as a positive fraction."""
    eq = equity_curve(returns)
    peak = np.maximum.accumulate(eq)
    return float(np.max(1.0 - eq / peak))


def cvar(returns: np.ndarray | list[float], alpha: float = 0.95) -> float:
    """Conditional value at risk of the loss ``-returns`` at level ``alpha`` (a positive number
    when the tail loses money).

    The exact CVaR of the empirical distribution: with ``k = (1 - alpha) * n`` tail scenarios
    (not necessarily an integer), the worst ``floor(k)`` losses count fully and the next one with
    weight ``k - floor(k)``; the sum is divided by ``k``. This equals the Rockafellar-Uryasev
    function ``z + mean((loss - z)^+) / (1 - alpha)`` at its minimiser ``z = VaR_alpha``, so it
    agrees with the LP the solvers optimise to solver precision.
    """
    if not 0.0 < alpha < 1.0:  # also rejects NaN
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    losses = -as_returns(returns)
    n = losses.size
    k = (1.0 - alpha) * n
    full = min(math.floor(k), n)
    # Only the worst full+1 losses matter: a partition is O(n) where a sort is O(n log n).
    top = min(full + 1, n)
    worst = -np.partition(-losses, top - 1)[:top]
    worst.sort()
    worst = worst[::-1]
    total = worst[:full].sum()
    if full < n:
        total += (k - full) * worst[full]
    return float(total / k)


def total_return(returns: np.ndarray | list[float]) -> float:
    return float(equity_curve(returns)[-1] - 1.0)


def annual_return(returns: np.ndarray | list[float], periods: int = TRADING_DAYS) -> float:
    """Geometric annualised return."""
    r = as_returns(returns)
    growth = float(np.prod(1.0 + r))
    return growth ** (periods / r.size) - 1.0 if growth > 0 else -1.0


def calmar(returns: np.ndarray | list[float], periods: int = TRADING_DAYS) -> float:
    """Annualised return over max drawdown, the drawdown floored at :data:`CALMAR_MIN_DRAWDOWN`.

    A series that never drew down has nothing to divide by. Answering 0 there ranked the best
    strategy (one that rose every day) below every losing one under ``--metric calmar``;
    ``+inf`` would rank it first but is not JSON (the journal stores metrics as JSON), ties every
    such strategy and breaks differences between objectives. Flooring the drawdown keeps the
    ratio finite and continuous as the drawdown shrinks to nothing, orders no-drawdown strategies
    by their return, and leaves every drawdown above one basis point untouched. For a
    non-negative return the ratio rises with the return and never rises with the drawdown.

    For a negative return the ratio keeps its textbook form, which (as Sharpe does with
    volatility) prefers the larger drawdown among equally losing strategies.
    """
    mdd = max_drawdown(returns)
    return annual_return(returns, periods) / max(mdd, CALMAR_MIN_DRAWDOWN)


def hit_rate(returns: np.ndarray | list[float]) -> float:
    """Fraction of the days that moved with a positive return (quantstats' ``win_rate``): a
    day with no return at all (a holiday row, a book flat in cash) is neither a win nor a
    loss, so it is left out of the denominator; 0 when no day moved. Counting such days as
    losses put a book that wins 52% of its trading days below the 48% gate on data with a
    holiday row in ten."""
    r = as_returns(returns)
    moved = int(np.count_nonzero(r))
    return float(np.count_nonzero(r > 0.0) / moved) if moved else 0.0


def profit_factor(returns: np.ndarray | list[float]) -> float:
    """Sum of gains over the sum of losses (inf-safe: capped at 1e6 when there were no losses)."""
    r = as_returns(returns)
    losses = -r[r < 0].sum()
    gains = r[r > 0].sum()
    return float(gains / losses) if losses > 1e-15 else (1e6 if gains > 0 else 0.0)


def annual_turnover(daily_turnover: np.ndarray | list[float], periods: int = TRADING_DAYS) -> float:
    """Average one-way turnover (sum |w_new - w_old| per day) scaled to a year."""
    t = as_returns(daily_turnover)
    return float(t.mean() * periods)


class Metrics(BaseModel):
    """The metrics every trial reports on its evaluation window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sharpe: float
    sortino: float
    calmar: float
    max_drawdown: float
    cvar_95: float
    volatility: float
    annual_return: float
    total_return: float
    annual_turnover: float
    hit_rate: float
    profit_factor: float
    n_days: int


def compute_metrics(daily_returns: np.ndarray, daily_turnover: np.ndarray) -> Metrics:
    """All :class:`Metrics` of one net daily return series and its daily turnover."""
    r = as_returns(daily_returns)
    return Metrics(
        sharpe=sharpe(r),
        sortino=sortino(r),
        calmar=calmar(r),
        max_drawdown=max_drawdown(r),
        cvar_95=cvar(r, 0.95),
        volatility=float(r.std(ddof=1) * math.sqrt(TRADING_DAYS)) if r.size > 1 else 0.0,
        annual_return=annual_return(r),
        total_return=total_return(r),
        annual_turnover=annual_turnover(daily_turnover),
        hit_rate=hit_rate(r),
        profit_factor=profit_factor(r),
        n_days=int(r.size),
    )


def objective_value(metrics: Metrics, metric: str) -> float:
    """The number a session maximises, read off a trial's metrics (``return`` is the total
    return over the window)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    return metrics.total_return if metric == "return" else getattr(metrics, metric)
