"""Return scenarios for the CVaR solvers, built from a trailing window of daily returns."""

from __future__ import annotations

import numpy as np


def bootstrap_scenarios(
    daily_returns: np.ndarray,
    horizon: int,
    n_scenarios: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Horizon returns by a historical block bootstrap of a trailing window.

    Method: each scenario picks a start day uniformly among the ``T - horizon + 1`` days that
    leave room for a full block (no wrapping past the end of the window), takes the
    ``horizon`` consecutive daily return rows from there and compounds them per asset,
    ``prod(1 + r) - 1``. Sampling whole rows keeps the cross-asset correlation of each day;
    sampling consecutive days keeps short-range autocorrelation (momentum, volatility
    clustering) up to the horizon, which an iid day bootstrap destroys. The price is that a
    window of ``T`` days yields at most ``T - horizon + 1`` distinct scenarios, so many of the
    ``n_scenarios`` draws repeat (the solvers merge repeats exactly).

    When the window is too short for a block (``T <= horizon``) it falls back to an iid day
    bootstrap: each of the ``horizon`` days of a scenario is a uniformly drawn row (with
    replacement), which still keeps cross-asset correlation but not autocorrelation.

    Args:
        daily_returns: (T, N) simple daily returns, oldest first; finite and > -1.
        horizon: holding period in days, >= 1.
        n_scenarios: number of scenarios to draw, >= 1.
        rng: the random generator (pass a seeded ``np.random.default_rng`` for reproducibility).

    Returns:
        (n_scenarios, N) array of ``horizon``-day compounded simple returns.

    Raises:
        ValueError: bad shape, NaN/inf or returns <= -1, non-positive horizon or count.
    """
    r = _daily_returns(daily_returns)
    horizon = _positive_int("horizon", horizon)
    n_scenarios = _positive_int("n_scenarios", n_scenarios)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")

    n_days = r.shape[0]
    if n_days <= horizon:  # iid days: no block fits
        days = rng.integers(0, n_days, size=(n_scenarios, horizon))
        return r[days[:, 0]] if horizon == 1 else _compound(r, days)
    starts = rng.integers(0, n_days - horizon + 1, size=n_scenarios)
    if horizon == 1:  # (1 + r) - 1 can differ from r in the last bit; one day needs no compounding
        return r[starts]
    if n_days - horizon + 1 <= n_scenarios:
        # Fewer blocks than draws: each block is compounded once, by the very products a draw
        # of it would compute, and the draws take their copies (an order of magnitude less work
        # at the default 5,000 draws from two years, the same numbers bit for bit).
        first = np.arange(n_days - horizon + 1)
        return _compound(r, first[:, None] + np.arange(horizon))[starts]
    return _compound(r, starts[:, None] + np.arange(horizon))


def _compound(r: np.ndarray, days: np.ndarray) -> np.ndarray:
    """``prod(1 + r[day]) - 1`` over each row of ``days`` (a scenario's days, in order).

    Compounding day by day (a loop over the horizon, vectorised over scenarios) keeps memory at
    one (n_scenarios, N) array and gives exactly the naive product, unlike exp(sum(log1p))."""
    growth = 1.0 + r[days[:, 0]]
    for j in range(1, days.shape[1]):
        growth *= 1.0 + r[days[:, j]]
    return growth - 1.0


def _daily_returns(daily_returns: np.ndarray) -> np.ndarray:
    """``daily_returns`` as float64, checked to be a usable (T, N) window of simple returns."""
    r = np.asarray(daily_returns, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
        raise ValueError(
            f"daily_returns must be a non-empty 2-D array (T days, N assets), got shape {r.shape}"
        )
    if not np.isfinite(r).all():
        raise ValueError(
            f"daily_returns contain {int((~np.isfinite(r)).sum())} NaN or infinite values"
        )
    if (r <= -1.0).any():
        raise ValueError("daily_returns must be simple returns > -1 (a price cannot reach 0)")
    return r


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
