"""The engines before and after a change, side by side in one run:
``python -m benchmarks.bench_engines --before REV [--rounds N] [--quick]``.

Exports the package of git revision ``REV`` to a temporary folder and runs the same measurements
on it and on this checkout, each side in a fresh process per round (the sides alternate, so load
on a shared machine falls on both alike; each process warms up before it is timed):

* trials on the embedded S&P 500 data, default knobs and budget: ``ppo_only``, ``cufolio_only``,
  ``unified``, and a ``cufolio_only`` trial whose Mean-CVaR solves have many distinct scenarios
  (10,000 scenarios from a 2,000-day window: about 2,000 atoms a solve). For each, the median
  seconds of each side, their ratio, and whether the daily returns are the same bit for bit
  (else the largest difference);
* Mean-CVaR solves, cold, on 10,000 distinct fat-tailed scenarios (20 and 392 assets): seconds,
  the certificate (exact objective minus its lower bound, relative, from each side's own
  scenario-generation solver) and the difference of the objectives between the sides;
* the efficient frontier, 30 points at 20 and 392 assets x 10,000 distinct scenarios: seconds,
  the worst certificate of a point, the largest CVaR difference between the sides.

Ratios are before / after: above 1 the change made it faster. ``--quick`` runs one round, one
seed a trial mode and a 10-point frontier. Needs git and the repository's history. Reports
numbers only; it asserts nothing, since timings depend on the machine and its load.
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
# What a side's process runs: only names both the former and today's package have.
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
    from alphaloop.trials import TrialBudget, run_trial
    data = load_market("sp500")
    for name, mode, knobs, settings in job["cases"]:
        config, budget = TrialConfig(**knobs), TrialBudget(**settings)
        run_trial(mode, config, data, budget, seed=1000)  # imports, LP shapes, baselines
        entry = out[name] = {"seconds": [], "returns": [], "objectives": []}
        for seed in job["seeds"]:
            began = time.perf_counter()
            result = run_trial(mode, config, data, budget, seed=seed)
            entry["seconds"].append(time.perf_counter() - began)
            entry["returns"].append([float(x) for x in result.daily_returns])
            entry["objectives"].append(float(result.objective))
else:
    from alphaloop.portfolio_opt import (
        _cutting, _lp, efficient_frontier, solve_mean_cvar, start_sequence)
    for n_assets, runs in job["solves"]:
        cap = 0.25 if n_assets <= 20 else 0.05
        solve_mean_cvar(distinct(n_assets, 99), 0.95, cap, 2.0)  # warm-up
        entry = out[f"solve {n_assets}"] = {"seconds": [], "objectives": [], "certs": []}
        for run in range(runs):
            scen = distinct(n_assets, run)
            start_sequence()
            began = time.perf_counter()
            solution = solve_mean_cvar(scen, 0.95, cap, 2.0)
            entry["seconds"].append(time.perf_counter() - began)
            entry["objectives"].append(solution.objective)
            atoms = _lp.compress(scen, pad=False)
            found = _cutting.solve(atoms, 0.95, cap, 2.0, scen.mean(0), None, 0.0)
            entry["certs"].append((found.upper - found.lower) / abs(found.upper))
    for n_assets, points in job["frontiers"]:
        cap = 0.25 if n_assets <= 20 else 0.05
        scen = distinct(n_assets, 0)
        began = time.perf_counter()
        frontier = efficient_frontier(scen, 0.95, cap, points)
        out[f"frontier {n_assets}"] = {
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
    ("ppo_only", "ppo_only", {}, {}),
    ("cufolio_only", "cufolio_only", {}, {}),
    ("unified", "unified", {}, {}),
    (
        "cufolio_only, 2,000-day window",
        "cufolio_only",
        {"n_scenarios": 10_000},
        {"scenario_window": 2_000},
    ),
]


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


def measure(before: Path, rounds: int, quick: bool) -> dict[str, dict[str, list[dict]]]:
    """Every round's results of each side, the sides alternating."""
    seeds = [0] if quick else [0, 1]
    jobs = [
        {"kind": "trials", "cases": TRIALS, "seeds": seeds},
        {
            "kind": "solver",
            "solves": [[20, 3], [392, 1]],
            "frontiers": [[20, 10 if quick else 30], [392, 10 if quick else 30]],
        },
    ]
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


def _median(entries: list[dict]) -> float:
    return statistics.median(s for entry in entries for s in entry["seconds"])


def _largest_gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for xs, ys in zip(a, b, strict=True) for x, y in zip(xs, ys, strict=True))


def report(results: dict[str, dict[str, list[dict]]]) -> list[tuple[str, str]]:
    """The rows printed: medians, ratios, sameness of results and certificates."""
    before, after = results["before"], results["after"]
    rows = []
    for name in before:
        old, new = before[name], after[name]
        t_old, t_new = _median(old), _median(new)
        timing = f"before {t_old:7.3f} s   after {t_new:7.3f} s   {t_old / t_new:5.2f}x"
        if "returns" in old[0]:
            gap = _largest_gap(old[0]["returns"], new[0]["returns"])
            same = "same daily returns bit for bit" if gap == 0 else f"returns differ by {gap:.1e}"
            rows.append((name, f"{timing}   {same}"))
        elif "cvars" in old[0]:
            gap = _largest_gap([old[0]["cvars"]], [new[0]["cvars"]])
            certs = f"worst certificate {max(old[0]['certs']):.0e} -> {max(new[0]['certs']):.0e}"
            rows.append((name, f"{timing}   {certs}, CVaRs differ by {gap:.1e}"))
        else:
            gap = _largest_gap([old[0]["objectives"]], [new[0]["objectives"]])
            cert_old = max(c for e in old for c in e["certs"])
            cert_new = max(c for e in new for c in e["certs"])
            rows.append(
                (
                    name,
                    f"{timing}   worst certificate {cert_old:.0e} -> {cert_new:.0e}, "
                    f"objectives differ by {gap:.1e}",
                )
            )
    return rows


def main(revision: str, rounds: int, quick: bool) -> dict[str, Any]:
    """Measures ``revision`` and this checkout side by side and prints the table."""
    with tempfile.TemporaryDirectory(prefix="alphaloop-before-") as folder:
        before = export(revision, Path(folder))
        results = measure(before, rounds, quick)
    rows = report(results)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"\nbefore = {revision}, after = this checkout; medians over {rounds} round(s), each "
        "side in a fresh process per round; ratio before / after"
    )
    print_rows(rows)
    if load is not None:
        print(f"  load average at the end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load)}")
    return {"results": results, "rows": rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides (default 3)")
    parser.add_argument("--quick", action="store_true", help="one round, fewer seeds and points")
    args = parser.parse_args()
    main(args.before, 1 if args.quick else args.rounds, args.quick)
