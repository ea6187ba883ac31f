"""The paired Sharpe-difference test: against the closed form for i.i.d. normal returns, its
size under a null with autocorrelated fat-tailed returns, its power on a real edge, a worked
example, and the evidence against a reference as one pre-registered test of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from alphaloop.validation.excess import excess_evidence, newey_west_lags, sharpe_difference


def test_without_lags_the_standard_error_is_the_normal_closed_form() -> None:
    # Jobson & Korkie (1981) with Memmel's (2003) correction: for i.i.d. normal returns,
    # T Var(SR_a - SR_b) -> 2 - 2 rho + (SR_a^2 + SR_b^2 - 2 SR_a SR_b rho^2) / 2 (per period).
    rng = np.random.default_rng(0)
    n, rho = 200_000, 0.6
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=n)
    a, b = 0.0008 + 0.01 * z[:, 0], 0.0003 + 0.012 * z[:, 1]
    out = sharpe_difference(a, b, lags=0, periods=1)
    sr_a, sr_b = a.mean() / a.std(), b.mean() / b.std()
    closed = 2 - 2 * rho + (sr_a**2 + sr_b**2 - 2 * sr_a * sr_b * rho**2) / 2
    assert out.se == pytest.approx(math.sqrt(closed / n), rel=0.02)
    assert out.difference == pytest.approx(sr_a - sr_b, rel=1e-12)
    assert out.p_value == pytest.approx(stats.norm.sf(out.difference / out.se), rel=1e-12)


def ar1_fat_tailed(rng: np.random.Generator, n: int, phi: float, shocks: np.ndarray) -> np.ndarray:
    x = np.empty(n)
    x[0] = shocks[0]
    for t in range(1, n):
        x[t] = phi * x[t - 1] + shocks[t]
    return x


def test_under_the_null_it_rejects_about_five_percent() -> None:
    # Equal Sharpe, correlated, autocorrelated (AR(1) 0.3) Student-t(5) returns: the HAC test
    # keeps its size where an i.i.d. test would not.
    rng = np.random.default_rng(1)
    n, sims, rejections, naive = 750, 400, 0, 0
    for _ in range(sims):
        common = stats.t.rvs(5, size=n, random_state=rng)
        own = stats.t.rvs(5, size=(2, n), random_state=rng)
        a = 0.0004 + 0.01 * ar1_fat_tailed(rng, n, 0.3, 0.7 * common + 0.7 * own[0]) / 2
        b = 0.0004 + 0.01 * ar1_fat_tailed(rng, n, 0.3, 0.7 * common + 0.7 * own[1]) / 2
        rejections += sharpe_difference(a, b).p_value < 0.05
        naive += sharpe_difference(a, b, lags=0).p_value < 0.05
    assert 0.02 <= rejections / sims <= 0.085
    assert naive > rejections  # the autocorrelation would fool a test without lags


def test_it_finds_a_real_edge() -> None:
    rng = np.random.default_rng(2)
    n, found = 1000, 0
    for _ in range(100):
        common = rng.normal(0, 0.01, n)
        a = common + rng.normal(0.0008, 0.004, n)  # about +2.9 annual Sharpe over b
        b = common + rng.normal(0.0, 0.004, n)
        found += sharpe_difference(a, b).p_value < 0.05
    assert found >= 90


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        sharpe_difference([0.01] * 20, [0.01] * 19)
    with pytest.raises(ValueError, match="at least 10"):
        sharpe_difference([0.01, 0.02], [0.0, 0.01])
    with pytest.raises(ValueError, match="does not vary"):
        sharpe_difference([0.01] * 20, np.linspace(-0.01, 0.01, 20))
    assert newey_west_lags(252) == 4 and newey_west_lags(100) == 4 and newey_west_lags(1000) == 6


def test_the_evidence_against_a_reference_is_one_paired_test_of_sharpe_not_return() -> None:
    # Same mean return, a third of the risk: three times the Sharpe and no more return. The
    # evidence is the paired Sharpe test alone, nothing deflated by configs tried (TEST selects
    # nothing), and it finds the calm book better.
    rng = np.random.default_rng(5)
    market = rng.normal(0.0, 1.0, 2000)
    calm = 0.0005 + 0.004 * (0.5 * market + rng.normal(0.0, 1.0, 2000))
    wild = 0.0005 + 0.012 * market
    assert abs((calm - wild).mean()) < 0.0003
    out = excess_evidence("equal_weight", calm, wild)
    assert out.model_dump() == {
        "reference": "equal_weight",
        "test": sharpe_difference(calm, wild).model_dump(),
    }
    assert out.test.p_value < 0.001
    assert excess_evidence("equal_weight", wild, calm).test.p_value > 0.999


def test_series_of_different_lengths_are_compared_on_their_common_latest_days() -> None:
    rng = np.random.default_rng(4)
    pick, base = rng.normal(0.001, 0.01, 260), rng.normal(0.0, 0.01, 250)
    out = excess_evidence("equal_weight", pick, base)
    assert out.test.n_obs == 250
    assert out.test == sharpe_difference(pick[10:], base)


def test_a_worked_example_with_one_lag() -> None:
    # Twelve days, worked with plain Python sums: the delta method on (mu_a, mu_b, E a^2, E b^2)
    # with a Bartlett-weighted long-run covariance of one lag (weight 1/2), per period.
    a = [0.010, -0.004, 0.007, 0.002, -0.006, 0.012, 0.001, -0.002, 0.009, 0.003, -0.001, 0.005]
    b = [0.006, -0.006, 0.004, 0.003, -0.007, 0.008, 0.000, -0.001, 0.005, 0.001, -0.003, 0.002]
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    ga, gb = sum(x * x for x in a) / n, sum(x * x for x in b) / n
    va, vb = ga - ma * ma, gb - mb * mb
    rows = [(x - ma, y - mb, x * x - ga, y * y - gb) for x, y in zip(a, b, strict=True)]
    grad = (ga / va**1.5, -gb / vb**1.5, -ma / (2 * va**1.5), mb / (2 * vb**1.5))
    g = [sum(gi * ri for gi, ri in zip(grad, r, strict=True)) for r in rows]  # grad . psi_t
    s0 = sum(x * x for x in g) / n
    s1 = sum(g[t] * g[t - 1] for t in range(1, n)) / n
    variance = s0 + 2 * 0.5 * s1
    se = math.sqrt(variance / n)
    diff = ma / math.sqrt(va) - mb / math.sqrt(vb)
    out = sharpe_difference(a, b, lags=1, periods=1)
    assert out.difference == pytest.approx(diff, rel=1e-12)
    assert out.se == pytest.approx(se, rel=1e-9)
    assert out.z == pytest.approx(diff / se, rel=1e-9)
    assert out.p_value == pytest.approx(0.5 * math.erfc(diff / se / math.sqrt(2)), rel=1e-9)
