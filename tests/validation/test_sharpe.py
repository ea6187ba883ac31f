"""The probabilistic and deflated Sharpe ratios and the effective number of trials, against
closed forms worked out independently, the papers' examples and brute-force oracles."""

from __future__ import annotations

import itertools
import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from alphaloop.evidence import DeflatedSharpe
from alphaloop.validation.sharpe import (
    deflated_sharpe,
    effective_trials,
    expected_max_sharpe,
    probabilistic_sharpe_ratio,
    psr_from_moments,
    trial_sharpes,
)

R = [0.01, -0.02, 0.03, -0.01, 0.005]


def test_psr_refuses_an_empty_or_non_finite_series() -> None:
    with pytest.raises(ValueError, match=r"need at least one return .* got an empty series"):
        probabilistic_sharpe_ratio([])
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="returns contain NaN or inf"):
            probabilistic_sharpe_ratio([0.01, bad, -0.01])


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
    # The DSR is the PSR against the hurdle the best of N unskilled trials would reach.
    dsr_1, dsr_10, dsr_100 = (
        _psr_closed_form(r, expected_max_sharpe(n, 0.002)) for n in (1, 10, 100)
    )
    assert dsr_1 == pytest.approx(psr)
    assert dsr_100 < dsr_10 < psr


def test_deflated_sharpe_bailey_lopez_de_prado_2014_example() -> None:
    # Bailey & Lopez de Prado (2014), section 4: N = 100 trials, variance of annualised Sharpe
    # ratios 1/2, the best at an annualised 2.5 over T = 1,250 daily returns (250 a year) with
    # skewness -3 and kurtosis 10. The paper gets a hurdle of 0.1132 per day and DSR 0.9004.
    per_year = 250
    hurdle = expected_max_sharpe(100, 0.5 / per_year)
    assert hurdle == pytest.approx(0.1132, abs=5e-5)
    sr = 2.5 / math.sqrt(per_year)
    assert psr_from_moments(sr, 1250, -3.0, 10.0, hurdle) == pytest.approx(0.9004, abs=5e-5)


def test_psr_from_moments_undefined() -> None:
    assert math.isnan(psr_from_moments(0.1, 1, 0.0, 3.0))
    # A variance term 1 - skew * sr + (kurtosis - 1) / 4 * sr^2 = 1 - 5 + 0.5 that is negative.
    assert math.isnan(psr_from_moments(1.0, 100, 5.0, 3.0))


def test_expected_max_sharpe_grows_continuously_through_fractional_trials() -> None:
    var = 0.01
    values = [expected_max_sharpe(n, var) for n in (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)]
    assert values[0] == 0.0
    assert all(a < b for a, b in itertools.pairwise(values))
    assert values[2] == pytest.approx(0.5 * expected_max_sharpe(2, var))


def _trial_returns(seed: int, n_days: int = 500, n_trials: int = 20) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0003, 0.01, (n_days, n_trials))


def test_deflated_sharpe_against_closed_form() -> None:
    x = _trial_returns(1)
    srs = trial_sharpes(x)
    manual = [r.mean() / r.std(ddof=1) for r in x.T]
    np.testing.assert_allclose(srs, manual, rtol=1e-12)
    best = x[:, int(np.argmax(srs))]
    out = deflated_sharpe(best, srs)
    assert isinstance(out, DeflatedSharpe)
    variance = float(np.var(manual, ddof=1))
    hurdle = expected_max_sharpe(20, variance)
    assert out.n_trials == 20 and out.sr_variance == pytest.approx(variance, rel=1e-12)
    assert out.hurdle == pytest.approx(hurdle, rel=1e-12)
    assert out.dsr == pytest.approx(_psr_closed_form(best, hurdle), rel=1e-10)
    assert out.psr == pytest.approx(_psr_closed_form(best, 0.0), rel=1e-10)
    assert out.n_effective is None and out.dsr_effective is None


def test_deflated_sharpe_under_fewer_effective_trials_is_higher() -> None:
    x = _trial_returns(2)
    srs = trial_sharpes(x)
    best = x[:, int(np.argmax(srs))]
    out = deflated_sharpe(best, srs, n_trials=25, n_effective=4.5)
    assert out.n_trials == 25
    assert out.hurdle_effective == pytest.approx(expected_max_sharpe(4.5, out.sr_variance))
    assert out.hurdle_effective < out.hurdle
    assert out.dsr_effective > out.dsr
    assert out.dsr_effective == pytest.approx(_psr_closed_form(best, out.hurdle_effective))


def test_deflated_sharpe_reproduces_the_papers_example_end_to_end() -> None:
    # The example of Bailey & Lopez de Prado (2014) through deflated_sharpe itself: 100 trials
    # whose Sharpe ratios have the paper's variance (1/2 a year, 1/500 a day), and a best trial
    # of 1,250 days at an annualised 2.5 with skewness -3 and kurtosis 10 (a two-point law: 105
    # days of a loss, the rest flat, shifted and scaled to the Sharpe). The paper: DSR 0.9004.
    x = np.r_[np.full(105, -1.0), np.zeros(1145)]
    x = (x - x.mean()) / x.std()
    sr = 2.5 / math.sqrt(250)
    best = 0.01 * x + sr * 0.01 * x.std(ddof=1)
    z = np.random.default_rng(0).normal(size=100)
    srs = (z - z.mean()) / z.std(ddof=1) * math.sqrt(0.5 / 250)
    out = deflated_sharpe(best, srs)
    assert out.skew == pytest.approx(-3.0, abs=1e-3) and out.kurtosis == pytest.approx(10, abs=5e-3)
    assert out.sr_variance == pytest.approx(0.5 / 250, rel=1e-12)
    assert out.hurdle == pytest.approx(0.1132, abs=5e-5)
    assert out.dsr == pytest.approx(0.9004, abs=5e-4)  # fails DSR > 0.95, as in the paper
    # The hurdle takes the trials' own variance even where it is above Lo's i.i.d. variance of
    # one Sharpe, (1 + SR^2 / 2) / T: capped there, this example's DSR rose to about 0.99.
    assert out.sr_variance > (1 + 0.5 * np.mean(srs**2)) / 1250


def test_deflated_sharpe_rejects_inconsistent_sets() -> None:
    with pytest.raises(ValueError, match="below the 3 trial Sharpe ratios"):
        deflated_sharpe(R, [0.1, 0.2, 0.3], n_trials=2)
    with pytest.raises(ValueError, match="non-empty list of finite numbers"):
        deflated_sharpe(R, [])
    with pytest.raises(ValueError, match="non-empty list of finite numbers"):
        deflated_sharpe(R, [0.1, float("nan")])
    with pytest.raises(ValueError, match="n_effective must be in"):
        deflated_sharpe(R, [0.1, 0.2], n_effective=3)


def test_deflated_sharpe_undefined_ratios_are_none_not_nan() -> None:
    out = deflated_sharpe([0.001] * 10, [0.1, 0.2, 0.05])
    assert out.sharpe is None and out.psr is None and out.dsr is None

    json.dumps(out.model_dump(), allow_nan=False)


def _exact_correlation(corr: np.ndarray, n_days: int, seed: int) -> np.ndarray:
    """Returns whose *sample* correlation matrix is exactly ``corr``: orthonormal centred
    columns (QR of centred noise) mixed by the Cholesky factor of ``corr``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_days, corr.shape[0]))
    q, _ = np.linalg.qr(z - z.mean(axis=0))
    return 0.0003 + 0.01 * q @ np.linalg.cholesky(corr).T


def test_effective_trials_of_uncorrelated_and_identical_trials() -> None:
    independent = _exact_correlation(np.eye(8), 300, 0)
    np.testing.assert_allclose(np.corrcoef(independent, rowvar=False), np.eye(8), atol=1e-12)
    assert effective_trials(independent) == pytest.approx(8.0)
    assert effective_trials(independent, "nyholt") == pytest.approx(8.0)
    one = np.random.default_rng(1).normal(0, 0.01, (300, 1))
    clones = np.hstack([one, 2 * one, one + 0.001, 0.5 * one])
    assert effective_trials(clones) == pytest.approx(1.0)
    assert effective_trials(clones, "nyholt") == pytest.approx(1.0)


def test_effective_trials_of_two_groups_of_three_clones_by_hand() -> None:
    # Eigenvalues 3, 3, 0, 0, 0, 0. Li & Ji: 1 + 1 = 2. Nyholt: var(ddof 1) = (2*2^2 + 4*1^2)/5
    # = 2.4, so 1 + 5 * (1 - 2.4 / 6) = 4.
    base = _exact_correlation(np.eye(2), 250, 3)
    groups = np.hstack([base[:, [0]]] * 3 + [base[:, [1]]] * 3)
    assert effective_trials(groups) == pytest.approx(2.0)
    assert effective_trials(groups, "nyholt") == pytest.approx(4.0)


def test_effective_trials_of_equicorrelated_trials_by_hand() -> None:
    # 10 trials, pairwise correlation 0.5: eigenvalues 1 + 9 * 0.5 = 5.5 once and 0.5 nine
    # times. Li & Ji: (1 + 0.5) + 9 * 0.5 = 6. Nyholt: var = (4.5^2 + 9 * 0.5^2) / 9 = 2.5,
    # so 1 + 9 * (1 - 2.5 / 10) = 7.75.
    corr = np.full((10, 10), 0.5) + 0.5 * np.eye(10)
    x = _exact_correlation(corr, 400, 4)
    assert effective_trials(x) == pytest.approx(6.0)
    assert effective_trials(x, "nyholt") == pytest.approx(7.75)


def test_effective_trials_of_sampling_noise() -> None:
    # Independent noise: sample eigenvalues spread around 1 (Marchenko-Pastur) but stay below 2,
    # where Li & Ji counts each as itself, so the count is N exactly; Nyholt is pulled down.
    x = np.random.default_rng(7).normal(0, 0.01, (750, 50))
    assert effective_trials(x) == pytest.approx(50.0)
    assert 40 < effective_trials(x, "nyholt") < 50


def test_effective_trials_validation() -> None:
    with pytest.raises(ValueError, match=r"\(T days, N trials\) matrix"):
        effective_trials(np.zeros(10))
    with pytest.raises(ValueError, match="unknown method"):
        effective_trials(_trial_returns(0), "pca")  # type: ignore[arg-type]
    flat = np.hstack([np.zeros((20, 1)), _trial_returns(0, 20, 1)])
    assert effective_trials(flat) == 1.0  # the flat trial carries no correlation
