"""Mean-CVaR solve time against skfolio, cold: ``python -m benchmarks.bench_cvar [--quick]
[--before REV]``.

Every solve here is a *cold* solve of a new problem, which is what a trial does at each
rebalance: fresh scenarios and :func:`~alphaloop.portfolio_opt.start_sequence` first, so nothing
is carried over from an earlier solve. It compares, side by side in one run and on the same
scenarios:

* ours: :func:`~alphaloop.portfolio_opt.solve_mean_cvar` (HiGHS on the Mean-CVaR dual, by
  scenario generation above 1,024 distinct scenarios, certified by a CVaR lower bound);
* whole: the same LP of every scenario in one HiGHS solve (what ``solve_mean_cvar`` does up to
  1,024 distinct scenarios), to show what scenario generation saves; the first solve of a new
  shape (laying out the LP) is excluded, and a warm re-solve of the *identical* problem is
  reported apart, never as the headline;
* skfolio's ``MeanRisk`` (CVaR, maximise utility, same caps and risk aversion; Clarabel).

Scenario sets: ``distinct`` fat-tailed random scenarios with no repeats (the headline, 20
assets by 10,000, and the sizes users bring: 20, 100 and 400 assets by 1,000, 5,000 and 10,000
scenarios), and ``bootstrap`` (a block bootstrap of a 504-day window
at a 21-day horizon: at most 484 distinct rows among 10,000, which our solver merges exactly and
skfolio does not; there "ours" and "whole" are the same code, both cold). Each cell is the
median over several scenario sets; the objective gap is the worst ``(theirs - ours) / |ours|``
(positive: ours is better) and ``cert`` is our own certificate (exact objective minus the lower
bound, relative). ``--before REV`` then times the same grid of cold solves on the code of git
revision ``REV`` and on this checkout side by side (``benchmarks/bench_engines.py --part
solves``, which also times frontiers and trials before and after).

``--quick`` uses fewer scenario sets and skips skfolio and the whole-set solve where they take
tens of seconds. Reports numbers only; it asserts nothing, since timings depend on the machine
and its load.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from skfolio import RiskMeasure
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop.portfolio_opt import (
    _cutting,
    _lp,
    bootstrap_scenarios,
    empirical_cvar,
    solve_mean_cvar,
    start_sequence,
)
from benchmarks._report import SummaryRow, timed

ALPHA = 0.95
RISK_AVERSION = 2.0
N_SCENARIOS = 10_000
HISTORY_DAYS = 2_000
WINDOW = 504
HORIZON = 21
SIZES = (20, 100, 400)
SCENARIO_COUNTS = (1_000, 5_000, 10_000)
# Caps: 0.25 at 20 assets (the trial default); 0.05 for the larger universes.
CAP_SMALL, CAP_LARGE = 0.25, 0.05


def _cap(n_assets: int) -> float:
    return CAP_SMALL if n_assets <= 20 else CAP_LARGE


def _history(n_assets: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0, 0.01, (HISTORY_DAYS, 1))
    betas = rng.uniform(0.5, 1.5, n_assets)
    return 0.0003 + market * betas + rng.normal(0.0, 0.012, (HISTORY_DAYS, n_assets))


def _bootstrap(history: np.ndarray, run: int) -> np.ndarray:
    window = history[run * 50 : run * 50 + WINDOW]
    return bootstrap_scenarios(window, HORIZON, N_SCENARIOS, np.random.default_rng(run))


def _distinct(n_assets: int, run: int, n_scenarios: int = N_SCENARIOS) -> np.ndarray:
    rng = np.random.default_rng(1_000 + run)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(n_assets) * 1e-4)
    shocks = rng.standard_t(4, size=(n_scenarios, n_assets)) @ chol.T
    return 0.7 * shocks + rng.normal(0.003, 0.002, n_assets)


def _objective(scenarios: np.ndarray, weights: np.ndarray) -> float:
    cvar_value = empirical_cvar(-(scenarios @ weights), ALPHA)
    return RISK_AVERSION * cvar_value - float(scenarios.mean(axis=0) @ weights)


def _skfolio(scenarios: np.ndarray) -> np.ndarray:
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MAXIMIZE_UTILITY,
        risk_aversion=RISK_AVERSION,
        cvar_beta=ALPHA,
        min_weights=0.0,
        max_weights=_cap(scenarios.shape[1]),
    )
    return model.fit(scenarios).weights_


@contextmanager
def whole_set() -> Iterator[None]:
    """Every problem of the block solved in one HiGHS solve of all its scenarios."""
    before = _cutting.WHOLE_SET
    _cutting.WHOLE_SET = 10**9
    try:
        yield
    finally:
        _cutting.WHOLE_SET = before


def _cold(scenarios: np.ndarray) -> tuple[float, Any]:
    cap = _cap(scenarios.shape[1])
    start_sequence()
    return timed(lambda: solve_mean_cvar(scenarios, ALPHA, cap, RISK_AVERSION))


def _certificate(scenarios: np.ndarray) -> float:
    """Our relative certificate gap (exact objective minus lower bound) on one problem."""
    atoms = _lp.compress(scenarios, pad=False)
    found = _cutting.solve(
        atoms,
        ALPHA,
        _cap(scenarios.shape[1]),
        RISK_AVERSION,
        scenarios.mean(axis=0),
        None,
        0.0,
    )
    return (found.upper - found.lower) / abs(found.upper)


def bench_case(
    make: Callable[[int], np.ndarray], n_runs: int, with_whole: bool, n_skfolio: int
) -> dict[str, float]:
    """Medians (ours, whole, skfolio) over ``n_runs`` problems, worst gaps and certificate."""
    ours_t, whole_t, warm_t, sk_t, gaps, whole_gaps, certs = [], [], [], [], [], [], []
    if with_whole:  # the whole-set first solve of a shape lays it out; not timed
        with whole_set():
            _cold(make(-1))
    for run in range(n_runs):
        scen = make(run)
        t, sol = _cold(scen)
        ours_t.append(t)
        certs.append(_certificate(scen))
        if with_whole:
            with whole_set():
                t, old = _cold(scen)
                whole_t.append(t)
                # The identical problem again, warm-started: what a cached re-solve costs.
                t, _ = timed(lambda s=scen: solve_mean_cvar(s, ALPHA, _cap(s.shape[1]), 2.0))
                warm_t.append(t)
            whole_gaps.append((old.objective - sol.objective) / abs(sol.objective))
        if run < n_skfolio:
            t, w = timed(lambda s=scen: _skfolio(s))
            sk_t.append(t)
            gaps.append((_objective(scen, w) - sol.objective) / abs(sol.objective))
    out: dict[str, float] = {"ours_s": statistics.median(ours_t), "cert": max(certs)}
    if with_whole:
        out["whole_s"] = statistics.median(whole_t)
        out["whole_warm_s"] = statistics.median(warm_t)
        out["whole_gap"] = max(whole_gaps, key=abs)
    if sk_t:
        out["skfolio_s"] = statistics.median(sk_t)
        out["skfolio_runs"] = len(sk_t)
        out["ratio"] = out["skfolio_s"] / out["ours_s"]
        out["gap"] = max(gaps, key=abs)
    return out


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    rows: list[SummaryRow] = []
    head = results["distinct_20"]
    rows.append(
        (
            "Mean-CVaR cold solve, 20 x 10,000 distinct: skfolio / ours",
            f"{head['ratio']:.1f}x",
            f"{head['ours_s'] * 1e3:.0f} ms vs {head['skfolio_s'] * 1e3:.0f} ms, gap "
            f"{head['gap']:.1e}; target >= 10x",
        )
    )
    boot = results["bootstrap_20"]
    rows.append(
        (
            "the same, 20 x 10,000 bootstrap (484 distinct rows): skfolio / ours",
            f"{boot['ratio']:.1f}x",
            f"{boot['ours_s'] * 1e3:.0f} ms vs {boot['skfolio_s'] * 1e3:.0f} ms; a warm "
            f"re-solve of the identical problem {boot['whole_warm_s'] * 1e3:.0f} ms",
        )
    )
    big = results[f"distinct_{SIZES[-1]}x{N_SCENARIOS}"]
    rows.append(
        (
            f"Mean-CVaR cold solve, {SIZES[-1]} x 10,000 distinct",
            f"{big['ours_s']:.2f} s",
            "target <= 0.5 s"
            + (f"; skfolio {big['skfolio_s']:.1f} s" if "skfolio_s" in big else "")
            + f"; certificate {big['cert']:.0e}",
        )
    )
    if "whole_s" in head:
        rows.append(
            (
                "the same 20 x 10,000 distinct in one HiGHS solve of all: whole / ours",
                f"{head['whole_s'] / head['ours_s']:.1f}x",
                f"{head['whole_s'] * 1e3:.0f} ms vs {head['ours_s'] * 1e3:.0f} ms",
            )
        )
    return rows


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return f"{'-':>10}"
    return f"{seconds * 1e3:>8.0f}ms" if seconds < 10 else f"{seconds:>9.1f}s"


def main(quick: bool = False) -> dict[str, Any]:
    """Runs the benchmarks, prints a table and returns the numbers."""
    n_runs = 3 if quick else 5
    results: dict[str, Any] = {"alpha": ALPHA, "risk_aversion": RISK_AVERSION, "n_runs": n_runs}
    history = _history(20)
    cases: list[tuple[str, Callable[[int], np.ndarray], int, bool, int]] = [
        ("distinct_20", lambda run: _distinct(20, run), n_runs, True, n_runs),
        ("bootstrap_20", lambda run: _bootstrap(history, run + 1), n_runs, True, n_runs),
    ]
    for n in SIZES:
        for n_scen in SCENARIO_COUNTS:
            if n == 20 and n_scen == N_SCENARIOS:
                continue  # the headline above
            large = n * n_scen > 100 * 5_000  # one solve of all scenarios, or skfolio, is long
            runs = 2 if large or quick else 3
            cases.append(
                (
                    f"distinct_{n}x{n_scen}",
                    lambda run, n=n, s=n_scen: _distinct(n, run, s),
                    runs,
                    not large and not quick and n_scen > _cutting.WHOLE_SET,
                    (0 if large else runs) if not quick or n <= 20 else 0,
                )
            )
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skfolio's solver chatter is not the measurement
        for name, make, runs, with_whole, n_sk in cases:
            results[name] = bench_case(make, runs, with_whole, n_sk)
            print(f"  ... {name} done ({time.perf_counter() - began:.0f} s)", flush=True)

    print(
        f"Mean-CVaR cold solves, alpha={ALPHA}, risk_aversion={RISK_AVERSION}, 10,000 scenarios "
        "unless the name says (assets x scenarios), "
        f"cap {CAP_SMALL} (20 assets) / {CAP_LARGE}; medians"
    )
    print(
        f"  {'problem':<20}{'ours':>10}{'whole':>10}{'warm*':>10}{'skfolio':>10}"
        f"{'sk/ours':>9}{'gap':>10}{'cert':>9}"
    )
    for name, *_ in cases:
        r = results[name]
        print(
            f"  {name:<20}{_ms(r['ours_s'])}{_ms(r.get('whole_s'))}{_ms(r.get('whole_warm_s'))}"
            f"{_ms(r.get('skfolio_s'))}"
            + (f"{r['ratio']:>8.1f}x{r['gap']:>10.1e}" if "ratio" in r else f"{'-':>9}{'-':>10}")
            + f"{r['cert']:>9.0e}"
        )
    print("  * the whole-set solve re-solving the identical problem, warm-started (not a trial's)")
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, no long references")
    parser.add_argument("--before", help="a git revision to time the grid's cold solves beside")
    args = parser.parse_args()
    main(args.quick)
    if args.before:
        from benchmarks import bench_engines

        bench_engines.main(args.before, ["solves"], 1 if args.quick else 3, 1, args.quick)
