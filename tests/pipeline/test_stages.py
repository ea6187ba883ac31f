"""Each pipeline stage on hand-computed toy cases, turbulence against a direct computation,
and one day decided from journaled state equal to the same day inside a loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.pipeline import (
    ConstantTiming,
    Day,
    EqualWeight,
    GrossExposure,
    LiquidityVolMomentumFilter,
    PipelineState,
    PositionCap,
    StaticUniverse,
    TurbulenceTiming,
    WeightCentricPipeline,
    pipeline_for,
    run_sequence,
    turbulence,
)
from alphaloop.portfolio_opt import start_sequence

RNG = np.random.default_rng(7)
HISTORY = RNG.normal(0.0005, 0.01, size=(300, 4))


def test_equal_weight_on_the_selected_assets() -> None:
    day = Day(HISTORY, 0)
    w, _ = EqualWeight().allocate(day, np.array([True, False, True, True]), None)
    assert w.tolist() == [1 / 3, 0.0, 1 / 3, 1 / 3]


def test_filter_drops_the_flat_the_wild_and_the_falling() -> None:
    hist = np.tile([0.01, -0.01], 30)[:, None] * np.ones((1, 4))
    hist[:, 1] = 0.0  # never trades
    hist[:, 2] *= 10  # 10% daily moves
    hist[-5:, 3] = -0.05  # a crash at the end
    keep = LiquidityVolMomentumFilter(window=60, max_vol=0.05, min_momentum=-0.1, min_assets=1)
    assert keep.select(Day(hist, 0)).tolist() == [True, False, False, False]
    assert StaticUniverse().select(Day(hist, 0)).all()


def test_turbulence_is_the_mahalanobis_distance() -> None:
    window = 60
    past, today = HISTORY[-window - 1 : -1], HISTORY[-1]
    # Independent: covariance by explicit sums, a linear solve instead of a pseudo-inverse.
    mu = past.sum(axis=0) / window
    centred = past - mu
    cov = centred.T @ centred / (window - 1)
    expected = float((today - mu) @ np.linalg.solve(cov, today - mu))
    assert turbulence(HISTORY, window) == pytest.approx(expected, rel=1e-10)


def test_turbulence_timing_cuts_for_the_cooldown_and_cash_takes_the_rest() -> None:
    calm = HISTORY.copy()
    shock = calm.copy()
    shock[-1] = [0.08, -0.08, 0.08, -0.08]
    timing = TurbulenceTiming(threshold=30.0, window=60, scale=0.25, cooldown=3)
    w = np.full(4, 0.25)
    out, state = timing.time(Day(calm, 0), w, None)
    assert out is w and state["until"] == -1
    out, state = timing.time(Day(shock, 0), w, None)
    assert out.sum() == pytest.approx(0.25) and state["until"] == len(shock) + 3
    # Two calm days later the cut still holds; past the cooldown it is lifted.
    later = np.vstack([shock, calm[:2]])
    assert timing.time(Day(later, 0), w, state)[0].sum() == pytest.approx(0.25)
    after = np.vstack([shock, calm[:3]])
    assert timing.time(Day(after, 0), w, state)[0].sum() == pytest.approx(1.0)
    assert ConstantTiming(0.5).time(Day(calm, 0), w, None)[0].tolist() == [0.125] * 4


def test_overlays_cut_and_say_so() -> None:
    day = Day(HISTORY, 0)
    w = np.array([0.5, 0.3, 0.2, 0.0])
    capped, _, cut = PositionCap(0.4).apply(day, w, None)
    assert capped.tolist() == [0.4, 0.3, 0.2, 0.0] and cut
    assert PositionCap(0.5).apply(day, w, None)[2] is False
    scaled, _, cut = GrossExposure(0.8).apply(day, w, None)
    np.testing.assert_allclose(scaled, [0.4, 0.24, 0.16, 0.0])
    assert cut
    pipe = WeightCentricPipeline(
        StaticUniverse(), EqualWeight(), ConstantTiming(), (PositionCap(0.2),), every=2
    )
    first = pipe.run(HISTORY[:100])
    assert first.truncated and first.cut_by == ("position_cap",)
    assert first.weights.tolist() == [0.2] * 4
    assert set(first.stages) == {"select", "allocate", "timing", "position_cap"}
    held = pipe.run(HISTORY[:101], first.state)  # a day between rebalances holds
    assert not held.rebalance and held.weights.tolist() == [0.2] * 4


def test_a_day_decided_from_journaled_state_equals_the_loop() -> None:
    returns = np.abs(RNG.normal(0.0005, 0.01, size=(400, 4))) * np.sign(RNG.normal(size=(400, 4)))
    config = TrialConfig(n_scenarios=1000, cufolio_hold_days=5, max_position_pct=0.3)
    pipe = pipeline_for("cufolio_only", config, 4, seed=3, scenario_window=200, cost_bps=10.0)
    start_sequence()
    targets, _, _ = run_sequence(pipe, returns, 300, 330)
    # Tick by tick, the state going through JSON text in between (as the journal keeps it).
    start_sequence()
    state = None
    for day in range(30):
        run = pipe.run(returns[: 300 + day], state)
        np.testing.assert_array_equal(run.weights, targets[day])
        state = PipelineState.from_json(json.loads(json.dumps(run.state.to_json())))
