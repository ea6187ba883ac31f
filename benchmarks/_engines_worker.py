"""One side of ``bench_engines`` in its own process: ``python _engines_worker.py JOB``.

Run with ``PYTHONPATH`` set to the tree being measured (this checkout or an earlier commit's
export), so it uses only names both the former and today's package have. Every Mean-CVaR solve
ends in ``cvar._check_objective(exact, bound, status, what)`` on both sides; the bound is a
certified lower bound when ``_cutting.solve`` made it, else the LP's optimum. Prints one line,
:data:`MARKER` and the results as JSON.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
import warnings
from typing import Any

import numpy as np

MARKER = "@@result "
ALPHA, RISK_AVERSION = 0.95, 2.0
# Folds of a search trial here: the three a session once ran (sessions now run as many as the
# history holds, raced; three keep a trial comparable across revisions).
FOLDS = 3


def distinct(n_assets: int, seed: int, n_scenarios: int) -> np.ndarray:
    """Fat-tailed scenarios with no repeats (Student-t shocks through random loadings)."""
    rng = np.random.default_rng(1_000 + seed)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(n_assets) * 1e-4)
    shocks = rng.standard_t(4, size=(n_scenarios, n_assets)) @ chol.T
    return 0.7 * shocks + rng.normal(0.003, 0.002, n_assets)


def market(spec: Any) -> Any:
    """The embedded S&P 500, or a synthetic market of ``[n_assets, n_days]``."""
    from alphaloop.market import load_market, split, synthetic_prices

    if spec == "sp500":
        return load_market("sp500")
    n_assets, n_days = spec
    return split(synthetic_prices(n_days, n_assets, seed=7), source="synthetic")


def trials(job: dict[str, Any]) -> dict[str, Any]:
    """Search trials of three folds, each solve's certificate recorded."""
    from alphaloop.knobs import TrialConfig
    from alphaloop.portfolio_opt import _cutting, cvar
    from alphaloop.trials import TrialBudget, build_folds

    solves: list[list[Any]] = []
    bounded = [False]
    solve, check = _cutting.solve, cvar._check_objective

    def by_bound(*args: Any, **kwargs: Any) -> Any:
        found = solve(*args, **kwargs)
        bounded[0] = True
        return found

    def checked(exact: float, bound: float, status: str, what: str) -> str:
        status = check(exact, bound, status, what)
        solves.append([exact, bound, bounded[0], status])
        bounded[0] = False
        return status

    _cutting.solve, cvar._check_objective = by_bound, checked
    out: dict[str, Any] = {}
    for name, mode, knobs, settings, spec in job["cases"]:
        data = market(spec)
        case = (mode, TrialConfig(**knobs), data, TrialBudget(**settings))
        folds = build_folds(data, FOLDS)
        run_folds(case, folds, 1000)  # imports, LP shapes, baselines
        entry = out[name] = {
            "seconds": [],
            "cpu": [],
            "sharpes": [],
            "objectives": [],
            "returns": [],
            "solves": [],
        }
        for seed in job["seeds"]:
            solves.clear()
            began, cpu = time.perf_counter(), time.process_time()
            results = run_folds(case, folds, seed)
            entry["seconds"].append(time.perf_counter() - began)
            entry["cpu"].append(time.process_time() - cpu)
            entry["sharpes"].append([r.metrics.sharpe for r in results])
            entry["objectives"].append([r.objective for r in results])
            entry["returns"].append([x for r in results for x in r.daily_returns])
            entry["solves"].append(list(solves))
    return out


def run_folds(case: tuple[Any, ...], folds: list[Any], seed: int) -> list[Any]:
    """One search trial: ``case`` (mode, config, market, budget) on every fold."""
    from alphaloop.trials import fold_budget, run_trial

    mode, config, data, budget = case
    return [
        run_trial(mode, config, data, fold_budget(budget, len(folds), i), seed, window=rows)
        for i, rows in enumerate(folds)
    ]


def solves(job: dict[str, Any]) -> dict[str, Any]:
    """Cold solves of fresh distinct scenarios, each with its own certificate."""
    from alphaloop.portfolio_opt import _cutting, _lp, solve_mean_cvar, start_sequence

    def certified(atoms: Any, *rest: Any) -> Any:  # the former solve took the atoms' two arrays
        if "probabilities" in inspect.signature(_cutting.solve).parameters:
            return _cutting.solve(atoms.returns, atoms.probabilities, *rest)
        return _cutting.solve(atoms, *rest)

    out: dict[str, Any] = {}
    warmed: set[int] = set()
    for n_assets, n_scenarios, cap, runs in job["cells"]:
        if n_assets not in warmed:  # imports and first-call costs, not timed
            solve_mean_cvar(distinct(n_assets, 99, 1_000), ALPHA, cap, RISK_AVERSION)
            warmed.add(n_assets)
        name = f"cold solve, {n_assets} x {n_scenarios:,}, cap {cap:.0%}"
        entry = out[name] = {"seconds": [], "cpu": [], "objectives": [], "certs": []}
        for run in range(runs):
            scen = distinct(n_assets, run, n_scenarios)
            start_sequence()
            began, cpu = time.perf_counter(), time.process_time()
            solution = solve_mean_cvar(scen, ALPHA, cap, RISK_AVERSION)
            entry["seconds"].append(time.perf_counter() - began)
            entry["cpu"].append(time.process_time() - cpu)
            entry["objectives"].append(solution.objective)
            atoms = _lp.compress(scen, pad=False)
            found = certified(atoms, ALPHA, cap, RISK_AVERSION, scen.mean(0), None, 0.0)
            entry["certs"].append((found.upper - found.lower) / abs(found.upper))
    return out


def frontiers(job: dict[str, Any]) -> dict[str, Any]:
    """Efficient frontiers, each point's certificate and CVaR."""
    from alphaloop.portfolio_opt import efficient_frontier

    out: dict[str, Any] = {}
    for n_assets, n_scenarios, points, n_jobs in job["cells"]:
        cap = 0.25 if n_assets <= 20 else 0.05
        scen = distinct(n_assets, 0, n_scenarios)
        began, cpu = time.perf_counter(), time.process_time()
        frontier = efficient_frontier(scen, ALPHA, cap, points, n_jobs=n_jobs)
        name = f"frontier, {points} points, {n_assets} x {n_scenarios:,}, {n_jobs} threads"
        out[name] = {
            "seconds": [time.perf_counter() - began],
            "cpu": [time.process_time() - cpu],
            "cvars": [p.cvar for p in frontier.points],
            "certs": [(p.cvar - p.lower_bound) / abs(p.cvar) for p in frontier.points],
        }
    return out


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    job = json.loads(sys.argv[1])
    kinds = {"trials": trials, "solves": solves, "frontiers": frontiers}
    print(MARKER + json.dumps(kinds[job["kind"]](job)))
