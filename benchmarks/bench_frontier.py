"""Mean-CVaR frontier, warm against cold and skfolio: ``python -m benchmarks.bench_frontier``.

A frontier of 30 points (minimum CVaR to the largest return, evenly spaced targets, each a
certified solve of :func:`~alphaloop.portfolio_opt.efficient_frontier`) on fat-tailed distinct
scenarios, side by side in one run:

* warm-started: each point's first scenario subset is the tail of its neighbour's weights (the
  default);
* cold per point: every point starts from the equal-weight portfolio's tail, as a lone solve
  does (``warm_start=False``); same points, same certificates;
* warm-started on 2 threads (``n_jobs=2``): one walks up from minimum CVaR, one down from the
  largest return, until they meet;
* skfolio's ``MeanRisk(efficient_frontier_size=30)`` (CVaR, minimise risk, same cap; Clarabel)
  at 20 assets, a size it solves in seconds (at 392 assets one skfolio solve takes over a
  minute). Its CVaR gap is measured on the returns its own portfolios reach: ours is solved at
  those targets and ``(theirs - ours) / ours`` is reported (positive: ours is lower).

The goal set for the frontier is 30 points at 392 assets x 10,000 scenarios in 10 s or less on
2 CPU cores (see :mod:`alphaloop.portfolio_opt._cutting` for how a point is solved).
Each cell is the median over several scenario sets. ``--quick`` (a smoke run) uses one
scenario set and 10 points. Reports numbers only; it asserts nothing, since timings depend on
the machine and its load.
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

import numpy as np
from skfolio import RiskMeasure
from skfolio.optimization import MeanRisk, ObjectiveFunction

from alphaloop.portfolio_opt import efficient_frontier, empirical_cvar
from benchmarks._report import SummaryRow, parse_quick, timed
from benchmarks.bench_cvar import ALPHA, CAP_LARGE, CAP_SMALL, N_SCENARIOS, _distinct

POINTS = 30
LARGE, SMALL = 392, 20


def _cap(n_assets: int) -> float:
    return CAP_SMALL if n_assets <= 20 else CAP_LARGE


def bench_warm_cold(n_assets: int, n_points: int, n_runs: int) -> dict[str, float]:
    """Median seconds of a warm-started and a cold-per-point frontier, and the worst
    certificate (exact CVaR minus its lower bound, relative) and point-wise difference."""
    warm_t, cold_t, two_t, certs, diffs = [], [], [], [], []
    for run in range(n_runs):
        scen = _distinct(n_assets, run)
        t, warm = timed(lambda s=scen: efficient_frontier(s, ALPHA, _cap(n_assets), n_points))
        warm_t.append(t)
        t, cold = timed(
            lambda s=scen: efficient_frontier(s, ALPHA, _cap(n_assets), n_points, warm_start=False)
        )
        cold_t.append(t)
        t, two = timed(
            lambda s=scen: efficient_frontier(s, ALPHA, _cap(n_assets), n_points, n_jobs=2)
        )
        two_t.append(t)
        certs.extend((p.cvar - p.lower_bound) / p.cvar for p in warm.points)
        diffs.extend(
            abs(a.cvar - b.cvar) / b.cvar
            for other in (cold, two)
            for a, b in zip(warm.points, other.points, strict=True)
        )
        if any(p.status != "optimal" for p in (*warm.points, *cold.points, *two.points)):
            print(f"  ! run {run}: a point was recorded as inaccurate", flush=True)
    warm_s, cold_s = statistics.median(warm_t), statistics.median(cold_t)
    return {
        "warm_s": warm_s,
        "cold_s": cold_s,
        "speedup": cold_s / warm_s,
        "two_s": statistics.median(two_t),
        "cert": max(certs),
        "warm_cold_diff": max(diffs),
        "runs": n_runs,
        "points": n_points,
    }


def _skfolio(scenarios: np.ndarray, n_points: int) -> np.ndarray:
    model = MeanRisk(
        risk_measure=RiskMeasure.CVAR,
        objective_function=ObjectiveFunction.MINIMIZE_RISK,
        efficient_frontier_size=n_points,
        cvar_beta=ALPHA,
        min_weights=0.0,
        max_weights=_cap(scenarios.shape[1]),
    )
    return np.asarray(model.fit(scenarios).weights_)


def bench_skfolio(n_assets: int, n_points: int, n_runs: int) -> dict[str, float]:
    """Median seconds of skfolio's frontier and ours, and the worst CVaR gap at its returns."""
    ours_t, sk_t, gaps = [], [], []
    cap = _cap(n_assets)
    for run in range(n_runs):
        scen = _distinct(n_assets, run)
        t, _ = timed(lambda s=scen: efficient_frontier(s, ALPHA, cap, n_points))
        ours_t.append(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skfolio's solver chatter is not the measurement
            t, theirs = timed(lambda s=scen: _skfolio(s, n_points))
        sk_t.append(t)
        at_theirs = efficient_frontier(scen, ALPHA, cap, 2, targets=theirs @ scen.mean(axis=0))
        for w, p in zip(theirs, at_theirs.points, strict=True):
            gaps.append((empirical_cvar(-(scen @ w), ALPHA) - p.cvar) / p.cvar)
    ours_s, sk_s = statistics.median(ours_t), statistics.median(sk_t)
    return {
        "ours_s": ours_s,
        "skfolio_s": sk_s,
        "ratio": sk_s / ours_s,
        "gap": max(gaps, key=abs),
        "runs": n_runs,
        "points": n_points,
    }


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    big, sk = results[f"warm_cold_{LARGE}"], results[f"skfolio_{SMALL}"]
    return [
        (
            f"Mean-CVaR frontier, {big['points']} points, {LARGE} x 10,000 distinct, warm-started",
            f"{big['warm_s']:.1f} s",
            f"target <= 30 s; certificate {big['cert']:.0e}",
        ),
        (
            "the same on 2 threads (one walks up, one down, until they meet)",
            f"{big['two_s']:.1f} s",
            f"{big['warm_s'] / big['two_s']:.2f}x one thread",
        ),
        (
            "the same, cold per point / warm-started",
            f"{big['speedup']:.1f}x",
            f"{big['cold_s']:.1f} s vs {big['warm_s']:.1f} s; points differ by "
            f"{big['warm_cold_diff']:.0e}",
        ),
        (
            f"Mean-CVaR frontier, {sk['points']} points, {SMALL} x 10,000 distinct: skfolio / ours",
            f"{sk['ratio']:.1f}x",
            f"{sk['ours_s']:.2f} s vs {sk['skfolio_s']:.1f} s; CVaR gap {sk['gap']:.0e}",
        ),
    ]


def main(quick: bool = False) -> dict[str, Any]:
    """Runs the benchmarks, prints a table and returns the numbers."""
    n_points = 10 if quick else POINTS
    n_runs = 1 if quick else 3
    results: dict[str, Any] = {"alpha": ALPHA, "n_scenarios": N_SCENARIOS}
    results[f"warm_cold_{SMALL}"] = bench_warm_cold(SMALL, n_points, n_runs)
    print("  ... warm and cold at 20 assets done", flush=True)
    results[f"warm_cold_{LARGE}"] = bench_warm_cold(LARGE, n_points, n_runs)
    print(f"  ... warm and cold at {LARGE} assets done", flush=True)
    results[f"skfolio_{SMALL}"] = bench_skfolio(SMALL, n_points, 1 if quick else 2)
    print(
        f"Mean-CVaR efficient frontier, {n_points} points, alpha={ALPHA}, 10,000 distinct "
        f"scenarios, cap {CAP_SMALL} (20 assets) / {CAP_LARGE}; medians"
    )
    print(
        f"  {'assets':<8}{'warm':>9}{'cold':>9}{'cold/warm':>11}{'2 thr':>9}{'skfolio':>9}"
        f"{'sk/ours':>9}"
    )
    for n in (SMALL, LARGE):
        r = results[f"warm_cold_{n}"]
        sk = results.get(f"skfolio_{n}")
        their = f"{sk['skfolio_s']:>8.1f}s{sk['ratio']:>8.1f}x" if sk else f"{'-':>9}{'-':>9}"
        print(
            f"  {n:<8}{r['warm_s']:>8.2f}s{r['cold_s']:>8.2f}s{r['speedup']:>10.1f}x"
            f"{r['two_s']:>8.2f}s{their}"
        )
    big = results[f"warm_cold_{LARGE}"]
    print(
        f"  certificates: worst {big['cert']:.0e} (relative); cold and 2-thread points differ "
        f"from warm by {big['warm_cold_diff']:.0e} at most; skfolio's CVaR above ours by "
        f"{results[f'skfolio_{SMALL}']['gap']:.0e} at worst, on its own returns"
    )
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
