"""Metrics against numbers worked out by hand and against independent brute-force oracles."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from alphaloop.metrics import (
    CALMAR_MIN_DRAWDOWN,
    SORTINO_MIN_DOWNSIDE,
    Metrics,
    annual_return,
    annual_turnover,
    calmar,
    compute_metrics,
    cvar,
    equity_curve,
    hit_rate,
    max_drawdown,
    objective_value,
    profit_factor,
    sharpe,
    sortino,
    total_return,
)

R = [0.01, -0.02, 0.03, -0.01, 0.005]
# Worked by hand for R:
#   mean = 0.015 / 5 = 0.003
#   deviations 0.007, -0.023, 0.027, -0.013, 0.002 -> squares sum to 0.00148
#   sample variance = 0.00148 / 4 = 0.00037
#   downside: min(r, 0) = 0, -0.02, 0, -0.01, 0 -> mean square = 0.0005 / 5 = 0.0001 -> 0.01
#   wealth 1, 1.01, 0.9898, 1.019494, 1.00929906, 1.0143455553
#   drawdowns: 1 - 0.9898 / 1.01 = 0.02, 1 - 1.00929906 / 1.019494 = 0.01 -> max 0.02
#   gains 0.045, losses 0.03; 3 of 5 days positive
MEAN, VAR, DOWNSIDE = 0.003, 0.00037, 0.01
WEALTH = [1.0, 1.01, 0.9898, 1.019494, 1.00929906, 1.0143455553]
TOTAL = 0.0143455553


def test_sharpe_by_hand() -> None:
    assert sharpe(R) == pytest.approx(MEAN / math.sqrt(VAR) * math.sqrt(252), rel=1e-12)
    assert sharpe(R) == pytest.approx(2.4758291, rel=1e-6)
    assert sharpe(R, periods=1) == pytest.approx(0.15596257, rel=1e-6)


def test_sortino_by_hand() -> None:
    assert sortino(R) == pytest.approx(MEAN / DOWNSIDE * math.sqrt(252), rel=1e-12)
    assert sortino(R) == pytest.approx(4.7623524, rel=1e-6)


def test_equity_total_and_drawdown_by_hand() -> None:
    np.testing.assert_allclose(equity_curve(R), WEALTH, rtol=1e-12)
    assert total_return(R) == pytest.approx(TOTAL, rel=1e-10)
    assert max_drawdown(R) == pytest.approx(0.02, rel=1e-12)


def test_hit_rate_profit_factor_by_hand() -> None:
    assert hit_rate(R) == 0.6
    # Days with no return (holiday rows) are neither wins nor losses, as in quantstats'
    # win_rate: 3 wins of 5 days that moved, whatever the flat days in between. The former
    # rule counted 3 of 9, below the 48% gate.
    assert hit_rate([0.01, 0.0, -0.01, 0.02, 0.0, 0.0, 0.005, -0.002, 0.0]) == pytest.approx(0.6)
    assert hit_rate([0.0, 0.0]) == 0.0
    assert profit_factor(R) == pytest.approx(0.045 / 0.03, rel=1e-12)
    assert profit_factor([0.01, 0.02]) == 1e6
    assert profit_factor([-0.01, 0.0]) == 0.0


def test_annual_return_and_calmar_by_hand() -> None:
    annual = 1.0143455553 ** (252 / 5) - 1
    assert annual_return(R) == pytest.approx(annual, rel=1e-9)
    assert calmar(R) == pytest.approx(annual / 0.02, rel=1e-9)
    # No drawdown: the drawdown is floored at one basis point (it used to give 0).
    rising = 1.01 * 1.02
    assert calmar([0.01, 0.02]) == pytest.approx((rising ** (252 / 2) - 1) / 1e-4, rel=1e-9)
    assert annual_return([-1.0, 0.5]) == -1.0  # wiped out


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [
        # losses worst first: 0.02, 0.01, -0.005, -0.01, -0.03
        (0.95, 0.02),  # tail mass 0.25 < one scenario: the worst loss
        (0.8, 0.02),  # mass 1
        (0.6, (0.02 + 0.01) / 2),  # mass 2
        (0.5, (0.02 + 0.01 + 0.5 * -0.005) / 2.5),  # mass 2.5 = 0.011
    ],
)
def test_cvar_by_hand(alpha: float, expected: float) -> None:
    assert cvar(R, alpha) == pytest.approx(expected, rel=1e-12)


def test_cvar_fractional_tail_by_hand() -> None:
    # 10 returns, alpha 0.85 -> tail mass 1.5: the worst loss and half of the second worst.
    r = [-0.05, -0.03, -0.02, 0.01, 0.0, 0.02, -0.01, 0.015, 0.005, 0.03]
    assert cvar(r, 0.85) == pytest.approx((0.05 + 0.5 * 0.03) / 1.5, rel=1e-12)


def _ru_objective(v: float, losses: np.ndarray, alpha: float) -> float:
    """Rockafellar-Uryasev: CVaR = min over v of v + E[(L - v)+] / (1 - alpha)."""
    return v + np.maximum(losses - v, 0.0).mean() / (1.0 - alpha)


def _cvar_ru_bruteforce(returns: np.ndarray, alpha: float) -> float:
    # The objective is piecewise linear and convex with kinks at the losses: its minimum is at one.
    losses = -np.asarray(returns)
    return min(_ru_objective(v, losses, alpha) for v in losses)


@pytest.mark.parametrize("alpha", [0.85, 0.9, 0.95, 0.975, 0.99, 0.5, 0.123])
@pytest.mark.parametrize("n", [10, 37, 200])
def test_cvar_equals_rockafellar_uryasev_minimum(alpha: float, n: int) -> None:
    rng = np.random.default_rng(n)
    r = rng.standard_t(3, size=n) * 0.01
    assert cvar(r, alpha) == pytest.approx(_cvar_ru_bruteforce(r, alpha), rel=1e-10, abs=1e-14)


def test_cvar_fractional_tail_against_scipy_minimiser() -> None:
    rng = np.random.default_rng(11)
    r = rng.normal(0.0005, 0.01, size=10)
    losses = -r
    res = minimize_scalar(
        _ru_objective,
        bounds=(losses.min(), losses.max()),
        args=(losses, 0.85),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert cvar(r, 0.85) == pytest.approx(res.fun, rel=1e-7)


def test_cvar_rejects_bad_alpha() -> None:
    for alpha in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(
            ValueError, match=rf"alpha must be strictly between 0 and 1, got {alpha}"
        ):
            cvar(R, alpha)


def _max_drawdown_bruteforce(returns: np.ndarray) -> float:
    wealth = [1.0]
    for x in returns:
        wealth.append(wealth[-1] * (1.0 + x))
    worst = 0.0
    for i in range(len(wealth)):
        for j in range(i, len(wealth)):
            worst = max(worst, 1.0 - wealth[j] / wealth[i])
    return worst


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_drawdown_against_all_peak_trough_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r = rng.normal(0.0003, 0.02, size=150)
    assert max_drawdown(r) == pytest.approx(_max_drawdown_bruteforce(r), rel=1e-12)


def test_max_drawdown_counts_a_loss_on_the_first_day_and_is_zero_when_rising() -> None:
    assert max_drawdown([-0.1, 0.05]) == pytest.approx(0.1)
    assert max_drawdown([0.01, 0.02, 0.0]) == 0.0


def test_flat_series_gives_zero_ratios() -> None:
    flat = [0.001] * 10
    assert sharpe(flat) == 0.0
    assert sharpe([0.01]) == 0.0
    assert sortino([0.0] * 10) == 0.0  # a book that earns nothing, whatever the floor


# --- sortino without a losing day ------------------------------------------------------------


def test_sortino_ranks_a_strategy_that_never_lost_above_worse_ones() -> None:
    # It was 0 here although the Sharpe is about 50: under --metric sortino a strategy that never
    # lost ranked below every one that did. Calmar's convention: the risk floored at 1 bp.
    never_lost = [0.01, 0.02, 0.015, 0.01, 0.012]
    assert sharpe(never_lost) > 45
    expected = np.mean(never_lost) / SORTINO_MIN_DOWNSIDE * math.sqrt(252)
    assert sortino(never_lost) == pytest.approx(expected, rel=1e-12)
    with_losses = [0.02, -0.001, 0.015, 0.01, 0.012]
    assert sortino(never_lost) > sortino(with_losses) > 0 > sortino([-0.001] * 5)
    # Among strategies that never lost, the higher mean ranks higher.
    assert sortino([0.002] * 5) > sortino([0.001] * 5) > 0
    json.dumps(compute_metrics(np.array(never_lost), np.zeros(5)).model_dump(), allow_nan=False)


def test_sortino_is_continuous_as_the_downside_vanishes() -> None:
    base = [0.001] * 20
    tiny_loss = [*base[:10], -1e-6, *base[11:]]
    assert sortino(tiny_loss) == pytest.approx(
        np.mean(tiny_loss) / SORTINO_MIN_DOWNSIDE * math.sqrt(252), rel=1e-12
    )
    assert sortino(tiny_loss) < sortino(base)
    # Above the floor the textbook ratio is untouched.
    assert sortino(R) == pytest.approx(MEAN / DOWNSIDE * math.sqrt(252), rel=1e-12)


def test_annual_turnover() -> None:
    assert annual_turnover([0.1, 0.2, 0.0, 0.1, 0.1]) == pytest.approx(0.1 * 252)


def test_compute_metrics_by_hand() -> None:
    m = compute_metrics(np.array(R), np.array([0.1, 0.2, 0.0, 0.1, 0.1]))
    assert isinstance(m, Metrics)
    annual = 1.0143455553 ** (252 / 5) - 1
    expected = {
        "sharpe": MEAN / math.sqrt(VAR) * math.sqrt(252),
        "sortino": MEAN / DOWNSIDE * math.sqrt(252),
        "calmar": annual / 0.02,
        "max_drawdown": 0.02,
        "cvar_95": 0.02,
        "volatility": math.sqrt(VAR) * math.sqrt(252),
        "annual_return": annual,
        "total_return": TOTAL,
        "annual_turnover": 25.2,
        "hit_rate": 0.6,
        "profit_factor": 1.5,
    }
    for name, value in expected.items():
        assert getattr(m, name) == pytest.approx(value, rel=1e-9), name
    assert m.n_days == 5


ALL_SERIES_FUNCTIONS = [
    sharpe,
    sortino,
    equity_curve,
    max_drawdown,
    cvar,
    total_return,
    annual_return,
    calmar,
    hit_rate,
    profit_factor,
    annual_turnover,
]


@pytest.mark.parametrize("fn", ALL_SERIES_FUNCTIONS, ids=lambda f: f.__name__)
def test_empty_series_is_a_value_error(fn) -> None:
    with pytest.raises(ValueError, match=r"need at least one return .* got an empty series"):
        fn([])


@pytest.mark.parametrize("fn", ALL_SERIES_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_series_is_a_value_error(fn, bad: float) -> None:
    with pytest.raises(ValueError, match="returns contain NaN or inf"):
        fn([0.01, bad, -0.01])


def test_compute_metrics_rejects_empty_and_nan() -> None:
    with pytest.raises(ValueError, match="empty series"):
        compute_metrics(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="NaN or inf"):
        compute_metrics(np.array([0.01, np.nan]), np.array([0.0, 0.0]))
    with pytest.raises(ValueError, match="NaN or inf"):
        compute_metrics(np.array([0.01, 0.02]), np.array([0.0, np.nan]))


# --- calmar without a drawdown -------------------------------------------------------------------


def test_calmar_ranks_a_strategy_that_never_drew_down_above_losing_ones() -> None:
    always_up = [0.001] * 50
    with_dip = [0.002, -0.001] * 25
    losing = [-0.001] * 50
    assert max_drawdown(always_up) == 0.0
    assert calmar(always_up) > calmar(with_dip) > 0 > calmar(losing)
    # Among strategies that never drew down, the higher return ranks higher.
    assert calmar([0.002] * 50) > calmar(always_up) > calmar([0.0001] * 50) > 0
    # A flat book earns nothing whatever the floor.
    assert calmar([0.0] * 10) == 0.0


def test_calmar_is_continuous_as_the_drawdown_vanishes() -> None:
    # A drawdown smaller than the floor scores as the floor, so there is no jump at zero.
    base = [0.001] * 20
    tiny_dip = [*base[:10], -1e-6, *base[11:]]
    assert 0 < max_drawdown(tiny_dip) < CALMAR_MIN_DRAWDOWN
    assert calmar(tiny_dip) == pytest.approx(annual_return(tiny_dip) / CALMAR_MIN_DRAWDOWN)
    assert calmar(tiny_dip) < calmar(base)
    # Above the floor the textbook ratio is untouched.
    assert calmar(R) == pytest.approx(annual_return(R) / max_drawdown(R), rel=1e-12)


def test_calmar_without_drawdown_journals_as_strict_json_and_wins_the_objective() -> None:

    rising = compute_metrics(np.full(30, 0.001), np.zeros(30))
    dipping = compute_metrics(np.array([0.002, -0.001] * 15), np.zeros(30))
    json.dumps(rising.model_dump(), allow_nan=False)  # no inf, no NaN
    assert objective_value(rising, "calmar") > objective_value(dipping, "calmar")


# --- deflated Sharpe: one set of trials, N effective -------------------------------------------
