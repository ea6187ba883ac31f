"""The markets with a known answer: the null's assets are exchangeable, the planted edge is
there out of sample, a graded edge is the drift alone, and all load by name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.knobs import TrialConfig
from alphaloop.market import (
    DRIFT_PER_EDGE,
    GRADED_DAYS,
    PLANTED_HOLD_DAYS,
    WORLD_DAYS,
    flat_prices,
    graded_prices,
    load_market,
    load_prices,
    null_prices,
    planted_prices,
    tied_prices,
)
from alphaloop.trials import TrialBudget, run_trial


def _returns(prices: pd.DataFrame) -> np.ndarray:
    return prices.pct_change().iloc[1:].to_numpy()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_null_assets_have_equal_means_and_vols(seed: int) -> None:
    r = _returns(null_prices(seed=seed))
    assert r.shape == (WORLD_DAYS, 10)
    # Each asset against the cross-section: the common factor cancels, so the t-statistic of
    # the mean difference is about N(0, 1) when the means are equal.
    diff = r - r.mean(axis=1, keepdims=True)
    t = diff.mean(axis=0) / (diff.std(axis=0, ddof=1) / np.sqrt(len(diff)))
    assert np.abs(t).max() < 4.0
    vols = r.std(axis=0, ddof=1)
    assert vols.max() / vols.min() < 1.1  # sampling error of each vol is about 1.5%
    np.testing.assert_allclose(vols, 0.01, rtol=0.06)


def test_planted_market_has_calm_and_wild_assets_with_one_drift() -> None:
    r = _returns(planted_prices(seed=4))
    vols = np.sort(r.std(axis=0, ddof=1))
    np.testing.assert_allclose(vols[:5], 0.006, rtol=0.08)
    np.testing.assert_allclose(vols[5:], 0.03, rtol=0.08)
    np.testing.assert_allclose(r.mean(axis=0), 0.0012, atol=4 * 0.03 / np.sqrt(len(r)))


def test_in_the_tied_market_a_quarter_cap_and_one_over_n_have_the_same_sharpe() -> None:
    r = _returns(tied_prices(seed=5))
    assert np.corrcoef(r, rowvar=False)[np.triu_indices(10, 1)].mean() == pytest.approx(
        0.9, abs=0.01
    )
    # The default's cap holds at least four assets; four against ten, equal weights, on the
    # same fifteen years: in expectation their Sharpes differ by under 1% (sqrt(0.925 / 0.91)),
    # realised by a few hundredths, where three years of one window measure to about +-0.3.
    four, ten = r[:, :4].mean(axis=1), r.mean(axis=1)
    sharpe = [x.mean() / x.std(ddof=1) * np.sqrt(252) for x in (four, ten)]
    assert abs(sharpe[0] - sharpe[1]) < 0.06
    assert sharpe[1] == pytest.approx(1.17, abs=0.8)  # expected 1.17; 15 years measure +-0.26
    pd.testing.assert_frame_equal(load_prices("tied:5"), tied_prices(seed=5))


@pytest.mark.parametrize("seed", [0, 1])
def test_in_the_flat_market_no_book_drifts(seed: int) -> None:
    r = _returns(flat_prices(seed=seed))
    assert np.corrcoef(r, rowvar=False)[np.triu_indices(10, 1)].mean() == pytest.approx(
        0.3, abs=0.03
    )
    # Any fixed book's mean daily return is zero: the t-statistic of a concentrated one, 1/N
    # and a long-short difference of the two are about N(0, 1).
    one, ten = r[:, 0], r.mean(axis=1)
    for x in (one, ten, one - ten):
        assert abs(x.mean() / (x.std(ddof=1) / np.sqrt(len(x)))) < 4.0
    pd.testing.assert_frame_equal(load_prices(f"flat:{seed}"), flat_prices(seed=seed))


def test_generators_are_seeded_and_load_by_name() -> None:
    pd.testing.assert_frame_equal(load_prices("null:3"), null_prices(seed=3))
    pd.testing.assert_frame_equal(load_prices("planted"), planted_prices(seed=0))
    assert not null_prices(seed=3).equals(null_prices(seed=4))
    with pytest.raises(InvalidRequest, match="planted data seed must be an integer, got 'x'"):
        load_prices("planted:x")
    with pytest.raises(ValueError, match="n_calm"):
        planted_prices(n_calm=30)


@pytest.mark.slow
def test_planted_config_beats_the_default_on_test() -> None:
    planted = TrialConfig(cufolio_hold_days=PLANTED_HOLD_DAYS)
    gains = []
    for seed in range(3):
        data = load_market(f"planted:{seed}")
        base = run_trial("cufolio_only", TrialConfig(), data, window="test")
        good = run_trial("cufolio_only", planted, data, window="test")
        gains.append(good.objective - base.objective)
        # and the planted config beats 1/N, which holds the wild assets too
        assert good.objective > good.baselines["equal_weight"].sharpe
    assert np.mean(gains) > 0.3, gains


def test_a_graded_market_loads_by_name_with_the_embedded_sets_windows() -> None:
    data = load_market("graded:0.5:3")
    assert data.returns.shape == (GRADED_DAYS, 30)
    assert data.test.stop - data.test.start == data.val.stop - data.val.start == 3 * 252
    pd.testing.assert_frame_equal(load_prices("graded:0.5:3"), graded_prices(0.5, seed=3))
    pd.testing.assert_frame_equal(load_prices("graded:1"), graded_prices(1.0, seed=0))
    with pytest.raises(
        InvalidRequest, match=r"graded:EDGE or graded:EDGE:SEED .* got graded:'x:1'"
    ):
        load_prices("graded:x:1")
    with pytest.raises(InvalidRequest, match="edge must be in"):
        load_prices("graded:9")


def test_a_graded_edge_is_the_drift_alone_and_leaves_every_book_as_it_was() -> None:
    # The same seed at two grades: every asset's every return moves by the drift and nothing
    # else, so a Mean-CVaR solve decides the same book (its mean rises by the drift, its CVaR
    # falls by it) and a book's Sharpe moves by the drift over its volatility.
    flat, graded = (load_market(f"graded:{edge}:4") for edge in (0, 1))
    np.testing.assert_allclose(graded.returns - flat.returns, DRIFT_PER_EDGE, atol=1e-12)
    cost_free = TrialBudget(eval_cost_bps=0.0)
    books = [
        run_trial("cufolio_only", TrialConfig(), d, cost_free, window="test")
        for d in (flat, graded)
    ]
    # Up to the compounding of the horizon's scenarios and of the days between solves.
    np.testing.assert_allclose(books[0].final_weights, books[1].final_weights, atol=5e-4)
    assert books[1].metrics.sharpe > books[0].metrics.sharpe


def test_an_autocorrelated_factor_changes_only_the_noises_autocorrelation() -> None:
    def lag_one(prices: pd.DataFrame) -> float:
        book = _returns(prices).mean(axis=1)  # 1/N: the factor and a tenth of the rest
        return float(np.corrcoef(book[1:], book[:-1])[0, 1])

    assert abs(lag_one(null_prices(seed=2))) < 0.05
    # The factor carries 0.3 of each asset's variance and 1/N averages the rest down to 0.07,
    # so 1/N's lag-one autocorrelation is about 0.4 * 0.3 / 0.37 = 0.32.
    assert lag_one(null_prices(seed=2, factor_ar=0.4)) == pytest.approx(0.32, abs=0.05)
    assert null_prices(seed=2, factor_ar=0.0).equals(null_prices(seed=2))
    with pytest.raises(ValueError, match="factor_ar"):
        null_prices(factor_ar=1.0)
