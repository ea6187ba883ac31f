"""f_R, the risk overlay stage: caps that cut the allocator's weights when they must.

Each overlay returns the weights it lets through and whether it had to cut them (a
truncation, which the pipeline reports). Overlays stack in the order given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from alphaloop.pipeline.state import Day, generator, generator_state
from alphaloop.portfolio_opt import TARGET_FEASIBLE, bootstrap_scenarios, risk_overlay

__all__ = ["CvarBudgetOverlay", "GrossExposure", "PositionCap"]

# A weight this far over a cap is a cut, not float round-off.
_CUT_TOL = 1e-12


@dataclass(frozen=True)
class PositionCap:
    """No asset above ``cap`` of the book; what is cut goes to cash (not to other assets,
    which would raise their weights past what the allocator chose)."""

    cap: float
    name: str = "position_cap"

    def apply(self, day: Day, weights: np.ndarray, state: Any) -> tuple[np.ndarray, Any, bool]:
        if (weights <= self.cap + _CUT_TOL).all():
            return weights, None, False
        return np.minimum(weights, self.cap), None, True


@dataclass(frozen=True)
class GrossExposure:
    """Invested weights sum to at most ``limit``; a larger book is scaled down to it."""

    limit: float = 1.0
    name: str = "gross_exposure"

    def apply(self, day: Day, weights: np.ndarray, state: Any) -> tuple[np.ndarray, Any, bool]:
        gross = float(np.abs(weights).sum())
        if gross <= self.limit + _CUT_TOL:
            return weights, None, False
        return weights * (self.limit / gross), None, True


@dataclass(frozen=True)
class CvarBudgetOverlay:
    """The ``unified`` mode's risk stage: moves the weights, as little as possible in L1, to the
    position cap and a CVaR budget (the equal-weight CVaR) on block-bootstrapped scenarios,
    drawn every ``hold_days`` steps and reused for the rebalances in between.

    A book partly in cash (a timing cut) has its invested part overlaid and scaled back.
    State: the generator before and after the latest draw and the row and step it was drawn
    on; the scenarios themselves are a cache, rebuilt from that state when missing.
    """

    alpha: float
    cap: float
    n_scenarios: int
    hold_days: int
    scenario_window: int
    seed: int
    name: str = "cvar_budget"

    def _draw(self, history: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
        past = history[max(0, t - self.scenario_window) : t]
        return bootstrap_scenarios(past, self.hold_days, self.n_scenarios, rng)

    def apply(
        self, day: Day, weights: np.ndarray, state: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, Any], bool]:
        if state is None or day.step - state["step"] >= self.hold_days:
            rng = generator(state["rng"] if state else None, self.seed)
            before = generator_state(rng)
            scenarios = self._draw(day.history, day.t, rng)
            state = {"rng_before": before, "rng": generator_state(rng), "t": day.t}
            state |= {"step": day.step, "_scenarios": scenarios}
        elif "_scenarios" not in state:
            rng = generator(state["rng_before"], self.seed)
            state = {**state, "_scenarios": self._draw(day.history, state["t"], rng)}
        invested = float(weights.sum())
        partial = abs(invested - 1.0) > 1e-9 and invested > 0
        target = weights / invested if partial else weights
        sol = risk_overlay(target, state["_scenarios"], self.alpha, self.cap)
        out = np.asarray(sol.weights, dtype=float)
        return (out * invested if partial else out), state, sol.status != TARGET_FEASIBLE
