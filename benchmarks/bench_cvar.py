"""Mean-CVaR solve time against skfolio, cold: ``python -m benchmarks.bench_cvar [--quick]``.

Every solve here is a *cold* solve of a new problem, which is what a trial does at each
rebalance: fresh scenarios and :func:`~alphaloop.portfolio_opt.start_sequence` first, so nothing
is carried over from an earlier solve. It compares, side by side in one run and on the same
scenarios:

* ours: :func:`~alphaloop.portfolio_opt.solve_mean_cvar` (scenario generation around a dense
  interior point, certified by a CVaR lower bound);
* former: the previous solver (HiGHS dual simplex on the full dual LP, whose arrays now go to
  HiGHS directly rather than through cvxpy), still selectable through the private
  ``cvar._SOLVER`` flag; its first solve of a new shape (building the LP's layout) is excluded
  (a session pays it once), and its warm re-solve of the *identical* problem is reported
  apart, never as the headline;
* skfolio's ``MeanRisk`` (CVaR, maximise utility, same caps and risk aversion; Clarabel).

Scenario sets: ``distinct`` fat-tailed random scenarios with no repeats (the headline, at 20
assets and at 50/100/200/392 assets), and ``bootstrap`` (a block bootstrap of a 504-day window
at a 21-day horizon: at most 484 distinct rows among 10,000, which both our solvers merge
exactly and skfolio does not; at up to 1,024 distinct rows ``solve_mean_cvar`` keeps the cached
dual simplex, so there "ours" and "former" are the same code, both cold). Each cell is the
median over several scenario sets; the objective gap is the worst ``(theirs - ours) / |ours|``
(positive: ours is better) and ``cert`` is our own certificate (exact objective minus the lower
bound, relative).

It also times whole trials (``cufolio_only`` and ``unified`` on the embedded sp500 data, a small
PPO budget, median of 5 seeds) with each solver and prints the largest change of the trial
objective between them. ``--quick`` uses fewer scenario sets, skips skfolio and the former
solver where they take tens of seconds, and runs 2 seeds per mode. Reports numbers only; it
asserts nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

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
    cvar,
    empirical_cvar,
    solve_mean_cvar,
    start_sequence,
)
from benchmarks._report import SummaryRow, parse_quick, timed

ALPHA = 0.95
RISK_AVERSION = 2.0
N_SCENARIOS = 10_000
HISTORY_DAYS = 2_000
WINDOW = 504
HORIZON = 21
SIZES = (50, 100, 200, 392)
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


def _distinct(n_assets: int, run: int) -> np.ndarray:
    rng = np.random.default_rng(1_000 + run)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(n_assets) * 1e-4)
    shocks = rng.standard_t(4, size=(N_SCENARIOS, n_assets)) @ chol.T
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
def solver(name: str) -> Iterator[None]:
    """Selects ``"cutting"`` (ours) or ``"simplex"`` (the former solver) for the block."""
    before = cvar._SOLVER
    cvar._SOLVER = name
    try:
        yield
    finally:
        cvar._SOLVER = before


def _cold(scenarios: np.ndarray) -> tuple[float, Any]:
    cap = _cap(scenarios.shape[1])
    start_sequence()
    return timed(lambda: solve_mean_cvar(scenarios, ALPHA, cap, RISK_AVERSION))


def _certificate(scenarios: np.ndarray) -> float:
    """Our relative certificate gap (exact objective minus lower bound) on one problem."""
    atoms = _lp.compress(scenarios, pad=False)
    found = _cutting.solve(
        atoms.returns,
        atoms.probabilities,
        ALPHA,
        _cap(scenarios.shape[1]),
        RISK_AVERSION,
        scenarios.mean(axis=0),
        None,
        0.0,
    )
    return (found.upper - found.lower) / abs(found.upper)


def bench_case(
    make: Callable[[int], np.ndarray], n_runs: int, with_former: bool, n_skfolio: int
) -> dict[str, float]:
    """Medians (ours, former, skfolio) over ``n_runs`` problems, worst gaps and certificate."""
    ours_t, former_t, warm_t, sk_t, gaps, former_gaps, certs = [], [], [], [], [], [], []
    if with_former:  # the former solver's first solve of a shape lays it out; not timed
        with solver("simplex"):
            _cold(make(-1))
    for run in range(n_runs):
        scen = make(run)
        t, sol = _cold(scen)
        ours_t.append(t)
        certs.append(_certificate(scen))
        if with_former:
            with solver("simplex"):
                t, old = _cold(scen)
                former_t.append(t)
                # The identical problem again, warm-started: what a cached re-solve costs.
                t, _ = timed(lambda s=scen: solve_mean_cvar(s, ALPHA, _cap(s.shape[1]), 2.0))
                warm_t.append(t)
            former_gaps.append((old.objective - sol.objective) / abs(sol.objective))
        if run < n_skfolio:
            t, w = timed(lambda s=scen: _skfolio(s))
            sk_t.append(t)
            gaps.append((_objective(scen, w) - sol.objective) / abs(sol.objective))
    out: dict[str, float] = {"ours_s": statistics.median(ours_t), "cert": max(certs)}
    if with_former:
        out["former_s"] = statistics.median(former_t)
        out["former_warm_s"] = statistics.median(warm_t)
        out["former_gap"] = max(former_gaps, key=abs)
    if sk_t:
        out["skfolio_s"] = statistics.median(sk_t)
        out["skfolio_runs"] = len(sk_t)
        out["ratio"] = out["skfolio_s"] / out["ours_s"]
        out["gap"] = max(gaps, key=abs)
    return out


def bench_trials(n_seeds: int) -> dict[str, Any]:
    """Trial wall times per mode with each solver (median over seeds) and the largest change of
    the trial objective between the solvers."""
    from alphaloop.knobs import TrialConfig
    from alphaloop.market import load_market
    from alphaloop.trials import TrialBudget, run_trial

    data = load_market("sp500")
    budget = TrialBudget(total_timesteps=2_048, n_envs=2)
    out: dict[str, Any] = {}
    for mode in ("cufolio_only", "unified"):
        run_trial(mode, TrialConfig(), data, budget, seed=99)  # one-off costs, both solvers
        with solver("simplex"):
            run_trial(mode, TrialConfig(), data, budget, seed=99)
        times: dict[str, list[float]] = {"cutting": [], "simplex": []}
        objectives: dict[str, list[float]] = {"cutting": [], "simplex": []}
        for seed in range(n_seeds):
            for name in ("cutting", "simplex"):
                with solver(name):
                    t, result = timed(
                        lambda s=seed, m=mode: run_trial(m, TrialConfig(), data, budget, seed=s)
                    )
                times[name].append(t)
                objectives[name].append(result.objective)
        diffs = np.abs(np.subtract(objectives["cutting"], objectives["simplex"]))
        out[mode] = {
            "ours_s": statistics.median(times["cutting"]),
            "former_s": statistics.median(times["simplex"]),
            "max_objective_change": float(diffs.max()),
            "seeds": n_seeds,
        }
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
            f"{boot['ours_s'] * 1e3:.0f} ms vs {boot['skfolio_s'] * 1e3:.0f} ms; former solver "
            f"cold {boot['former_s'] * 1e3:.0f} ms, warm re-solve "
            f"{boot['former_warm_s'] * 1e3:.0f} ms",
        )
    )
    big = results[f"distinct_{SIZES[-1]}"]
    rows.append(
        (
            f"Mean-CVaR cold solve, {SIZES[-1]} x 10,000 distinct",
            f"{big['ours_s']:.2f} s",
            "target <= 1 s"
            + (f"; skfolio {big['skfolio_s']:.1f} s" if "skfolio_s" in big else "")
            + f"; certificate {big['cert']:.0e}",
        )
    )
    for mode, r in results.get("trials", {}).items():
        rows.append(
            (
                f"one {mode} trial (small PPO budget, median of {r['seeds']}): former / ours",
                f"{r['former_s'] / r['ours_s']:.2f}x",
                f"{r['ours_s']:.2f} s vs {r['former_s']:.2f} s; objective change "
                f"{r['max_objective_change']:.1e}",
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
        large = n >= 200
        runs = 2 if large or quick else 3
        cases.append(
            (
                f"distinct_{n}",
                lambda run, n=n: _distinct(n, run),
                runs,
                not large and not quick,  # the former solver takes minutes there
                (1 if large else runs) if not quick or n <= 50 else 0,
            )
        )
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skfolio's solver chatter is not the measurement
        for name, make, runs, with_former, n_sk in cases:
            results[name] = bench_case(make, runs, with_former, n_sk)
            print(f"  ... {name} done ({time.perf_counter() - began:.0f} s)", flush=True)
        results["trials"] = bench_trials(2 if quick else 5)

    print(
        f"Mean-CVaR cold solves, alpha={ALPHA}, risk_aversion={RISK_AVERSION}, 10,000 scenarios, "
        f"cap {CAP_SMALL} (20 assets) / {CAP_LARGE}; medians"
    )
    print(
        f"  {'problem':<18}{'ours':>10}{'former':>10}{'warm*':>10}{'skfolio':>10}"
        f"{'sk/ours':>9}{'gap':>10}{'cert':>9}"
    )
    for name, *_ in cases:
        r = results[name]
        print(
            f"  {name:<18}{_ms(r['ours_s'])}{_ms(r.get('former_s'))}{_ms(r.get('former_warm_s'))}"
            f"{_ms(r.get('skfolio_s'))}"
            + (f"{r['ratio']:>8.1f}x{r['gap']:>10.1e}" if "ratio" in r else f"{'-':>9}{'-':>10}")
            + f"{r['cert']:>9.0e}"
        )
    print("  * former solver re-solving the identical problem, warm-started (not a trial's case)")
    for mode, r in results["trials"].items():
        print(
            f"  one {mode} trial, median of {r['seeds']}: ours {r['ours_s']:.2f} s, former "
            f"{r['former_s']:.2f} s ({r['former_s'] / r['ours_s']:.2f}x); largest objective "
            f"change {r['max_objective_change']:.1e}"
        )
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
