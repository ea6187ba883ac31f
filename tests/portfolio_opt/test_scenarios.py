"""Block bootstrap: shapes, reproducibility, exact compounding, the iid fallback, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from alphaloop.portfolio_opt import bootstrap_scenarios


def test_shape_and_seeded_reproducibility(make_history):
    history = make_history(seed=0, n_days=250, n_assets=6)
    a = bootstrap_scenarios(history, 21, 1000, np.random.default_rng(42))
    b = bootstrap_scenarios(history, 21, 1000, np.random.default_rng(42))
    c = bootstrap_scenarios(history, 21, 1000, np.random.default_rng(43))
    assert a.shape == (1000, 6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_horizon_one_values_are_rows_of_the_history(make_history):
    history = make_history(seed=1, n_days=40, n_assets=3)
    scen = bootstrap_scenarios(history, 1, 500, np.random.default_rng(0))
    rows = {tuple(row) for row in history}
    assert all(tuple(row) in rows for row in scen)  # exact: whole rows, nothing recomputed
    assert len({tuple(row) for row in scen}) > 30  # and spread over the window


def test_blocks_compound_consecutive_days_without_wrapping():
    # Daily growth factors 2, 3, 5, 7, 11 (asset 0) and their reciprocals (asset 1): each
    # 3-day block has a distinct, hand-computable product.
    growth = np.array([2.0, 3.0, 5.0, 7.0, 11.0])
    history = np.column_stack([growth - 1.0, 1.0 / growth - 1.0])
    scen = bootstrap_scenarios(history, 3, 3000, np.random.default_rng(1))
    blocks = [2 * 3 * 5, 3 * 5 * 7, 5 * 7 * 11]  # starts 0, 1, 2; start 3 would wrap
    expected = np.array([[b - 1.0, 1.0 / b - 1.0] for b in blocks])
    distance = np.abs(scen[:, None, :] - expected[None, :, :]).max(axis=2)
    assert distance.min(axis=1).max() < 1e-12  # every scenario is one of the three blocks
    counts = np.bincount(distance.argmin(axis=1), minlength=3)
    assert counts.min() > 900  # start days are uniform (1000 expected each)


def _per_draw(history: np.ndarray, horizon: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Every draw compounded on its own, day by day: the plain reading of the method."""
    n_days = history.shape[0]
    if n_days > horizon:
        starts = rng.integers(0, n_days - horizon + 1, size=n)
        days = starts[:, None] + np.arange(horizon)
    else:
        days = rng.integers(0, n_days, size=(n, horizon))
    if horizon == 1:
        return history[days[:, 0]]
    growth = 1.0 + history[days[:, 0]]
    for j in range(1, horizon):
        growth *= 1.0 + history[days[:, j]]
    return growth - 1.0


@pytest.mark.parametrize(
    ("n_days", "horizon", "n"),
    [(504, 21, 5000), (504, 5, 300), (60, 21, 5000), (30, 1, 100), (3, 4, 50), (1, 1, 10)],
)
def test_blocks_compounded_once_are_each_draw_compounded_bit_for_bit(
    make_history, n_days: int, horizon: int, n: int
):
    history = make_history(seed=3, n_days=n_days, n_assets=7)
    fast = bootstrap_scenarios(history, horizon, n, np.random.default_rng(11))
    np.testing.assert_array_equal(fast, _per_draw(history, horizon, n, np.random.default_rng(11)))


def test_short_window_falls_back_to_iid_days():
    growth = np.array([2.0, 3.0, 5.0])  # T = 3 <= horizon = 4
    history = (growth - 1.0)[:, None]
    scen = bootstrap_scenarios(history, 4, 2000, np.random.default_rng(2))
    possible = {
        np.prod(combo) - 1.0 for combo in itertools.combinations_with_replacement(growth, 4)
    }
    assert all(min(abs(v - p) for p in possible) < 1e-12 for v in scen[:, 0])
    # iid days reach products no block of a 3-day window could (e.g. 2^4 and 5^4).
    assert {15.0, 624.0} <= {round(v, 9) for v in scen[:, 0]}


def test_cross_asset_correlation_is_kept(make_history):
    history = make_history(seed=3, n_days=500, n_assets=2)
    scen = bootstrap_scenarios(history, 5, 5000, np.random.default_rng(3))
    assert np.corrcoef(scen.T)[0, 1] > 0.5 * np.corrcoef(history.T)[0, 1] > 0.1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"daily_returns": np.zeros(10)}, "2-D array"),
        ({"daily_returns": np.zeros((0, 3))}, "2-D array"),
        ({"daily_returns": np.array([[0.01, np.nan], [0.0, 0.0]])}, "1 NaN or infinite"),
        ({"daily_returns": np.array([[0.01, -1.0], [0.0, 0.0]])}, "> -1"),
        ({"horizon": 0}, "horizon must be a positive integer"),
        ({"horizon": 2.5}, "horizon must be a positive integer"),
        ({"n_scenarios": 0}, "n_scenarios must be a positive integer"),
        ({"rng": 42}, "numpy.random.Generator"),
    ],
)
def test_bad_inputs_raise_clear_errors(args, message):
    kwargs = {
        "daily_returns": np.zeros((30, 3)),
        "horizon": 5,
        "n_scenarios": 10,
        "rng": np.random.default_rng(0),
        **args,
    }
    with pytest.raises(ValueError, match=message):
        bootstrap_scenarios(**kwargs)
