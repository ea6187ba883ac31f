"""Can noise or 1/N pass the go/no-go gates, and do real edges? Run:
``python -m benchmarks.bench_gates``.

The gates' calibration, measured on whole sessions run as the CLI runs them (the sessions of
:mod:`benchmarks.bench_generalisation`: ``cufolio_only``, TPE and random in turn, each in a
fresh home, finalized with its gates):

* null: ``null:SEED`` markets where no rule beats 1/N in expectation. The false-GO rate is the
  share of sessions whose pick passes every gate (target <= 5%).
* tied: ``tied:SEED`` markets where every long-only book ties, so no config beats the default
  either: its false-GO rate too (target <= 5%).
* flat: ``flat:SEED`` markets without drift, where every config ties with the default
  exactly. The absolute gates fail there by themselves (no Sharpe clears 0.8), so what this
  arm measures is the excess gates' own false-pass rate, printed on its own row.
* planted: ``planted:SEED`` markets with a real edge for short Mean-CVaR holding periods over
  the default and 1/N. The GO rate is the share of sessions that pass every gate (target
  >= 70%): a gate that also stops real edges is no use. Beside it, the ceiling: the share of
  sessions in which the planted config itself (the optimum, not the session's pick) passes
  today's gates against the default on TEST, the paired test alone and with the excess
  deflated Sharpe deflated by that session's search trials, as its pick is. A pick passes
  them no more often than the optimum would but by luck, so the ceiling tells a gate too
  strict from a TEST window too short to show the edge, and the distance to it is what the
  search left on the table.
* sp500: the embedded S&P 500 set; every GO pick must beat 1/N on TEST.

Side by side, from the same journaled verdicts: the former rule (the six absolute gates alone:
Sharpe, drawdown, hit rate, profit factor, deflated Sharpe, PBO) against today's (those plus the
paired test and the deflated Sharpe of the excess over the default and over 1/N). Also each
gate's pass rate, so a gate that never passes (or always does) shows, and PBO with its
bootstrap interval. And one alternative, from the same verdicts: the excess deflated Sharpe
deflated by the configs run on TEST (one: the pick) instead of by the search's configs, which
is the excess series' probabilistic Sharpe. TEST selects nothing, so the search's multiplicity
is already in the pick's own test on the folds; the alternative shows what deflating TEST by it
again costs in power, and whether leaving that out lets noise through. Shares carry Wilson 95%
intervals. Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import statistics
from typing import Any

from alphaloop.validation import Gates
from benchmarks._report import SummaryRow, print_rows, timed
from benchmarks.bench_generalisation import (
    FORMER,
    FULL,
    QUICK,
    Outcome,
    print_sessions,
    run_arm,
    share,
)

ARMS = ("null", "tied", "flat", "planted", "sp500")


def gates_pass(o: Outcome, *, counted_once: bool = False, excess_only: bool = False) -> bool:
    """Whether every journaled gate passes (only the four against the default and 1/N when
    ``excess_only``). With ``counted_once``, each excess deflated Sharpe is deflated by the
    configs run on TEST (one, the pick) rather than by the search's: its probabilistic Sharpe.
    TEST scores the pick once and selects nothing, so this is the alternative the default rule
    is weighed against."""
    results = [
        r
        for r in o.gate_results
        if not excess_only or r["gate"].startswith(("beats_", "excess_dsr_"))
    ]
    return bool(results) and all(_passes(o, r, counted_once) for r in results)


def go_if_test_counted_once(o: Outcome) -> bool:
    return gates_pass(o, counted_once=True)


def _passes(o: Outcome, result: dict[str, Any], counted_once: bool) -> bool:
    gate = result["gate"]
    if counted_once and gate.startswith("excess_dsr_"):
        return _excess_psr(o, gate.removeprefix("excess_dsr_")) > result["threshold"]
    return bool(result["passed"])


def _excess_psr(o: Outcome, reference: str) -> float:
    deflated = ((o.final.get("excess") or {}).get(reference) or {}).get("deflated") or {}
    return deflated.get("psr") or 0.0


def gate_rows(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """The printed rows of one arm: GO under both rules, each gate's pass rate, PBO."""
    n = len(outcomes)
    go = [o for o in outcomes if o.go]
    former = [o for o in outcomes if o.former_go]
    rows = [
        ("GO, today's gates", share(len(go), n)),
        ("GO, former rule (absolute gates only)", share(len(former), n)),
        (
            "GO, excess deflated Sharpe over the configs run on TEST (1)",
            share(sum(map(go_if_test_counted_once, outcomes)), n),
        ),
        (
            "excess gates alone pass (today)",
            share(sum(gates_pass(o, excess_only=True) for o in outcomes), n),
        ),
        (
            "excess gates alone pass (TEST counted once)",
            share(sum(gates_pass(o, counted_once=True, excess_only=True) for o in outcomes), n),
        ),
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


def ceiling(outcomes: list[Outcome]) -> tuple[int, int, int]:
    """In how many sessions the planted config itself passes the default gates against the
    default on TEST (:func:`~benchmarks.bench_generalisation.optimum_evidence`): the paired
    test alone; with the excess deflated Sharpe too; with it deflated by one config."""
    gates = Gates()
    level, floor = gates.max_excess_p_value or 0.05, gates.min_excess_deflated_sharpe or 0.95
    paired = [o.optimum for o in outcomes if o.optimum and o.optimum.test.p_value < level]
    both = [e for e in paired if (e.excess_dsr or 0.0) > floor]
    once = [e for e in paired if e.deflated and (e.deflated.psr or 0.0) > floor]
    return len(paired), len(both), len(once)


def summary_rows(
    arm: str, outcomes: list[Outcome], optimum: tuple[int, int, int] | None = None
) -> list[SummaryRow]:
    n, go = len(outcomes), [o for o in outcomes if o.go]
    former = sum(o.former_go for o in outcomes)
    if arm in ("null", "tied", "flat"):
        once = sum(map(go_if_test_counted_once, outcomes))
        counts = f"{len(go)}/{n} | {former}/{n} | {once}/{n}"
        return [(f"gates, {arm}: false GO (today | former | TEST counted once)", counts, "<= 5%")]
    if arm == "planted" and optimum is not None:
        once = sum(map(go_if_test_counted_once, outcomes))
        counts = f"{len(go)}/{n} | {former}/{n} | {optimum[1]}/{n} ({optimum[0]}/{n})"
        label = "gates, planted: GO (today | former | optimum's ceiling (paired test alone))"
        alternative = f"{once}/{n} | {optimum[2]}/{n}"
        return [
            (label, counts, ">= 70%"),
            ("gates, planted: GO, TEST counted once (sessions | optimum)", alternative, ">= 70%"),
        ]
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
            optimum = ceiling(measured[arm])
            rows += [
                ("ceiling: the planted config passes the paired test", share(optimum[0], n)),
                ("  and the excess deflated Sharpe too", share(optimum[1], n)),
                ("  and that deflated by the configs run on TEST (1)", share(optimum[2], n)),
            ]
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
