"""The weight-centric pipeline: f_S select -> f_A allocate -> f_T time -> f_R risk overlay.

:class:`WeightCentricPipeline` composes the four stages. Its one method, :meth:`run`, decides
one day from the returns observed before it and yesterday's :class:`PipelineState`, and returns
the target weights, each stage's output and the next state. A backtest calls it once per day
of its window (:func:`run_sequence`); the portfolio manager calls it once per tick with the
state it journaled the day before. Same inputs, same weights: the evaluator's strategies are
built from these pipelines (:func:`pipeline_for`), so what is scored is what is traded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from alphaloop.knobs import TrialConfig, effective_max_weight
from alphaloop.pipeline.allocate import MeanCvarAllocator, PpoAllocator
from alphaloop.pipeline.overlay import CvarBudgetOverlay
from alphaloop.pipeline.select import StaticUniverse
from alphaloop.pipeline.state import Day, PipelineState
from alphaloop.pipeline.timing import ConstantTiming

__all__ = [
    "PipelineMode",
    "PipelineRun",
    "WeightCentricPipeline",
    "pipeline_for",
    "run_sequence",
]

PipelineMode = Literal["cufolio_only", "ppo_only", "unified"]


class Selector(Protocol):
    name: str

    def select(self, day: Day) -> np.ndarray: ...


class Allocator(Protocol):
    name: str

    def allocate(self, day: Day, selected: np.ndarray, state: Any) -> tuple[np.ndarray, Any]: ...


class Timing(Protocol):
    name: str

    def time(self, day: Day, weights: np.ndarray, state: Any) -> tuple[np.ndarray, Any]: ...


class Overlay(Protocol):
    name: str

    def apply(self, day: Day, weights: np.ndarray, state: Any) -> tuple[np.ndarray, Any, bool]: ...


@dataclass(frozen=True)
class PipelineRun:
    """One day decided by :meth:`WeightCentricPipeline.run`.

    Attributes:
        weights: (N,) target weights; ``1 - weights.sum()`` is cash.
        rebalance: whether the day trades to ``weights`` (otherwise the book holds and drifts).
        stages: each stage's output by stage name (empty on a day that holds): the selection
            mask, then weights after the allocator, the timing and every overlay.
        truncated: an overlay had to cut the weights it was given.
        cut_by: names of the overlays that cut.
        state: the state to decide the next day with.
    """

    weights: np.ndarray
    rebalance: bool
    stages: dict[str, np.ndarray]
    truncated: bool
    state: PipelineState
    cut_by: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class WeightCentricPipeline:
    """Four stages and a rebalance schedule: the stages run every ``every`` steps; the days in
    between hold the last target."""

    selector: Selector
    allocator: Allocator
    timing: Timing
    overlays: Sequence[Overlay] = ()
    every: int = 1

    def run(self, history: np.ndarray, state: PipelineState | None = None) -> PipelineRun:
        """Decides the day after the last row of ``history`` (prices up to the day before).

        Args:
            history: (t, N) simple daily returns observed before the decided day.
            state: what the previous day handed on; None starts a sequence.
        """
        state = state or PipelineState()
        if state.step % self.every and state.target is not None:
            weights = np.asarray(state.target)
            return PipelineRun(weights, False, {}, False, state.advance())
        day = Day(history, state.step)
        stages_state = dict(state.stages)
        selected = self.selector.select(day)
        stages: dict[str, np.ndarray] = {self.selector.name: selected}
        weights, stages_state[self.allocator.name] = self.allocator.allocate(
            day, selected, stages_state.get(self.allocator.name)
        )
        stages[self.allocator.name] = weights
        weights, stages_state[self.timing.name] = self.timing.time(
            day, weights, stages_state.get(self.timing.name)
        )
        stages[self.timing.name] = weights
        cut_by = []
        for overlay in self.overlays:
            weights, stages_state[overlay.name], cut = overlay.apply(
                day, weights, stages_state.get(overlay.name)
            )
            stages[overlay.name] = weights
            if cut:
                cut_by.append(overlay.name)
        target = tuple(float(x) for x in weights)
        next_state = state.advance(target=target, stages=stages_state)
        return PipelineRun(weights, True, stages, bool(cut_by), next_state, tuple(cut_by))


def run_sequence(
    pipeline: WeightCentricPipeline,
    returns: np.ndarray,
    start: int,
    stop: int,
    state: PipelineState | None = None,
    on_rebalance: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, PipelineState]:
    """Runs ``pipeline`` over rows ``start .. stop-1`` of ``returns``, each day seeing only the
    rows before it: the (T, N) targets, the (T,) rebalance days and the state after the last
    day. ``on_rebalance(step)`` is called before each rebalance (deadline checks)."""
    n_days = stop - start
    targets = np.empty((n_days, returns.shape[1]))
    rebalance = np.zeros(n_days, dtype=bool)
    state = state or PipelineState()
    for day in range(n_days):
        if on_rebalance is not None and state.step % pipeline.every == 0:
            on_rebalance(state.step)
        decided = pipeline.run(returns[: start + day], state)
        targets[day] = decided.weights
        rebalance[day] = decided.rebalance
        state = decided.state
    return targets, rebalance, state


def pipeline_for(
    mode: PipelineMode,
    config: TrialConfig,
    n_assets: int,
    *,
    seed: int,
    scenario_window: int,
    cost_bps: float,
    model: Any = None,
) -> WeightCentricPipeline:
    """The pipeline of a trial mode, exactly as the evaluator scores it.

    * ``cufolio_only``: every asset, the Mean-CVaR solve every ``cufolio_hold_days`` (turnover
      penalty at the evaluation cost), fully invested, no overlay (the solve has the cap).
    * ``ppo_only``: every asset, the PPO policy every ``rebal_freq`` days, no overlay.
    * ``unified``: the PPO policy under the CVaR budget overlay (scenarios re-drawn every
      ``cufolio_hold_days``).

    ``model`` is the trained PPO (or its policy) for the PPO modes.
    """
    cap = effective_max_weight(config, n_assets)
    if mode == "cufolio_only":
        allocator = MeanCvarAllocator(
            alpha=config.cvar_alpha,
            max_weight=cap,
            n_scenarios=config.n_scenarios,
            hold_days=config.cufolio_hold_days,
            scenario_window=scenario_window,
            cost_bps=cost_bps,
            risk_aversion=1.0,
            seed=seed,
        )
        return WeightCentricPipeline(
            StaticUniverse(), allocator, ConstantTiming(), (), config.cufolio_hold_days
        )
    if model is None:
        raise ValueError(f"mode {mode!r} needs a trained PPO model")
    ppo = PpoAllocator(model, config.lookback, config.rebal_freq)
    overlays: tuple[Overlay, ...] = ()
    if mode == "unified":
        overlays = (
            CvarBudgetOverlay(
                alpha=config.cvar_alpha,
                cap=cap,
                n_scenarios=config.n_scenarios,
                hold_days=config.cufolio_hold_days,
                scenario_window=scenario_window,
                seed=seed,
            ),
        )
    elif mode != "ppo_only":
        raise ValueError(f"unknown mode {mode!r}; use cufolio_only, ppo_only or unified")
    return WeightCentricPipeline(
        StaticUniverse(), ppo, ConstantTiming(), overlays, config.rebal_freq
    )
