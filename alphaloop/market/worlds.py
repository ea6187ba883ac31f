"""Synthetic markets where the right answer is known: a null market no allocation rule can beat
1/N in, a tied market where no knob setting beats the default either, a flat market where no
strategy at all has an edge, and a market with a planted edge that one region of the Mean-CVaR
knobs captures.

They exist to measure the research loop's selection and gates on data that cannot fool the
measurement (``benchmarks/bench_generalisation.py``): on the null market every GO is a false
discovery; on the tied and flat markets so is every pick that is not the default; on the
planted one a pick that does not beat the default is a miss. All are i.i.d. over days (a
Student-t common factor plus Student-t idiosyncratic shocks, 5 degrees of freedom), so nothing
in the past predicts the future beyond the fixed parameters written here, and the same seed
always gives the same prices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# The knob region the planted market rewards (see :func:`planted_prices`): short holding periods.
PLANTED_HOLD_DAYS = 5
# Fifteen years of trading days: split 60/20/20, three years each of VALIDATION and TEST, the
# window lengths of the embedded S&P 500 set.
WORLD_DAYS = 15 * 252
_T_DOF = 5.0


def _prices(rets: np.ndarray, start: str) -> pd.DataFrame:
    """Prices starting at 100 from daily simple returns (one more row than ``rets``)."""
    n_days, n_assets = rets.shape
    growth = np.vstack([np.ones(n_assets), np.cumprod(1.0 + rets, axis=0)])
    index = pd.bdate_range(start=start, periods=n_days + 1, name="date")
    return pd.DataFrame(100.0 * growth, index=index, columns=[f"A{i:02d}" for i in range(n_assets)])


def _factor_shocks(
    rng: np.random.Generator, n_days: int, n_assets: int, rho: float, factor_ar: float = 0.0
) -> np.ndarray:
    """Unit-variance Student-t shocks with pairwise correlation ``rho`` (one common factor).

    ``factor_ar`` makes the common factor an AR(1) of that coefficient, still of unit variance
    (``x_t = phi x_{t-1} + sqrt(1 - phi^2) e_t``): autocorrelated noise with the same law for
    every day's cross-section, so no book's expected return changes.
    """
    scale = np.sqrt((_T_DOF - 2.0) / _T_DOF)
    market = rng.standard_t(_T_DOF, size=(n_days, 1)) * scale
    idio = rng.standard_t(_T_DOF, size=(n_days, n_assets)) * scale
    if factor_ar:
        innovations, market = market * np.sqrt(1.0 - factor_ar**2), market.copy()
        for t in range(1, n_days):
            market[t] = factor_ar * market[t - 1] + innovations[t]
    return np.sqrt(rho) * market + np.sqrt(1.0 - rho) * idio


def _check(n_days: int, n_assets: int, correlation: float, factor_ar: float = 0.0) -> None:
    if n_days < 2 or n_assets < 2:
        raise ValueError(f"need n_days >= 2 and n_assets >= 2, got {n_days} and {n_assets}")
    if not 0.0 <= correlation < 1.0:
        raise ValueError(f"correlation must be in [0, 1), got {correlation}")
    if not -1.0 < factor_ar < 1.0:
        raise ValueError(f"factor_ar must be in (-1, 1), got {factor_ar}")


def null_prices(
    n_days: int = WORLD_DAYS,
    n_assets: int = 10,
    seed: int = 0,
    start: str = "2005-01-03",
    *,
    drift: float = 0.0004,
    daily_vol: float = 0.01,
    correlation: float = 0.3,
    factor_ar: float = 0.0,
) -> pd.DataFrame:
    """A market where no allocation rule beats 1/N in expectation, out of sample or in.

    Every asset has the same daily drift, the same volatility and the same correlation with
    every other (exchangeable assets), and days are independent. Whatever weights a rule
    chooses from the past, its expected return is ``drift``; among fully invested long-only
    portfolios of exchangeable assets equal weight has the least variance, so it has the
    highest expected Sharpe, and any other rule only adds variance and trading costs. A
    search that reports beating 1/N here, or the default config by more than their tie, found
    the luck of its window.

    The drift and volatility give 1/N an annual Sharpe of about 1.2 (with the default 0.3
    correlation), so the absolute gates (Sharpe above 0.8 and the like) are often passed and
    it is the excess gates that have to say NO-GO. ``factor_ar`` makes the common factor
    autocorrelated (see :func:`_factor_shocks`): every asset loads on it alike, so nothing
    changes but the noise's autocorrelation.
    """
    _check(n_days, n_assets, correlation, factor_ar)
    rng = np.random.default_rng(seed)
    rets = drift + daily_vol * _factor_shocks(rng, n_days, n_assets, correlation, factor_ar)
    return _prices(rets, start)


def tied_prices(
    n_days: int = WORLD_DAYS,
    n_assets: int = 10,
    seed: int = 0,
    start: str = "2005-01-03",
    *,
    drift: float = 0.0007,
    daily_vol: float = 0.01,
    correlation: float = 0.9,
    factor_ar: float = 0.0,
) -> pd.DataFrame:
    """A market where every long-only book ties: no knob setting beats the default config.

    The null market's exchangeable assets (:func:`null_prices`), but so correlated that
    diversification is worth next to nothing: a book spread over k of the assets has variance
    ``vol**2 * (rho + (1 - rho) / k)``, so the default's cap of a quarter (k >= 4) and 1/N
    (k = 10) differ in expected Sharpe by under 1% (0.91 against 0.925 of the variance), far
    below what any window can measure. On :func:`null_prices` (correlation 0.3) a search that
    moves the default towards 1/N finds a real, if small, edge; here it finds none, so a pick
    that is not the default is a false discovery. Trading costs are the one difference left:
    a config that trades less pays less, a real edge that folds spanning years can detect, so a
    measurement that wants no edge at all trades this market without costs
    (``TrialBudget(eval_cost_bps=0)``, as the generalisation benchmark does).

    The drift gives every book an annual Sharpe of about 1.2, so the absolute gates do not
    decide: the excess gates have to say NO-GO.
    """
    return null_prices(
        n_days,
        n_assets,
        seed,
        start,
        drift=drift,
        daily_vol=daily_vol,
        correlation=correlation,
        factor_ar=factor_ar,
    )


def flat_prices(
    n_days: int = WORLD_DAYS,
    n_assets: int = 10,
    seed: int = 0,
    start: str = "2005-01-03",
    *,
    daily_vol: float = 0.01,
    correlation: float = 0.3,
) -> pd.DataFrame:
    """A market where no strategy has an edge at all: the null market's assets without drift.

    Whatever weights a rule holds, chosen from the past of i.i.d. days, its expected daily
    return is zero, so every config's expected Sharpe is zero: the default, 1/N and every other
    knob setting tie exactly, not nearly. On :func:`tied_prices` a book closer to 1/N keeps a
    diversification gain of under 1% of Sharpe, too small to measure but real; here there is
    none, and the assets are only as correlated as on the null market (0.3), so configs differ
    much more from day to day than they do on the tied market, which makes window luck easier
    to mistake for an edge. Every pick that is not the default is a false discovery. As on the
    tied market, trading costs would hand a config that trades less a real edge, so a
    measurement that wants none trades it without costs. The absolute gates fail here (no
    Sharpe to speak of): this market measures selection, the tied one the gates.
    """
    return null_prices(
        n_days, n_assets, seed, start, drift=0.0, daily_vol=daily_vol, correlation=correlation
    )


def planted_prices(
    n_days: int = WORLD_DAYS,
    n_assets: int = 30,
    seed: int = 0,
    start: str = "2005-01-03",
    *,
    n_calm: int = 5,
    calm_vol: float = 0.006,
    wild_vol: float = 0.03,
    drift: float = 0.0012,
    correlation: float = 0.2,
    factor_ar: float = 0.0,
) -> pd.DataFrame:
    """A market with a planted edge for short Mean-CVaR holding periods (``cufolio_hold_days``
    of about :data:`PLANTED_HOLD_DAYS`), and for Mean-CVaR over 1/N.

    Every asset has the same daily drift, but ``n_calm`` of them (placed at random) are calm
    (``calm_vol``) and the rest wild (``wild_vol``, five times as volatile by default). The
    highest-Sharpe portfolio holds the calm assets and little else; 1/N spends most of its
    risk on the wild ones. The Mean-CVaR solve sees each asset's risk sharply from two years of
    history but its mean only through that history's noise, which is largest for the wild
    assets. Over a holding period of ``h`` days the scenario means grow as ``h`` and their
    CVaR as ``sqrt(h)``: with short holds risk decides, and the book sits in the calm assets;
    with the default 21 days and longer the noisy means of the wild assets decide more often,
    and the book chases them for no expected gain and more variance. The edge is real out of
    sample because the volatilities are fixed for the whole history; it is checked in
    ``tests/market/test_worlds.py`` and measured against the default in the benchmark.

    The drift is large on purpose (the calm assets alone have an annual Sharpe of about 5): a
    Sharpe gap between two books of the same drift scales with the drift, and measuring the
    gates' power needs a gap that three years of TEST can tell from luck. So are the 25 wild
    assets to 5 calm ones: the more wild assets, the surer the default's noisy means find one
    to chase, so the edge is there in every market, not in some seeds only. With 30 assets the
    planted config beats the default on TEST with a paired z above 3.1 (the paired test's 1.645
    plus the deflated Sharpe's usual hurdle) on 38 of the first 40 seeds, median z 4.7, and
    above 1.645 on all 40. With 10 assets (5 wild, this market's former size) the z passed 3.1
    on 5 of 16 seeds and 1.645 on 12, median 2.3: the optimum itself failed the gates in most
    markets, which left their power unmeasured. ``factor_ar``: see :func:`null_prices`.
    """
    _check(n_days, n_assets, correlation, factor_ar)
    if not 1 <= n_calm < n_assets:
        raise ValueError(f"n_calm must be in [1, n_assets), got {n_calm}")
    rng = np.random.default_rng(seed)
    vol = np.r_[np.full(n_calm, calm_vol), np.full(n_assets - n_calm, wild_vol)]
    rng.shuffle(vol)
    rets = drift + vol * _factor_shocks(rng, n_days, n_assets, correlation, factor_ar)
    return _prices(rets, start)


# The graded markets (see :func:`graded_prices`): the embedded S&P 500 set's span, 33 years.
GRADED_DAYS = 33 * 252
# Their last six years: VALIDATION and TEST three years each, as on the embedded set, so the
# folds have 27 years before them.
GRADED_EVAL_DAYS = 3 * 252
# The common daily drift per unit of edge: the planted config's annualised Sharpe over the
# default's on unseen data is ``edge`` at ``drift = edge * DRIFT_PER_EDGE``, traded without
# costs. Measured on long unseen markets (``python -m benchmarks.bench_power --arm grades``
# prints the check for every grade).
DRIFT_PER_EDGE = 0.002


def graded_prices(
    edge: float = 0.5,
    n_days: int = GRADED_DAYS,
    n_assets: int = 30,
    seed: int = 0,
    start: str = "1990-01-02",
    *,
    factor_ar: float = 0.0,
) -> pd.DataFrame:
    """A planted market whose edge is graded: the planted config (``cufolio_hold_days`` =
    :data:`PLANTED_HOLD_DAYS`, other knobs at their defaults) beats the default config by
    ``edge`` of annualised Sharpe on unseen data, traded without costs.

    The planted market's structure (:func:`planted_prices`: five calm assets among 30, the
    rest wild, one drift for all) with assets half correlated (0.5) and the wild ones two and
    a half times as volatile (0.02 a day against 0.008), as long-only equity books are: every
    book's returns correlate about 0.9 with every other's, so three years of TEST tell a Sharpe
    difference of 0.5 from luck with a z near 2.2, and 1/N, which spends its risk on the wild
    assets, trails both Mean-CVaR books.

    Every fully invested book earns the common drift, and a Mean-CVaR solve's weights do not
    change when one constant is added to every asset's scenarios (its mean rises by it and its
    CVaR falls by it), so the same seed gives the same books at any drift and every book's
    Sharpe is its drift over its volatility: the edge of any book over another grows linearly
    with the drift, and ``edge = 0`` is a market where every config ties exactly (no drift:
    every Sharpe is 0, and the success criteria fail by themselves). The linearity holds up to
    the compounding between rebalances; the benchmark checks every grade on long unseen data.
    Costs would add a term that does not scale (the planted config trades four times as often
    as the default), so these markets are meant to be traded without them
    (``TrialBudget(eval_cost_bps=0)``).
    """
    if not 0.0 <= edge <= 5.0:
        raise ValueError(f"edge must be in [0, 5] (annualised Sharpe), got {edge}")
    return planted_prices(
        n_days,
        n_assets,
        seed,
        start,
        calm_vol=0.008,
        wild_vol=0.02,
        drift=edge * DRIFT_PER_EDGE,
        correlation=0.5,
        factor_ar=factor_ar,
    )
