"""A seeded synthetic price generator, for tests and for trying things without a data file."""

from __future__ import annotations

import numpy as np
import pandas as pd


def synthetic_prices(
    n_days: int = 1500, n_assets: int = 6, seed: int = 0, start: str = "2010-01-04"
) -> pd.DataFrame:
    """Seeded regime-switching prices with fat tails, for fast tests.

    A two-state Markov chain (calm / stress, sticky) sets per-asset drift and volatility; shocks
    are Student-t (4 degrees of freedom) with a common market factor, so assets are correlated
    and tails are heavier than normal.
    """
    if n_days < 2 or n_assets < 1:
        raise ValueError("synthetic_prices needs n_days >= 2 and n_assets >= 1")
    rng = np.random.default_rng(seed)
    stay = np.array([0.985, 0.95])
    regime = np.empty(n_days, dtype=int)
    regime[0] = 0
    flips = rng.random(n_days)
    for t in range(1, n_days):
        prev = regime[t - 1]
        regime[t] = prev if flips[t] < stay[prev] else 1 - prev
    drift = np.stack([rng.uniform(0.0002, 0.0009, n_assets), rng.uniform(-0.0015, 0.0, n_assets)])
    vol = np.stack([rng.uniform(0.007, 0.015, n_assets), rng.uniform(0.02, 0.035, n_assets)])
    df = 4.0
    scale = np.sqrt((df - 2.0) / df)  # unit-variance t shocks
    market = rng.standard_t(df, size=(n_days, 1)) * scale
    idio = rng.standard_t(df, size=(n_days, n_assets)) * scale
    beta = rng.uniform(0.3, 0.8, n_assets)
    shocks = beta * market + np.sqrt(1.0 - beta**2) * idio
    rets = drift[regime] + vol[regime] * shocks
    rets = np.clip(rets, -0.5, 0.5)
    prices = 100.0 * np.cumprod(1.0 + rets, axis=0)
    index = pd.bdate_range(start=start, periods=n_days, name="date")
    return pd.DataFrame(prices, index=index, columns=[f"A{i:02d}" for i in range(n_assets)])
