"""f_T, the timing stage: how much of the book is invested on a day; cash takes the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from alphaloop.pipeline.state import Day

__all__ = ["ConstantTiming", "TurbulenceTiming", "turbulence"]


@dataclass(frozen=True)
class ConstantTiming:
    """Invests ``scale`` of the book every day (1: fully invested, weights unchanged)."""

    scale: float = 1.0
    name: str = "timing"

    def time(self, day: Day, weights: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
        if self.scale == 1.0:
            return weights, None
        return weights * self.scale, None


def turbulence(history: np.ndarray, window: int) -> float:
    """Mahalanobis turbulence of the last row of ``history`` against the ``window`` rows before
    it: ``(r - mu)' pinv(Sigma) (r - mu)`` with the trailing mean and sample covariance (the
    pseudo-inverse keeps a singular covariance, e.g. two identical assets, usable)."""
    if history.shape[0] < window + 1:
        raise ValueError(f"turbulence needs {window + 1} days of returns, got {history.shape[0]}")
    today = history[-1]
    past = history[-window - 1 : -1]
    diff = today - past.mean(axis=0)
    cov = np.cov(past, rowvar=False)
    return float(diff @ np.linalg.pinv(cov) @ diff)


@dataclass(frozen=True)
class TurbulenceTiming:
    """Cuts exposure to ``scale`` for ``cooldown`` days once the turbulence of the latest
    observed day exceeds ``threshold`` (a market far from its recent mean and correlations is
    the regime where allocators trained on calm data fail). State: the row the cut lasts to.

    With N assets and normal returns the turbulence is about chi-squared with N degrees of
    freedom, so a threshold near the 99th percentile of chi2(N) trips on roughly 1 day in 100.
    """

    threshold: float
    window: int = 252
    scale: float = 0.0
    cooldown: int = 5
    name: str = "timing"

    def time(
        self, day: Day, weights: np.ndarray, state: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        until = state["until"] if state else -1
        t = day.t
        if t > self.window and turbulence(day.history, self.window) > self.threshold:
            until = t + self.cooldown
        if t < until:
            return weights * self.scale, {"until": until}
        return weights, {"until": until}
