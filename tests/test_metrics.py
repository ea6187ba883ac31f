"""Metrics against numbers worked out by hand and against independent brute-force oracles."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from alphaloop.metrics import (
    Metrics,
    annual_return,
    annual_turnover,
    calmar,
    compute_metrics,
    cvar,
    deflated_sharpe_ratio,
    equity_curve,
    expected_max_sharpe,
    hit_rate,
    max_drawdown,
    probabilistic_sharpe_ratio,
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
    assert profit_factor(R) == pytest.approx(0.045 / 0.03, rel=1e-12)
    assert profit_factor([0.01, 0.02]) == 1e6
    assert profit_factor([-0.01, 0.0]) == 0.0


def test_annual_return_and_calmar_by_hand() -> None:
    annual = 1.0143455553 ** (252 / 5) - 1
    assert annual_return(R) == pytest.approx(annual, rel=1e-9)
    assert calmar(R) == pytest.approx(annual / 0.02, rel=1e-9)
    assert calmar([0.01, 0.02]) == 0.0  # no drawdown
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
    assert sortino(flat) == 0.0
    assert sharpe([0.01]) == 0.0


def _psr_closed_form(r: list[float] | np.ndarray, sr_star: float) -> float:
    """Bailey & Lopez de Prado (2012) with population moments, and Phi from the error function."""
    x = np.asarray(r, dtype=float)
    n = x.size
    m = x.mean()
    sr = m / math.sqrt(((x - m) ** 2).sum() / (n - 1))
    m2 = ((x - m) ** 2).mean()
    g3 = ((x - m) ** 3).mean() / m2**1.5
    g4 = ((x - m) ** 4).mean() / m2**2
    z = (sr - sr_star) * math.sqrt(n - 1) / math.sqrt(1 - g3 * sr + (g4 - 1) / 4 * sr**2)
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def test_psr_closed_form_small_series() -> None:
    assert probabilistic_sharpe_ratio(R) == pytest.approx(_psr_closed_form(R, 0.0), rel=1e-12)
    assert probabilistic_sharpe_ratio(R, 0.1) == pytest.approx(_psr_closed_form(R, 0.1), rel=1e-12)


def test_psr_closed_form_long_series() -> None:
    rng = np.random.default_rng(5)
    r = rng.standard_t(5, size=750) * 0.01 + 0.0006
    for star in (0.0, 0.02, 0.05):
        got = probabilistic_sharpe_ratio(r, star)
        assert got == pytest.approx(_psr_closed_form(r, star), rel=1e-10)
    # A benchmark equal to the observed Sharpe gives exactly one half.
    sr = r.mean() / r.std(ddof=1)
    assert probabilistic_sharpe_ratio(r, sr) == pytest.approx(0.5, abs=1e-12)


def test_psr_undefined_cases() -> None:
    assert math.isnan(probabilistic_sharpe_ratio([0.01, 0.02]))
    assert math.isnan(probabilistic_sharpe_ratio([0.01] * 10))


def test_expected_max_sharpe_closed_form_and_monte_carlo() -> None:
    nd = NormalDist()
    gamma = 0.5772156649015329
    for n, var in ((10, 0.25), (100, 1.0), (1000, 0.01)):
        expected = math.sqrt(var) * (
            (1 - gamma) * nd.inv_cdf(1 - 1 / n) + gamma * nd.inv_cdf(1 - 1 / (n * math.e))
        )
        assert expected_max_sharpe(n, var) == pytest.approx(expected, rel=1e-10)
    # E[max of 100 iid N(0, 1)] = 2.5076 (tabulated); the approximation is within 0.03.
    assert expected_max_sharpe(100, 1.0) == pytest.approx(2.5076, abs=0.03)
    assert expected_max_sharpe(1, 1.0) == 0.0
    assert expected_max_sharpe(50, 0.0) == 0.0


def test_deflated_sharpe_below_psr_with_many_trials() -> None:
    rng = np.random.default_rng(9)
    r = rng.normal(0.001, 0.01, size=500)
    psr = probabilistic_sharpe_ratio(r)
    assert deflated_sharpe_ratio(r, n_trials=1, sr_variance=0.002) == pytest.approx(psr)
    dsr_10 = deflated_sharpe_ratio(r, n_trials=10, sr_variance=0.002)
    dsr_100 = deflated_sharpe_ratio(r, n_trials=100, sr_variance=0.002)
    assert dsr_100 < dsr_10 < psr
    hurdle = expected_max_sharpe(10, 0.002)
    assert dsr_10 == pytest.approx(_psr_closed_form(r, hurdle), rel=1e-10)


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
    probabilistic_sharpe_ratio,
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
