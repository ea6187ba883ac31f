"""Holm, Benjamini-Hochberg and the Rademacher Anti-Serum against their papers' formulas, worked
examples and independent oracles."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from alphaloop.validation import (
    against_default,
    benjamini_hochberg,
    benjamini_yekutieli,
    holm,
    holm_adjusted,
    rademacher_complexity,
    ras_lower_bounds,
    sharpe_difference,
)

# Benjamini & Hochberg (1995), section 4: fifteen p-values from a study of myocardial infarction
# treatment. At 0.05 Bonferroni rejects 3, their procedure 4 (p_(4) = 0.0095 <= 4 x 0.05 / 15,
# p_(5) = 0.0201 > 5 x 0.05 / 15).
BH_EXAMPLE = [
    0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
    0.5719, 0.6528, 0.7590, 1.0000,
]  # fmt: skip


def test_benjamini_hochberg_rejects_four_of_the_papers_fifteen() -> None:
    shuffled = np.random.default_rng(0).permutation(BH_EXAMPLE)
    rejected = benjamini_hochberg(shuffled, 0.05)
    assert sorted(p for p, r in zip(shuffled, rejected, strict=True) if r) == BH_EXAMPLE[:4]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    ("procedure", "method"), [(benjamini_hochberg, "bh"), (benjamini_yekutieli, "by")]
)
def test_fdr_procedures_agree_with_scipys_adjusted_p_values(
    seed: int, procedure: Any, method: str
) -> None:
    # BY is BH at q / (1 + 1/2 + ... + 1/m): under any dependence between the tests.
    rng = np.random.default_rng(seed)
    p = np.r_[rng.uniform(0, 0.005, 5), rng.uniform(0, 1, 25)]
    adjusted = stats.false_discovery_control(p, method=method)
    for q in (0.05, 0.10, 0.20):
        assert procedure(p, q) == (adjusted <= q).tolist()
    assert sum(benjamini_yekutieli(p, 0.10)) <= sum(benjamini_hochberg(p, 0.10))
    assert benjamini_yekutieli([], 0.1) == []


@pytest.mark.parametrize("seed", [4, 5])
def test_holms_adjusted_p_values_reject_as_holm_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.r_[rng.uniform(0, 0.01, 4), rng.uniform(0, 1, 8)]
    for alpha in (0.01, 0.05, 0.1):
        assert [a <= alpha for a in holm_adjusted(p)] == holm(p, alpha)


def test_holm_steps_down_by_hand() -> None:
    # The paper's fifteen at 0.05: 0.0001 <= 0.05 / 15, 0.0004 <= 0.05 / 14, 0.0019 <= 0.05 / 13,
    # 0.0095 > 0.05 / 12 = 0.00417: three rejected, as Bonferroni, and Holm stops there.
    assert sum(holm(BH_EXAMPLE, 0.05)) == 3
    # Where Holm beats Bonferroni: 0.01, 0.02, 0.03 at 0.06: 0.01 <= 0.02, 0.02 <= 0.03,
    # 0.03 <= 0.06 (Bonferroni would stop after the first).
    assert holm([0.03, 0.01, 0.02], 0.06) == [True, True, True]
    assert holm([0.04, 0.01, 0.05], 0.06) == [False, True, False]  # 0.04 > 0.06 / 2
    with pytest.raises(ValueError, match="alpha"):
        holm([0.1], 1.5)
    with pytest.raises(ValueError, match="p-values"):
        benjamini_hochberg([1.2])


def test_rademacher_complexity_against_every_sign_vector() -> None:
    # T = 10: all 1,024 sign vectors, the expectation exactly; the Monte Carlo is near it.
    rng = np.random.default_rng(4)
    x = rng.normal(size=(10, 6))
    exact = np.mean([np.max(np.array(s) @ x) for s in itertools.product([-1, 1], repeat=10)]) / 10
    assert rademacher_complexity(x, 40_000, seed=1) == pytest.approx(exact, abs=0.01)
    # Identical configs cost what one does (zero: one config fits no sign), and Massart's bound
    # (max |x_n| sqrt(2 log N) / T) holds.
    one = np.repeat(x[:, :1], 5, axis=1)
    assert abs(rademacher_complexity(one, 20_000)) < 0.02
    bound = np.linalg.norm(x, axis=0).max() * math.sqrt(2 * math.log(6)) / 10
    assert exact <= bound


def test_ras_bounds_are_the_papers_formula_and_cheaper_for_alike_configs() -> None:
    rng = np.random.default_rng(5)
    t, n, delta = 500, 20, 0.05
    independent = rng.normal(0.0005, 0.01, (t, n))
    alike = rng.normal(0.0005, 0.01, (t, 1)) + rng.normal(0, 0.001, (t, n))
    for r in (independent, alike):
        bounds, complexity = ras_lower_bounds(r, delta, n_draws=4000, seed=2)
        x = r / r.std(axis=0, ddof=1)
        assert complexity == rademacher_complexity(x, 4000, seed=2)
        price = (
            2 * complexity
            + 3 * math.sqrt(2 * math.log(2 / delta) / t)
            + math.sqrt(2 * math.log(2 * n / delta) / t)
        )
        np.testing.assert_allclose(bounds, x.mean(axis=0) - price, rtol=1e-12)
    assert ras_lower_bounds(alike)[1] < 0.3 * ras_lower_bounds(independent)[1]
    with pytest.raises(ValueError, match="do not vary"):
        ras_lower_bounds(np.ones((10, 2)))


def test_ras_bounds_hold_for_every_config_at_once() -> None:
    # Thirty configs of known true Sharpe, 250 days, 100 repetitions: every bound holds at once
    # in at least 1 - delta of them (the bound is conservative: it holds in all).
    rng = np.random.default_rng(6)
    true = np.linspace(-0.05, 0.1, 30)  # per-period Sharpe ratios
    held = 0
    for _ in range(100):
        r = true + rng.normal(size=(250, 30))
        bounds, _ = ras_lower_bounds(r, 0.05, n_draws=500, seed=3)
        sharpe_true = true / 1.0  # unit volatility
        held += bool(np.all(bounds <= sharpe_true))
    assert held >= 95


def test_a_sessions_configs_against_the_default_under_each_answer() -> None:
    # Six configs on 1,500 days: two truly better than the default, three no better, one raced
    # out (its latest 300 days only). Each answer from its own function on the same numbers.
    rng = np.random.default_rng(7)
    market = rng.normal(0.0004, 0.01, 1500)
    default = market + rng.normal(0, 0.003, 1500)
    edges = [0.0006, 0.0005, 0.0, 0.0, 0.0]
    configs = {i: market + rng.normal(e, 0.003, 1500) for i, e in enumerate(edges, start=1)}
    configs[6] = (market + rng.normal(0.0, 0.003, 1500))[-300:]
    out = against_default(configs, default)
    tests = {i: sharpe_difference(r, default[-len(r) :], method="hac") for i, r in configs.items()}
    p = [tests[i].p_value for i in configs]
    assert [v.p_value for v in out.configs] == pytest.approx(p, rel=1e-12)
    assert [v.fdr for v in out.configs] == benjamini_hochberg(p, 0.10)
    assert [v.holm for v in out.configs] == holm(p, 0.05)
    assert out.beat_default_fdr == (1, 2) and out.q == 0.10
    assert out.configs[5].n_days == 300 and out.configs[5].ras_lower is None
    full = np.column_stack([configs[i] for i in range(1, 6)])
    excess = full - full.std(axis=0, ddof=1)[None, :] / default.std(ddof=1) * default[:, None]
    bounds, complexity = ras_lower_bounds(excess, 0.05)
    assert out.ras_complexity == pytest.approx(complexity, rel=1e-12)
    assert [v.ras_lower for v in out.configs[:5]] == pytest.approx(bounds * math.sqrt(252))
    # What RAS charges, annualised: below it no config can be certified. At 1,500 days and 5
    # configs the constants alone take about 4.6 of annualised Sharpe.
    t, n = 1500, 5
    charged = 2 * complexity + 3 * math.sqrt(2 * math.log(2 / 0.05) / t)
    charged += math.sqrt(2 * math.log(2 * n / 0.05) / t)
    assert out.ras_reach == pytest.approx(charged * math.sqrt(252), rel=1e-9)
    assert out.ras_reach > 4.6
