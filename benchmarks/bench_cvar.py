"""Mean-CVaR solve time: ``python -m benchmarks.bench_cvar [--quick]``.

Times :func:`~alphaloop.portfolio_opt.solve_mean_cvar` against skfolio's ``MeanRisk`` (CVaR,
maximise utility, same caps and risk aversion) on the same scenarios, on two kinds of scenario
sets:

* ``bootstrap``: a block bootstrap of a 504-day window at a 21-day horizon, what a
  ``cufolio_only`` trial feeds the solver (at most 484 distinct scenarios, many repeats);
* ``distinct``: fat-tailed random scenarios with no repeats, the solver's worst case.

Each time is the median over several scenario sets; the first solve of a shape (cvxpy
canonicalisation) is reported apart. It also times the solves of one simulated trial
(40 re-solves plus the min-CVaR baseline at 20 x 5,000). ``--quick`` uses two scenario sets
per kind, skips the 5,000-scenario rows and simulates 10 re-solves. Reports numbers only; it
asserts nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from skfolio import RiskMeasure
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop.portfolio_opt import (
    bootstrap_scenarios,
    empirical_cvar,
    solve_mean_cvar,
    solve_min_cvar,
)
from benchmarks._report import SummaryRow, parse_quick, timed

N_ASSETS = 20
ALPHA = 0.95
MAX_WEIGHT = 0.25
RISK_AVERSION = 2.0
N_RUNS = 5
HISTORY_DAYS = 2_000
WINDOW = 504
HORIZON = 21


def _history(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0, 0.01, (HISTORY_DAYS, 1))
    betas = rng.uniform(0.5, 1.5, N_ASSETS)
    return 0.0003 + market * betas + rng.normal(0.0, 0.012, (HISTORY_DAYS, N_ASSETS))


def _bootstrap(history: np.ndarray, run: int, n_scenarios: int) -> np.ndarray:
    window = history[run * 50 : run * 50 + WINDOW]
    return bootstrap_scenarios(window, HORIZON, n_scenarios, np.random.default_rng(run))


def _distinct(run: int, n_scenarios: int) -> np.ndarray:
    rng = np.random.default_rng(1_000 + run)
    loadings = rng.normal(size=(N_ASSETS, N_ASSETS)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(N_ASSETS) * 1e-4)
    shocks = rng.standard_t(4, size=(n_scenarios, N_ASSETS)) @ chol.T
    return 0.7 * shocks + rng.normal(0.003, 0.002, N_ASSETS)


def _objective(scenarios: np.ndarray, weights: np.ndarray) -> float:
    cvar = empirical_cvar(-(scenarios @ weights), ALPHA)
    return RISK_AVERSION * cvar - float(scenarios.mean(axis=0) @ weights)


def _skfolio(scenarios: np.ndarray) -> np.ndarray:
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MAXIMIZE_UTILITY,
        risk_aversion=RISK_AVERSION,
        cvar_beta=ALPHA,
        min_weights=0.0,
        max_weights=MAX_WEIGHT,
    )
    return model.fit(scenarios).weights_


def bench_versus_skfolio(
    make: Callable[[int], np.ndarray], with_skfolio: bool = True, n_runs: int = N_RUNS
) -> dict[str, float]:
    """Median solve times (ours, skfolio) and the worst relative objective gap over n_runs."""
    first, _ = timed(lambda: solve_mean_cvar(make(-1), ALPHA, MAX_WEIGHT, RISK_AVERSION))
    ours_t, theirs_t, gaps = [], [], []
    for run in range(n_runs):
        scen = make(run)
        t, sol = timed(lambda s=scen: solve_mean_cvar(s, ALPHA, MAX_WEIGHT, RISK_AVERSION))
        ours_t.append(t)
        if with_skfolio:
            t, w = timed(lambda s=scen: _skfolio(s))
            theirs_t.append(t)
            # Positive gap: skfolio's weights are worse than ours by that fraction.
            gaps.append((_objective(scen, w) - sol.objective) / abs(sol.objective))
    out = {"ours_first_s": first, "ours_median_s": float(np.median(ours_t))}
    if with_skfolio:
        out["skfolio_median_s"] = float(np.median(theirs_t))
        out["ratio"] = out["skfolio_median_s"] / out["ours_median_s"]
        out["max_rel_objective_gap"] = float(max(gaps, key=abs))
    return out


def bench_trial(history: np.ndarray, n_rebalances: int = 40) -> dict[str, float]:
    """Solver time of one simulated trial: re-solves with turnover plus the min-CVaR baseline."""
    began = time.perf_counter()
    prev = None
    for k in range(n_rebalances):
        scen = bootstrap_scenarios(
            history[k * 21 : k * 21 + WINDOW], HORIZON, 5_000, np.random.default_rng(k)
        )
        prev = solve_mean_cvar(scen, ALPHA, MAX_WEIGHT, RISK_AVERSION, prev, 0.001).weights
        solve_min_cvar(scen, ALPHA, MAX_WEIGHT)
    return {"trial_solves": 2 * n_rebalances, "trial_seconds": time.perf_counter() - began}


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    rows = []
    for kind in ("bootstrap", "distinct"):
        key = f"{kind}_10000_"
        rows.append(
            (
                f"Mean-CVaR solve, 20 x 10,000 {kind}: skfolio / ours",
                f"{results[key + 'ratio']:.1f}x",
                f"{results[key + 'ours_median_s'] * 1e3:.0f} ms vs "
                f"{results[key + 'skfolio_median_s'] * 1e3:.0f} ms, objective gap "
                f"{results[key + 'max_rel_objective_gap']:.1e}",
            )
        )
    return rows


def main(quick: bool = False) -> dict[str, Any]:
    """Runs the benchmarks, prints a table and returns the numbers."""
    n_runs = 2 if quick else N_RUNS
    sizes = ((10_000, True),) if quick else ((10_000, True), (5_000, False))
    history = _history()
    kinds: dict[str, Callable[[int, int], np.ndarray]] = {
        "bootstrap": lambda run, n: _bootstrap(history, run + 1, n),
        "distinct": _distinct,
    }
    results: dict[str, Any] = {"n_assets": N_ASSETS, "alpha": ALPHA, "n_runs": n_runs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skfolio's solver chatter is not the measurement
        for kind, make in kinds.items():
            for n_scen, with_sk in sizes:
                found = bench_versus_skfolio(
                    lambda run, m=make, n=n_scen: m(run, n), with_sk, n_runs
                )
                results.update({f"{kind}_{n_scen}_{key}": v for key, v in found.items()})
        results.update(bench_trial(history, 10 if quick else 40))

    print(
        f"Mean-CVaR, {N_ASSETS} assets, alpha={ALPHA}, cap={MAX_WEIGHT}, "
        f"risk_aversion={RISK_AVERSION}; medians of {n_runs} scenario sets"
    )
    print(f"  {'scenarios':<22}{'ours':>10}{'skfolio':>10}{'ratio':>8}{'obj gap':>11}{'first':>9}")
    for kind in kinds:
        for n_scen, _ in sizes:
            key = f"{kind}_{n_scen}_"
            sk = results.get(key + "skfolio_median_s")
            print(
                f"  {kind + ' x ' + format(n_scen, ','):<22}"
                f"{results[key + 'ours_median_s'] * 1e3:>8.1f}ms"
                + (f"{sk * 1e3:>8.0f}ms" if sk is not None else f"{'-':>10}")
                + (f"{results[key + 'ratio']:>7.1f}x" if sk is not None else f"{'-':>8}")
                + (
                    f"{results[key + 'max_rel_objective_gap']:>11.1e}"
                    if sk is not None
                    else f"{'-':>11}"
                )
                + f"{results[key + 'ours_first_s'] * 1e3:>7.0f}ms"
            )
    print(
        f"  one trial: {results['trial_solves']} solves at {N_ASSETS} x 5,000 (bootstrap) "
        f"in {results['trial_seconds']:.2f} s"
    )
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
