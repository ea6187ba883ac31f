"""The engines before and after a change, side by side in one run, at the sizes users bring:
``python -m benchmarks.bench_engines --before REV [--part PART] [--rounds N] [--seeds N]
[--quick]``.

Exports the package of git revision ``REV`` to a temporary folder (removed after) and runs the
same measurements on it and on this checkout, each side in a fresh process per round with
``PYTHONPATH`` set to its own tree and the same interpreter. The sides alternate, so load on a
shared machine falls on both alike, and each process runs every case once before timing it.
Three parts (``--part``, repeatable; default all):

* ``solves``: cold Mean-CVaR solves (``start_sequence()`` first, fresh scenarios each run) at
  20, 100 and 400 assets by 1,000, 5,000 and 10,000 distinct fat-tailed scenarios, and at 392
  assets by 10,000 with caps of 5% and 25% (the sizes the one-solver change was first timed
  at); risk aversion 2, alpha 0.95, cap 25% at 20 assets and 5% above. Each cell: the median
  seconds a side, after / before, each side's worst certificate (exact objective minus lower
  bound, relative) and how far the two sides' objectives are apart. Every row gives the ratio
  of CPU seconds too, less moved by other load than wall time.
* ``frontiers``: 30-point efficient frontiers (10 with ``--quick``) on 10,000 distinct
  scenarios at 20 and 400 assets, on two threads (``n_jobs=2``): seconds, each side's worst
  certificate, the largest CVaR difference of a point.
* ``trials``: search trials of three purged folds (the count sessions ran before they took every
  fold the history holds), default budget, one seed a trial: ``cufolio_only`` at the default
  knobs on the embedded S&P 500 (20 stocks; a rebalance's bootstrap merges into at most ~500
  distinct scenarios, solved whole), on synthetic markets of 100 and 400 assets (2,000 days),
  and with 10,000 scenarios drawn from a 2,000-day window (about 2,000 distinct scenarios a
  solve: scenario generation); ``ppo_only`` and ``unified`` at the default knobs (16,384 PPO
  steps shared by the folds). For each: the median seconds of a trial a side and their ratio,
  the ratio by round and that of the median CPU seconds (less moved by other load than wall
  time); whether the folds' results are the same (the largest difference of a fold's Sharpe
  ratio, of a fold's objective, of a daily return); and how each Mean-CVaR solve was certified
  (a lower bound and its gap, or only the LP's optimum as the solver reported it, no proof).

``--quick`` runs one round of one seed, 10-point frontiers and one solve a cell. Needs git and
the repository's history. Reports numbers only; it asserts nothing, since timings depend on
the machine and its load. Run it niced on a shared machine (``nice -n 10``): the sides
inherit it.
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

from benchmarks._engines_worker import MARKER
from benchmarks._report import print_rows

REPO = Path(__file__).resolve().parents[1]
# Run by path, so a side imports ``alphaloop`` from its own tree only.
WORKER = Path(__file__).resolve().parent / "_engines_worker.py"
PARTS = ("solves", "frontiers", "trials")
# (name, mode, knobs, budget settings, market: "sp500" or [n_assets, n_days] synthetic)
TRIALS: list[tuple[str, str, dict, dict, Any]] = [
    ("cufolio_only, S&P 500 (20 assets)", "cufolio_only", {}, {}, "sp500"),
    ("cufolio_only, 100 assets", "cufolio_only", {}, {}, [100, 2_000]),
    ("cufolio_only, 400 assets", "cufolio_only", {}, {}, [400, 2_000]),
    (
        "cufolio_only, 20 assets, 10,000 scenarios of a 2,000-day window",
        "cufolio_only",
        {"n_scenarios": 10_000},
        {"scenario_window": 2_000},
        "sp500",
    ),
    ("ppo_only, S&P 500", "ppo_only", {}, {}, "sp500"),
    ("unified, S&P 500", "unified", {}, {}, "sp500"),
]
# (n_assets, n_scenarios, cap): cap 25% at 20 assets, 5% above; and the first report's 392.
SOLVES = [
    *[(n, s, 0.25 if n <= 20 else 0.05) for n in (20, 100, 400) for s in (1_000, 5_000, 10_000)],
    (392, 10_000, 0.05),
    (392, 10_000, 0.25),
]
FRONTIERS = [(20, 10_000), (400, 10_000)]
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
        [sys.executable, str(WORKER), json.dumps(job)],
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


def jobs_of(parts: list[str], seeds: int, quick: bool) -> list[dict[str, Any]]:
    """What each side runs in a round: one job (one fresh process a side) per part."""
    jobs: list[dict[str, Any]] = []
    if "solves" in parts:
        runs = 1 if quick else 3
        cells = [[n, s, cap, runs if n * s <= 100 * 10_000 else 1] for n, s, cap in SOLVES]
        jobs.append({"kind": "solves", "cells": cells})
    if "frontiers" in parts:
        points = 10 if quick else 30
        jobs.append({"kind": "frontiers", "cells": [[n, s, points, 2] for n, s in FRONTIERS]})
    if "trials" in parts:
        jobs.append({"kind": "trials", "cases": TRIALS, "seeds": list(range(seeds))})
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


def _timing(old: list[dict], new: list[dict]) -> str:
    t_old, t_new = _median(old), _median(new)
    n = sum(len(entry["seconds"]) for entry in old)
    cpu = _median(new, "cpu") / _median(old, "cpu")
    return (
        f"before {t_old:8.3f} s   after {t_new:8.3f} s   after / before {t_new / t_old:6.2f}"
        f" (CPU {cpu:5.2f})   ({n} a side)"
    )


def _solver_row(name: str, old: list[dict], new: list[dict]) -> tuple[str, str]:
    """A cold solve's or a frontier's row: timing, certificates, how far the answers differ."""
    key = "cvars" if "cvars" in old[0] else "objectives"
    gap = max(_largest_gap([a[key]], [b[key]]) for a, b in zip(old, new, strict=True))
    cert_old = max(c for e in old for c in e["certs"])
    cert_new = max(c for e in new for c in e["certs"])
    what = "CVaRs" if key == "cvars" else "objectives"
    return (
        name,
        f"{_timing(old, new)}   certificate {cert_old:.0e} -> {cert_new:.0e}, "
        f"{what} differ by {gap:.1e}",
    )


def report(results: dict[str, dict[str, list[dict]]]) -> list[tuple[str, str]]:
    """The rows printed: medians, ratios, sameness of results and certificates."""
    before, after = results["before"], results["after"]
    rows = []
    for name in before:
        old, new = before[name], after[name]
        if "sharpes" not in old[0]:
            rows.append(_solver_row(name, old, new))
            continue
        by_round = ", ".join(
            f"{_median([b]) / _median([a]):.2f}" for a, b in zip(old, new, strict=True)
        )
        rows.append((name, _timing(old, new)))
        rows.append(("  after / before", f"by round {by_round}"))
        rows.append(("  results", _sameness(old[0], new[0])))
        rows.append(("  certified before", certification(old)))
        rows.append(("  certified after", certification(new)))
    return rows


def main(revision: str, parts: list[str], rounds: int, seeds: int, quick: bool) -> dict[str, Any]:
    """Measures ``revision`` and this checkout side by side and prints the table."""
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    jobs = jobs_of(parts, seeds, quick)
    with tempfile.TemporaryDirectory(prefix="alphaloop-before-") as folder:
        before = export(revision, Path(folder))
        results = measure(before, rounds, jobs)
    rows = report(results)
    print(
        f"\nbefore = {revision}, after = this checkout; {rounds} round(s), each side in a fresh "
        "process per round and part, the sides alternating; medians; a trial is 3 folds"
    )
    print_rows(rows)
    if load_at_start is not None:
        ends = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        starts = ", ".join(f"{x:.2f}" for x in load_at_start)
        print(f"  load average (1, 5, 15 min) at the start: {starts}; at the end: {ends}")
    return {"results": results, "rows": rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument(
        "--part", action="append", choices=PARTS, help="solves, frontiers or trials (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both sides (default 3)")
    parser.add_argument("--seeds", type=int, default=1, help="trials a case a round (default 1)")
    parser.add_argument("--quick", action="store_true", help="one round of one seed")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seeds = 1, 1
    main(args.before, args.part or list(PARTS), args.rounds, args.seeds, args.quick)
