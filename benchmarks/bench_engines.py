"""Trials and solves before and after a change, side by side in one run:
``python -m benchmarks.bench_engines --before REV [--mode MODE] [--rounds N] [--seeds N]
[--solver] [--quick]``.

Exports the package of git revision ``REV`` to a temporary folder (removed after) and runs the
same measurements on it and on this checkout, each side in a fresh process per round with
``PYTHONPATH`` set to its own tree and the same interpreter. The sides alternate, so load on a
shared machine falls on both alike, and each process runs every case once before timing it.

Trials are search trials as a session runs them: the default three purged folds on the
embedded S&P 500 data (20 stocks), default budget, one seed a trial:

* ``cufolio_only`` at the default knobs (a rebalance's bootstrap merges into at most ~500
  distinct scenarios: the LP is solved whole on either side);
* ``cufolio_only`` with 10,000 scenarios drawn from a 2,000-day window (about 2,000 distinct
  scenarios a solve: more than the 1,024 solved whole, so scenario generation);
* ``ppo_only`` at the default knobs (16,384 PPO steps shared by the folds).

For each: the median seconds of a trial on each side and their ratio, after / before (below 1:
faster now), the ratio in each round and that of the median CPU seconds (less moved by other
load than wall time); whether the folds' results are the same (the largest difference of a fold's
Sharpe ratio, of a fold's objective, of a daily return); and how each Mean-CVaR solve of the
trials was certified. Every solve compares the exact objective of its returned weights with a
second number: a lower bound on the optimum where the solve carries one (the gap between them
bounds how far from optimal the weights can be), else the LP's optimum as the solver reported
it (a consistency check, no proof). The table counts the solves of each kind and their worst and
median gaps.

``--solver`` adds cold Mean-CVaR solves on 10,000 distinct fat-tailed scenarios (20 and 392
assets: seconds, each side's certificate, the objectives' difference) and efficient frontiers
(30 points at 20 and 392 assets: seconds, the worst certificate of a point, the largest CVaR
difference). ``--quick`` runs one round of one seed (and 10-point frontiers). Needs git and the
repository's history. Reports numbers only; it asserts nothing, since timings depend on the
machine and its load. Run it niced on a shared machine (``nice -n 10``): the sides inherit it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._report import print_rows

REPO = Path(__file__).resolve().parents[1]
MARKER = "@@result "
# What a side's process runs: only names both the former and today's package have. Every
# Mean-CVaR solve ends in ``cvar._check_objective(exact, bound, status, what)`` on both sides;
# the bound is a certified lower bound when ``_cutting.solve`` made it, else the LP's optimum.
WORKER = (
    r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
job = json.loads(sys.argv[1])
out = {}

def distinct(n_assets, seed):
    rng = np.random.default_rng(1_000 + seed)
    loadings = rng.normal(size=(n_assets, n_assets)) * 0.01
    chol = np.linalg.cholesky(loadings @ loadings.T + np.eye(n_assets) * 1e-4)
    shocks = rng.standard_t(4, size=(10_000, n_assets)) @ chol.T
    return 0.7 * shocks + rng.normal(0.003, 0.002, n_assets)

if job["kind"] == "trials":
    from alphaloop.knobs import TrialConfig
    from alphaloop.market import load_market
    from alphaloop.portfolio_opt import _cutting, cvar
    from alphaloop.trials import DEFAULT_FOLDS, TrialBudget, build_folds, fold_budget, run_trial
    data = load_market("sp500")
    folds = build_folds(data, DEFAULT_FOLDS)
    solves, bounded = [], [False]
    solve, check = _cutting.solve, cvar._check_objective

    def by_bound(*args, **kwargs):
        found = solve(*args, **kwargs)
        bounded[0] = True
        return found

    def checked(exact, bound, status, what):
        status = check(exact, bound, status, what)
        solves.append([exact, bound, bounded[0], status])
        bounded[0] = False
        return status

    _cutting.solve, cvar._check_objective = by_bound, checked

    def trial(mode, config, budget, seed):
        return [
            run_trial(mode, config, data, fold_budget(budget, len(folds), i), seed, window=rows)
            for i, rows in enumerate(folds)
        ]

    for name, mode, knobs, settings in job["cases"]:
        config, budget = TrialConfig(**knobs), TrialBudget(**settings)
        trial(mode, config, budget, 1000)  # imports, LP shapes, baselines
        entry = out[name] = {
            "seconds": [], "cpu": [], "sharpes": [], "objectives": [], "returns": [],
            "solves": []}
        for seed in job["seeds"]:
            solves.clear()
            began, cpu = time.perf_counter(), time.process_time()
            results = trial(mode, config, budget, seed)
            entry["seconds"].append(time.perf_counter() - began)
            entry["cpu"].append(time.process_time() - cpu)
            entry["sharpes"].append([r.metrics.sharpe for r in results])
            entry["objectives"].append([r.objective for r in results])
            entry["returns"].append([x for r in results for x in r.daily_returns])
            entry["solves"].append(list(solves))
else:
    import inspect
    from alphaloop.portfolio_opt import (
        _cutting, _lp, efficient_frontier, solve_mean_cvar, start_sequence)

    def certified(atoms, *rest):  # the former solve took the atoms' two arrays
        if "probabilities" in inspect.signature(_cutting.solve).parameters:
            return _cutting.solve(atoms.returns, atoms.probabilities, *rest)
        return _cutting.solve(atoms, *rest)

    for n_assets, runs in job["solves"]:
        cap = 0.25 if n_assets <= 20 else 0.05
        solve_mean_cvar(distinct(n_assets, 99), 0.95, cap, 2.0)  # warm-up
        entry = out[f"cold solve, {n_assets} assets"] = {
            "seconds": [], "objectives": [], "certs": []}
        for run in range(runs):
            scen = distinct(n_assets, run)
            start_sequence()
            began = time.perf_counter()
            solution = solve_mean_cvar(scen, 0.95, cap, 2.0)
            entry["seconds"].append(time.perf_counter() - began)
            entry["objectives"].append(solution.objective)
            atoms = _lp.compress(scen, pad=False)
            found = certified(atoms, 0.95, cap, 2.0, scen.mean(0), None, 0.0)
            entry["certs"].append((found.upper - found.lower) / abs(found.upper))
    for n_assets, points in job["frontiers"]:
        cap = 0.25 if n_assets <= 20 else 0.05
        scen = distinct(n_assets, 0)
        began = time.perf_counter()
        frontier = efficient_frontier(scen, 0.95, cap, points)
        out[f"frontier, {n_assets} assets"] = {
            "seconds": [time.perf_counter() - began],
            "cvars": [p.cvar for p in frontier.points],
            "certs": [(p.cvar - p.lower_bound) / abs(p.cvar) for p in frontier.points],
        }
print("""
    + repr(MARKER)
    + r""" + json.dumps(out))
"""
)
TRIALS = [
    ("cufolio_only, default", "cufolio_only", {}, {}),
    (
        "cufolio_only, 2,000-day window",
        "cufolio_only",
        {"n_scenarios": 10_000},
        {"scenario_window": 2_000},
    ),
    ("ppo_only, default", "ppo_only", {}, {}),
]
# A solve's gap counts as certified within the solver's own tolerance (``cvar._OBJECTIVE_RTOL``
# on an objective of at most 1 in size).
TOLERANCE = 1e-6


def export(revision: str, into: Path) -> Path:
    """The files of ``revision`` (as git has them) written below ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_side(tree: Path, job: dict[str, Any]) -> dict[str, Any]:
    """Runs the worker on the package in ``tree``; its results."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(job)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the worker failed in {tree}:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARKER) :])


def jobs_of(modes: list[str], seeds: int, solver: bool, quick: bool) -> list[dict[str, Any]]:
    """What each side runs in a round."""
    cases = [case for case in TRIALS if case[1] in modes]
    jobs: list[dict[str, Any]] = [{"kind": "trials", "cases": cases, "seeds": list(range(seeds))}]
    if solver:
        points = 10 if quick else 30
        jobs.append(
            {
                "kind": "solver",
                "solves": [[20, 3], [392, 1]],
                "frontiers": [[20, points], [392, points]],
            }
        )
    return jobs


def measure(before: Path, rounds: int, jobs: list[dict[str, Any]]) -> dict[str, dict[str, list]]:
    """Every round's results of each side, the sides alternating."""
    sides = {"before": before, "after": REPO}
    results: dict[str, dict[str, list[dict]]] = {"before": {}, "after": {}}
    for round_ in range(rounds):
        order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
        for job in jobs:
            for side in order:
                print(f"  round {round_ + 1}: {job['kind']} {side} ...", flush=True)
                for name, entry in run_side(sides[side], job).items():
                    results[side].setdefault(name, []).append(entry)
    return results


def _median(entries: list[dict], key: str = "seconds") -> float:
    return statistics.median(s for entry in entries for s in entry[key])


def _largest_gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(
        (abs(x - y) for xs, ys in zip(a, b, strict=True) for x, y in zip(xs, ys, strict=True)),
        default=0.0,
    )


def _sameness(old: dict, new: dict) -> str:
    """How far the folds' results of one round are apart between the sides."""
    sharpe = _largest_gap(old["sharpes"], new["sharpes"])
    objective = _largest_gap(old["objectives"], new["objectives"])
    returns = _largest_gap(old["returns"], new["returns"])
    folds = sum(len(s) for s in old["sharpes"])
    if sharpe == objective == returns == 0.0:
        return f"the same bit for bit ({folds} folds)"
    return (
        f"fold Sharpe differs by up to {sharpe:.1e} ({folds} folds), fold objective by "
        f"{objective:.1e}, a daily return by {returns:.1e}"
    )


def certification(entries: list[dict]) -> str:
    """The solves of one side's trials: how many carry a lower bound, their gaps."""
    solves = [s for entry in entries for seed in entry["solves"] for s in seed]
    if not solves:
        return "no Mean-CVaR solve"
    bounded = [exact - bound for exact, bound, by_bound, _ in solves if by_bound]
    checked = [abs(exact - bound) for exact, bound, by_bound, _ in solves if not by_bound]
    inaccurate = sum(status != "optimal" for *_, status in solves)
    parts = []
    if bounded:
        within = sum(gap <= TOLERANCE for gap in bounded)
        parts.append(
            f"{len(bounded)} by a lower bound (gap worst {max(bounded):.1e}, median "
            f"{statistics.median(bounded):.1e}; {within} within {TOLERANCE:.0e})"
        )
    if checked:
        parts.append(
            f"{len(checked)} by the LP's reported optimum only, no bound (|exact - LP| worst "
            f"{max(checked):.1e})"
        )
    return f"{len(solves)} solves: " + "; ".join(parts) + f"; {inaccurate} not optimal"


def _solver_row(name: str, old: list[dict], new: list[dict], timing: str) -> tuple[str, str]:
    if "cvars" in old[0]:
        gap = _largest_gap([old[0]["cvars"]], [new[0]["cvars"]])
        certs = f"worst certificate {max(old[0]['certs']):.0e} -> {max(new[0]['certs']):.0e}"
        return name, f"{timing}   {certs}, CVaRs differ by {gap:.1e}"
    gap = _largest_gap([old[0]["objectives"]], [new[0]["objectives"]])
    cert_old = max(c for e in old for c in e["certs"])
    cert_new = max(c for e in new for c in e["certs"])
    return (
        name,
        f"{timing}   worst certificate {cert_old:.0e} -> {cert_new:.0e}, "
        f"objectives differ by {gap:.1e}",
    )


def report(results: dict[str, dict[str, list[dict]]]) -> list[tuple[str, str]]:
    """The rows printed: medians, ratios, sameness of results and certificates."""
    before, after = results["before"], results["after"]
    rows = []
    for name in before:
        old, new = before[name], after[name]
        t_old, t_new = _median(old), _median(new)
        n = sum(len(entry["seconds"]) for entry in old)
        timing = (
            f"before {t_old:7.3f} s   after {t_new:7.3f} s   after / before {t_new / t_old:5.2f}"
        )
        if "sharpes" not in old[0]:
            rows.append(_solver_row(name, old, new, timing))
            continue
        by_round = ", ".join(
            f"{_median([b]) / _median([a]):.2f}" for a, b in zip(old, new, strict=True)
        )
        cpu = _median(new, "cpu") / _median(old, "cpu")
        rows.append((name, f"{timing}   (medians of {n} trials a side)"))
        rows.append(("  after / before", f"by round {by_round}; CPU seconds {cpu:.2f}"))
        rows.append(("  results", _sameness(old[0], new[0])))
        rows.append(("  certified before", certification(old)))
        rows.append(("  certified after", certification(new)))
    return rows


def main(
    revision: str, modes: list[str], rounds: int, seeds: int, solver: bool, quick: bool
) -> dict[str, Any]:
    """Measures ``revision`` and this checkout side by side and prints the table."""
    jobs = jobs_of(modes, seeds, solver, quick)
    with tempfile.TemporaryDirectory(prefix="alphaloop-before-") as folder:
        before = export(revision, Path(folder))
        results = measure(before, rounds, jobs)
    rows = report(results)
    print(
        f"\nbefore = {revision}, after = this checkout; {rounds} round(s) of {seeds} seed(s), "
        "each side in a fresh process per round, the sides alternating; a trial is 3 folds"
    )
    print_rows(rows)
    if hasattr(os, "getloadavg"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"  load average at the end (1, 5, 15 min): {load}")
    return {"results": results, "rows": rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument(
        "--mode",
        action="append",
        choices=sorted({case[1] for case in TRIALS}),
        help="trials of this mode only (repeatable; default: every case)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides (default 3)")
    parser.add_argument("--seeds", type=int, default=2, help="trials a case a round (default 2)")
    parser.add_argument("--solver", action="store_true", help="cold solves and frontiers too")
    parser.add_argument("--quick", action="store_true", help="one round of one seed")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seeds = 1, 1
    modes = args.mode or [case[1] for case in TRIALS]
    main(args.before, modes, args.rounds, args.seeds, args.solver, args.quick)
