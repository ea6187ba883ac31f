"""Wall time of one trial per mode on the embedded data: ``python -m benchmarks.bench_trials``.

Runs :func:`~alphaloop.trials.run_trial` at the default knobs and session settings on
``load_market("sp500")`` (20 stocks; three validation years), for each mode, with a different
seed each run. The first run of a mode in a process pays one-off costs a session pays once too
(cvxpy canonicalising each LP shape, the baselines of the window, torch warming up); it is
reported apart, and the median is over the runs after it. ``--quick`` runs each mode once after
the first. Reports numbers only; it asserts nothing, since timings depend on the machine and
its load.
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

from alphaloop.knobs import MODES, TrialConfig
from alphaloop.market import load_market
from alphaloop.trials import TrialBudget, run_trial
from benchmarks._report import SummaryRow, parse_quick, print_rows, timed

N_RUNS = 3
# Targets on a 2-core machine (unified has none: it is ppo_only plus a CVaR overlay).
TARGET_S = {"cufolio_only": 5.0, "ppo_only": 15.0}


def bench_mode(mode: str, n_runs: int) -> dict[str, Any]:
    data = load_market("sp500")
    budget = TrialBudget()
    times = []
    objective = float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(n_runs + 1):
            seconds, result = timed(
                lambda s=seed: run_trial(mode, TrialConfig(), data, budget, seed=s)
            )
            times.append(seconds)
            objective = result.objective
    return {
        "first_s": times[0],
        "median_s": statistics.median(times[1:]),
        "runs": n_runs,
        "last_objective": objective,
    }


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    rows = []
    for mode in MODES:
        r = results[mode]
        target = TARGET_S.get(mode)
        rows.append(
            (
                f"one {mode} trial, default knobs, sp500 (median of {r['runs']})",
                f"{r['median_s']:.1f} s",
                f"< {target:g} s" if target else f"first run {r['first_s']:.1f} s",
            )
        )
    return rows


def main(quick: bool = False) -> dict[str, Any]:
    """Times every mode, prints a table and returns the numbers."""
    n_runs = 1 if quick else N_RUNS
    results: dict[str, Any] = {mode: bench_mode(mode, n_runs) for mode in MODES}
    print(
        f"one trial per mode on the embedded S&P 500 data, default knobs and budget; "
        f"median of {n_runs} run(s) after a first one"
    )
    rows = []
    for mode in MODES:
        r = results[mode]
        target = TARGET_S.get(mode)
        rows.append(
            (
                mode,
                f"median {r['median_s']:6.2f} s   first {r['first_s']:6.2f} s"
                + (f"   target < {target:g} s" if target else ""),
            )
        )
    print_rows(rows)
    results["summary"] = summary(results)
    return results


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
