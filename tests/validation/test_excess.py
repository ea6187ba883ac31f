"""The paired Sharpe-difference test: against the closed form for i.i.d. normal returns, its
size under a null with autocorrelated fat-tailed returns and with a persistent component, its
power on a real edge, worked examples of the former and today's standard errors, its block
length against the closed form for AR(1) series, the minimum detectable edge, and the evidence
against a reference as one pre-registered test of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from alphaloop.evidence import ExcessEvidence
from alphaloop.validation.bootstrap import block_length, stationary_counts
from alphaloop.validation.excess import (
    excess_evidence,
    minimum_detectable_edge,
    newey_west_lags,
    sharpe_difference,
)


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


WORKED = (
    [0.010, -0.004, 0.007, 0.002, -0.006, 0.012, 0.001, -0.002, 0.009, 0.003, -0.001, 0.005],
    [0.006, -0.006, 0.004, 0.003, -0.007, 0.008, 0.000, -0.001, 0.005, 0.001, -0.003, 0.002],
)


def _by_hand(a: list[float], b: list[float]) -> tuple[float, list[float]]:
    """SR_a - SR_b per period and its influence series ``grad . psi_t`` (the delta method on
    (mu_a, mu_b, E a^2, E b^2)), with plain Python sums."""
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    ga, gb = sum(x * x for x in a) / n, sum(x * x for x in b) / n
    va, vb = ga - ma * ma, gb - mb * mb
    rows = [(x - ma, y - mb, x * x - ga, y * y - gb) for x, y in zip(a, b, strict=True)]
    grad = (ga / va**1.5, -gb / vb**1.5, -ma / (2 * va**1.5), mb / (2 * vb**1.5))
    u = [sum(gi * ri for gi, ri in zip(grad, r, strict=True)) for r in rows]
    return ma / math.sqrt(va) - mb / math.sqrt(vb), u


def test_under_the_null_it_rejects_about_five_percent() -> None:
    # Equal Sharpe, correlated, autocorrelated (AR(1) 0.3) Student-t(5) returns: the test's
    # standard error keeps its size where an i.i.d. one would not (the bootstrap's own size is
    # the slow test below and benchmarks/bench_validation.py's size arm).
    rng = np.random.default_rng(1)
    n, sims, rejections, naive = 750, 400, 0, 0
    for _ in range(sims):
        common = stats.t.rvs(5, size=n, random_state=rng)
        own = stats.t.rvs(5, size=(2, n), random_state=rng)
        a = 0.0004 + 0.01 * ar1_fat_tailed(rng, n, 0.3, 0.7 * common + 0.7 * own[0]) / 2
        b = 0.0004 + 0.01 * ar1_fat_tailed(rng, n, 0.3, 0.7 * common + 0.7 * own[1]) / 2
        rejections += sharpe_difference(a, b, method="hac").p_value < 0.05
        naive += sharpe_difference(a, b, lags=0).p_value < 0.05
    assert 0.02 <= rejections / sims <= 0.085
    assert naive > rejections  # the autocorrelation would fool a test without lags


def persistent_pair(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two books of equal Sharpe whose difference carries a persistent component (AR(1) 0.97,
    11% of its daily variance and most of its long-run variance)."""
    z = rng.standard_normal((4, n + 300))
    extra = np.zeros(n + 300)
    for t in range(1, n + 300):
        extra[t] = 0.97 * extra[t - 1] + math.sqrt(1 - 0.97**2) * 0.001 * z[3, t]
    a = 0.00034 + 0.01 * z[0] + 0.004 * z[1] + extra
    b = 0.00034 + 0.01 * z[0] + 0.004 * z[2] - extra
    return a[300:], b[300:]


@pytest.mark.slow
def test_a_persistent_component_fools_the_former_test_and_not_the_bootstrap() -> None:
    # Nine folds of days: Newey-West's 10 lags see a tenth of the long-run variance and reject
    # about one pair in five; the bootstrap's block, chosen from the days, sees it.
    rng = np.random.default_rng(11)
    sims, former, today = 80, 0, 0
    for _ in range(sims):
        a, b = persistent_pair(rng, 6804)
        former += sharpe_difference(a, b, method="newey_west").p_value < 0.05
        today += sharpe_difference(a, b, reps=499).p_value < 0.05
    assert former / sims >= 0.12
    assert today / sims <= 0.10 and today < former


@pytest.mark.slow
def test_the_bootstrap_keeps_its_size_on_autocorrelated_fat_tailed_returns() -> None:
    rng = np.random.default_rng(12)
    sims, rejections = 160, 0
    for _ in range(sims):
        common = stats.t.rvs(5, size=520, random_state=rng)
        own = stats.t.rvs(5, size=(2, 520), random_state=rng)
        a = 0.0004 + 0.01 * ar1_fat_tailed(rng, 520, 0.3, 0.7 * common + 0.7 * own[0]) / 2
        b = 0.0004 + 0.01 * ar1_fat_tailed(rng, 520, 0.3, 0.7 * common + 0.7 * own[1]) / 2
        rejections += sharpe_difference(a, b, reps=499).p_value < 0.05
    assert 0.01 <= rejections / sims <= 0.10


def test_on_iid_days_the_bootstrap_p_value_is_the_normal_one() -> None:
    # Block 1 on i.i.d. normal days: the studentized bootstrap and the normal approximation
    # agree up to the bootstrap's own noise (1,999 resamples: +-0.01 near p = 0.2).
    rng = np.random.default_rng(13)
    common = rng.normal(0.0, 0.01, 3000)
    a = common + rng.normal(0.00008, 0.004, 3000)
    b = common + rng.normal(0.0, 0.004, 3000)
    boot = sharpe_difference(a, b, block=1)
    normal = sharpe_difference(a, b, method="hac", block=1)
    assert boot.method == "bootstrap" and boot.block == 1 and boot.reps == 1999
    assert boot.se == normal.se and boot.z == normal.z
    assert 0.02 < normal.p_value < 0.5
    assert boot.p_value == pytest.approx(normal.p_value, abs=0.025)
    # Seeded by the data: the same days give the same p-value, other days another.
    assert sharpe_difference(a, b, block=1).p_value == boot.p_value
    assert sharpe_difference(a[::-1], b[::-1], block=1).p_value != boot.p_value


def test_todays_standard_error_by_hand_on_circular_blocks_of_two() -> None:
    # Götze & Künsch's natural variance: the influence series summed over every circular block
    # of two days, squared, averaged, over the block and the days.
    a, b = WORKED
    n, (_, u) = len(a), _by_hand(a, b)
    sums = [u[t] + u[(t + 1) % n] for t in range(n)]
    se = math.sqrt(sum(s * s for s in sums) / (n * 2) / n)
    out = sharpe_difference(a, b, method="hac", block=2, periods=1)
    assert out.se == pytest.approx(se, rel=1e-9)
    assert out.lags == 1 and out.block == 2
    assert out.p_value == pytest.approx(stats.norm.sf(out.difference / se), rel=1e-9)


@pytest.mark.parametrize("phi", [0.0, 0.3, 0.6])
def test_the_block_length_is_politis_and_whites_for_an_ar1_series(phi: float) -> None:
    # For AR(1), G = sum |k| R(k) = 2 s2 phi / (1 - phi)^2 and g(0) = s2 (1 + phi) / (1 - phi)
    # (s2 the variance): the circular block's optimum (2 G^2 / D) ** (1/3) n ** (1/3) with
    # D = 4/3 g(0)^2 is then (6 phi^2 / (1 - phi^2)^2) ** (1/3) n ** (1/3).
    rng = np.random.default_rng(14)
    n = 40_000
    x = ar1_fat_tailed(rng, n, phi, rng.standard_normal(n))
    exact = (6 * phi**2 / (1 - phi**2) ** 2) ** (1 / 3) * n ** (1 / 3)
    found = block_length(x, "circular")
    assert found == pytest.approx(max(exact, 1.0), rel=0.2, abs=1.0)
    # The stationary bootstrap's D is 2 g(0)^2: its block is (4/3 / 2) ** (-1/3) longer... or
    # shorter, by exactly that factor.
    assert block_length(x, "stationary") == pytest.approx(
        max(found * (2 / 3) ** (1 / 3), 1.0), rel=1e-9, abs=1e-9 if phi else 1.0
    )


def test_stationary_resamples_draw_every_day_equally_in_blocks_of_the_mean_length() -> None:
    rng = np.random.default_rng(15)
    counts = stationary_counts(500, 8.0, 400, rng)
    assert counts.shape == (400, 500) and (counts.sum(axis=1) == 500).all()
    assert counts.mean(axis=0) == pytest.approx(np.ones(500), abs=0.35)  # no day favoured


def test_the_minimum_detectable_edge_is_the_standard_error_times_two_quantiles() -> None:
    rng = np.random.default_rng(16)
    a, b = rng.normal(0.0005, 0.01, 756), rng.normal(0.0, 0.01, 756)
    test = sharpe_difference(a, b, method="hac")
    expected = test.se * (stats.norm.ppf(0.95) + stats.norm.ppf(0.80))
    assert minimum_detectable_edge(test) == pytest.approx(expected, rel=1e-12)
    assert minimum_detectable_edge(test.se) == pytest.approx(expected, rel=1e-12)
    half = minimum_detectable_edge(0.37, alpha=0.05, power=0.5)  # power 50%: z_power is 0
    assert half == pytest.approx(0.37 * 1.6449, rel=1e-4)
    with pytest.raises(ValueError, match="alpha and power"):
        minimum_detectable_edge(test, power=1.0)
    with pytest.raises(ValueError, match="standard error"):
        minimum_detectable_edge(float("nan"))


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
    with pytest.raises(ValueError, match="unknown method"):
        sharpe_difference(np.linspace(-0.01, 0.01, 20), np.linspace(0.01, -0.01, 20),
                          method="jobson_korkie")  # type: ignore[arg-type]  # fmt: skip
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
        "looks": 1,
        "p_adjusted": None,
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
    a, b = WORKED
    n, (diff, g) = len(a), _by_hand(a, b)
    s0 = sum(x * x for x in g) / n
    s1 = sum(g[t] * g[t - 1] for t in range(1, n)) / n
    variance = s0 + 2 * 0.5 * s1
    se = math.sqrt(variance / n)
    out = sharpe_difference(a, b, lags=1, periods=1)
    assert out.difference == pytest.approx(diff, rel=1e-12)
    assert out.se == pytest.approx(se, rel=1e-9)
    assert out.z == pytest.approx(diff / se, rel=1e-9)
    assert out.p_value == pytest.approx(0.5 * math.erfc(diff / se / math.sqrt(2)), rel=1e-9)


def test_tests_journaled_before_the_bootstrap_read_as_the_former_test() -> None:
    # A report journaled by an earlier alphaloop has no method, block or resamples, nor looks.
    old = {
        "sharpe_a": 1.1, "sharpe_b": 0.9, "difference": 0.2, "se": 0.3, "z": 0.67,
        "p_value": 0.25, "n_obs": 756, "lags": 6,
    }  # fmt: skip
    evidence = ExcessEvidence.model_validate({"reference": "default", "test": old})
    assert evidence.test.method == "newey_west" and evidence.test.block is None
    assert evidence.looks == 1 and evidence.decisive_p == 0.25
