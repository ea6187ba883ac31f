"""Romano & Wolf's StepM over the stationary bootstrap: its critical value against the closed
forms for independent and identical configs, the step-down, configs scored on fewer days,
Hansen's recentring, and the family-wise error rate on null families."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from alphaloop.validation.stepm import stepm


def family(
    rng: np.random.Generator, n: int, k: int, shared: float, edges: tuple[float, ...] = ()
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """A default and ``k`` configs that each add to the market noise of their own and, with
    weight ``shared``, noise they all share; ``edges`` raise the first configs' Sharpe by that
    much a year over the default's. The default's own noise is small, so the configs' excesses
    over it are as correlated as ``shared`` says."""
    market = rng.normal(0.0003, 0.01, n)
    default = market + rng.normal(0.0, 0.0002, n)
    common = rng.standard_normal(n)
    configs = {}
    for j in range(k):
        own = rng.standard_normal(n)
        x = market + 0.004 * (math.sqrt(shared) * common + math.sqrt(1 - shared) * own)
        if j < len(edges):
            x = x + edges[j] * x.std() / math.sqrt(252)
        configs[j] = x
    return configs, default


def test_independent_configs_get_sidaks_critical_value_and_clones_a_single_tests() -> None:
    rng = np.random.default_rng(0)
    independent = stepm(*family(rng, 3000, 10, 0.0))
    assert independent.critical[0] == pytest.approx(stats.norm.ppf(0.95 ** (1 / 10)), abs=0.15)
    clones = stepm(*family(rng, 3000, 10, 0.999))
    assert clones.critical[0] == pytest.approx(stats.norm.ppf(0.95), abs=0.15)
    assert independent.mean_block == 1.0  # no autocorrelation: blocks of one day


def test_the_step_down_rejects_strong_configs_first_then_a_weaker_one_at_a_lower_bar() -> None:
    # Ten configs far above the default and one just below Sidak's bar for twenty: step 1
    # rejects the ten, and the bar of the ten left (Sidak for ten) is low enough for the one.
    rng = np.random.default_rng(1)
    configs, default = family(rng, 3000, 20, 0.0, edges=(3.0,) * 10)
    first = stepm(configs, default).of(10)
    assert first is not None
    target = (stats.norm.ppf(0.95 ** (1 / 20)) + stats.norm.ppf(0.95 ** (1 / 10))) / 2
    x = configs[10]
    configs[10] = x + (target * first.sd - first.difference) * x.std() / math.sqrt(252)
    out = stepm(configs, default)
    weak = out.of(10)
    assert weak is not None
    assert all(out.of(j).step == 1 for j in range(10))  # type: ignore[union-attr]
    assert out.critical[1] < weak.t <= out.critical[0]  # found only once the strong are out
    assert weak.step == 2 and set(out.rejected) == set(range(11))


def test_a_config_identical_to_the_default_is_left_out_and_none_leaves_nothing() -> None:
    rng = np.random.default_rng(2)
    configs, default = family(rng, 600, 3, 0.3)
    configs[7] = default.copy()
    out = stepm(configs, default)
    assert [c.key for c in out.configs] == [0, 1, 2]
    empty = stepm({4: default.copy()}, default)
    assert empty.configs == () and empty.rejected == ()
    with pytest.raises(ValueError, match="no config"):
        stepm({}, default)
    with pytest.raises(ValueError, match="more than the default"):
        stepm({1: np.concatenate([default, default])}, default)


def test_a_config_scored_on_its_latest_days_is_judged_on_those_days() -> None:
    rng = np.random.default_rng(3)
    configs, default = family(rng, 2400, 4, 0.3, edges=(2.0,))
    configs[0] = configs[0][-800:]  # raced out after its most recent fold
    out = stepm(configs, default)
    c = out.of(0)
    assert c is not None and c.n_days == 800
    x, y = configs[0], default[-800:]
    expected = (x.mean() / x.std() - y.mean() / y.std()) * math.sqrt(252)
    assert c.difference == pytest.approx(expected, rel=1e-12)
    # Its spread is that of 800 days, not of 2,400: about sqrt(3) times the others'.
    others = np.mean([out.of(k).sd for k in (1, 2, 3)])  # type: ignore[union-attr]
    assert c.sd / others == pytest.approx(math.sqrt(3), rel=0.2)


def test_recentring_leaves_configs_far_below_the_default_out_of_the_maximum() -> None:
    rng = np.random.default_rng(4)
    configs, default = family(rng, 3000, 12, 0.0, edges=(1.2,))
    for j in range(2, 12):  # ten configs far worse than the default
        configs[j] = configs[j] - 4.0 * configs[j].std() / math.sqrt(252)
    plain, recentred = stepm(configs, default), stepm(configs, default, recentre=True)
    assert recentred.critical[0] < plain.critical[0]
    assert recentred.critical[0] == pytest.approx(stats.norm.ppf(0.95 ** (1 / 2)), abs=0.2)
    assert plain.of(0).t == recentred.of(0).t  # type: ignore[union-attr]


def test_the_same_series_always_give_the_same_verdicts() -> None:
    rng = np.random.default_rng(5)
    configs, default = family(rng, 900, 5, 0.5)
    assert stepm(configs, default) == stepm(configs, default)


@pytest.mark.slow
def test_on_null_families_it_names_a_config_about_alpha_of_the_time() -> None:
    # Twenty configs sharing half their noise, none better than the default: the share of
    # families in which any config is named is the family-wise error rate, 5% asked.
    rng = np.random.default_rng(6)
    sims, named = 120, 0
    for _ in range(sims):
        named += bool(stepm(*family(rng, 756, 20, 0.5), reps=499).rejected)
    assert named / sims <= 0.10
