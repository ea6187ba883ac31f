"""Can noise or 1/N pass the go/no-go gates, and do real edges? Run:
``python -m benchmarks.bench_gates``.

The gates' calibration, measured on whole sessions run as the CLI runs them (the sessions of
:mod:`benchmarks.bench_generalisation`: ``cufolio_only``, TPE and random in turn, each in a
fresh home, finalized with its gates):

* null: ``null:SEED`` markets where no rule beats 1/N in expectation. The false-GO rate is the
  share of sessions whose pick passes every gate (target <= 5%).
* tied: ``tied:SEED`` markets where every long-only book ties, so no config beats the default
  either: its false-GO rate too (target <= 5%).
* planted: ``planted:SEED`` markets with a real edge for short Mean-CVaR holding periods over
  the default and 1/N. The GO rate is the share of sessions that pass every gate (target
  >= 70%): a gate that also stops real edges is no use. Beside it, the ceiling: the share of
  those markets where the planted config itself (the optimum, not a session's pick) beats the
  default on TEST by the paired test at the gate's level. No pick passes that gate more often
  than the optimum would, so the ceiling tells a gate too strict from a TEST window too short
  to show the edge, and the distance to it is what the search left on the table.
* sp500: the embedded S&P 500 set; every GO pick must beat 1/N on TEST.

Side by side, from the same journaled verdicts: the former rule (the six absolute gates alone:
Sharpe, drawdown, hit rate, profit factor, deflated Sharpe, PBO) against today's (those plus the
paired test and the deflated Sharpe of the excess over the default and over 1/N). Also each
gate's pass rate, so a gate that never passes (or always does) shows, and PBO with its
bootstrap interval. Shares carry Wilson 95% intervals. Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import statistics
from typing import Any

from scipy import stats

from alphaloop.validation import Gates
from benchmarks._report import SummaryRow, print_rows, timed
from benchmarks.bench_generalisation import (
    FORMER,
    FULL,
    QUICK,
    Outcome,
    planted_edge,
    print_sessions,
    run_arm,
    share,
)

ARMS = ("null", "tied", "planted", "sp500")


def gate_rows(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """The printed rows of one arm: GO under both rules, each gate's pass rate, PBO."""
    n = len(outcomes)
    go = [o for o in outcomes if o.go]
    former = [o for o in outcomes if o.former_go]
    rows = [
        ("GO, today's gates", share(len(go), n)),
        ("GO, former rule (absolute gates only)", share(len(former), n)),
        (
            "GO picks that beat 1/N on TEST (today)",
            share(sum(o.beats_equal_weight for o in go), len(go)),
        ),
        (
            "GO picks that beat 1/N on TEST (former)",
            share(sum(o.beats_equal_weight for o in former), len(former)),
        ),
        ("pick is a search config", share(sum(o.searched for o in outcomes), n)),
        (FORMER, share(sum(o.former_searched for o in outcomes), n)),
        ("pick beats the default on TEST", share(sum(o.beats_default for o in outcomes), n)),
        (FORMER, share(sum(o.former_beats_default for o in outcomes), n)),
    ]
    names = list(dict.fromkeys(r["gate"] for o in outcomes for r in o.gate_results))
    for name in names:
        passed = sum(
            any(r["gate"] == name and r["passed"] for r in o.gate_results) for o in outcomes
        )
        rows.append((f"  gate {name} passes", share(passed, n)))
    pbo = [o.final["pbo"] for o in outcomes if o.final.get("pbo") is not None]
    widths = [
        hi - lo
        for o in outcomes
        if (interval := (o.final.get("pbo_summary") or {}).get("interval"))
        for lo, hi in [interval]
    ]
    if pbo:
        width = f", median 95% interval width {statistics.median(widths):.2f}" if widths else ""
        rows.append(("PBO, median over sessions", f"{statistics.median(pbo):.3f}{width}"))
    return rows


# The paired test's level in the default gates: the bar the optimum's ceiling is measured at.
LEVEL = Gates().max_excess_p_value or 0.05


def ceiling(n_markets: int) -> int:
    """In how many of the first ``n_markets`` planted markets the planted config itself beats
    the default on TEST by the paired test at :data:`LEVEL`."""
    return sum(z > stats.norm.isf(LEVEL) for *_, z in planted_edge(n_markets))


def summary_rows(arm: str, outcomes: list[Outcome], optimum: int | None = None) -> list[SummaryRow]:
    n, go = len(outcomes), [o for o in outcomes if o.go]
    former = sum(o.former_go for o in outcomes)
    if arm in ("null", "tied"):
        return [
            (f"gates, {arm}: false GO (today | former)", f"{len(go)}/{n} | {former}/{n}", "<= 5%")
        ]
    if arm == "planted":
        counts = f"{len(go)}/{n} | {former}/{n} | {optimum}/{n}"
        return [("gates, planted: GO (today | former | optimum's ceiling)", counts, ">= 70%")]
    beats = sum(o.beats_equal_weight for o in go)
    return [(f"gates, {arm}: GO picks beating 1/N on TEST", f"{beats}/{len(go)}", "all")]


def main(
    quick: bool = False,
    arms: list[str] | None = None,
    sessions: int | None = None,
    budget: int | None = None,
) -> dict[str, Any]:
    """Runs the sessions of each arm and prints the gates' calibration."""
    logging.getLogger("alphaloop").setLevel(logging.ERROR)
    summary: list[SummaryRow] = []
    measured: dict[str, list[Outcome]] = {}
    for arm in arms or ARMS:
        planned_n, planned_budget = (QUICK if quick else FULL)[arm]
        n, b = sessions or planned_n, budget or planned_budget
        seconds, measured[arm] = timed(lambda a=arm, n=n, b=b: run_arm(a, n, b, quick))
        print(f"\n{arm}: {n} sessions x {b} search trials in {seconds:.0f} s", flush=True)
        print_sessions(measured[arm])
        rows = gate_rows(measured[arm])
        optimum = None
        if arm == "planted":
            optimum = ceiling(n)
            label = f"ceiling: the planted config itself beats the default on TEST (p < {LEVEL:g})"
            rows.append((label, share(optimum, n)))
        print_rows(rows)
        summary.extend(summary_rows(arm, measured[arm], optimum))
    print()
    print_rows([(m, f"{v}   (target {ref})") for m, v, ref in summary])
    return {"measured": measured, "summary": summary}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 sessions an arm")
    parser.add_argument("--arm", action="append", choices=ARMS, help="only these arms")
    parser.add_argument("--sessions", type=int, help="sessions per arm")
    parser.add_argument("--budget", type=int, help="search trials per session (all arms)")
    args = parser.parse_args()
    main(args.quick, args.arm, args.sessions, args.budget)
