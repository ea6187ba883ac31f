"""f_S, the selector stage: which assets the allocator may hold on a day."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from alphaloop.pipeline.state import Day

__all__ = ["LiquidityVolMomentumFilter", "StaticUniverse"]


@dataclass(frozen=True)
class StaticUniverse:
    """Every asset of the data, every day (what the evaluator's strategies trade)."""

    name: str = "select"

    def select(self, day: Day) -> np.ndarray:
        return np.ones(day.history.shape[1], dtype=bool)


@dataclass(frozen=True)
class LiquidityVolMomentumFilter:
    """Keeps assets that traded, were calm enough and went up over a trailing window.

    On the last ``window`` days: ``active`` is the share of days with a non-zero return (prices
    carry no volume, so a price that did not move is the liquidity signal we have: a stale,
    forward-filled or halted line), ``vol`` the daily standard deviation, ``momentum`` the
    compounded return. An asset passes when ``active >= min_active``, ``vol <= max_vol`` and
    ``momentum >= min_momentum``. When fewer than ``min_assets`` pass, the ``min_assets``
    assets with the highest momentum among the active ones are kept instead (an allocator
    needs something to allocate; an empty book is the timing stage's call, not this one's).
    """

    window: int = 63
    min_active: float = 0.9
    max_vol: float = 0.05
    min_momentum: float = -1.0
    min_assets: int = 2
    name: str = "select"

    def select(self, day: Day) -> np.ndarray:
        n = day.history.shape[1]
        past = day.history[-self.window :]
        if past.shape[0] < 2:
            return np.ones(n, dtype=bool)
        active = (past != 0.0).mean(axis=0)
        vol = past.std(axis=0, ddof=1)
        momentum = np.prod(1.0 + past, axis=0) - 1.0
        keep = (active >= self.min_active) & (vol <= self.max_vol) & (momentum >= self.min_momentum)
        if keep.sum() >= min(self.min_assets, n):
            return keep
        ranked = np.where(active >= self.min_active, momentum, -np.inf)
        best = np.argsort(-ranked, kind="stable")[: min(self.min_assets, n)]
        keep = np.zeros(n, dtype=bool)
        keep[best] = True
        return keep
