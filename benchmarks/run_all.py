"""Every benchmark in sequence, then one summary table: ``python -m benchmarks.run_all``.

``--quick`` passes on to each benchmark (a smoke run of a couple of minutes). Each benchmark
also runs alone as ``python -m benchmarks.bench_<name>``. Reports numbers only; it asserts
nothing, since timings depend on the machine and its load.
"""

from __future__ import annotations

import os
import platform
import time

from benchmarks import (
    bench_advantages,
    bench_cli_start,
    bench_cvar,
    bench_env,
    bench_frontier,
    bench_generalisation,
    bench_journal,
    bench_keep_rule,
    bench_parallel,
    bench_pm,
    bench_proposers,
    bench_ray,
    bench_research,
    bench_trials,
    bench_validation,
)
from benchmarks._report import SummaryRow, parse_quick

BENCHMARKS = (
    ("env stepping and PPO throughput", bench_env),
    ("PPO throughput by advantage estimator", bench_advantages),
    ("Mean-CVaR solve against skfolio", bench_cvar),
    ("Mean-CVaR efficient frontier, warm against cold and skfolio", bench_frontier),
    ("one trial per mode", bench_trials),
    ("the loop reading its history", bench_journal),
    ("a proposal against the history's length", bench_proposers),
    ("research efficiency, TPE against random", bench_research),
    ("the keep rule: seed-only changes and real gains", bench_keep_rule),
    ("PBO on noise and on a real edge, CSCV time", bench_validation),
    ("sessions on null, planted-edge and real markets: picks and gates", bench_generalisation),
    ("portfolio manager ticks and deployment check", bench_pm),
    ("parallel trials, 1 against 2 workers", bench_parallel),
    ("Ray workers on a loopback two-node cluster against local workers", bench_ray),
    ("command-line start-up", bench_cli_start),
)


def main(quick: bool = False) -> list[SummaryRow]:
    rows: list[SummaryRow] = []
    began = time.perf_counter()
    for title, module in BENCHMARKS:
        print(f"\n== {title} ({module.__name__}{' --quick' if quick else ''})", flush=True)
        rows.extend(module.main(quick)["summary"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n== summary ({'quick run, ' if quick else ''}{os.cpu_count()} CPUs, "
        f"{platform.python_implementation()} {platform.python_version()}, load average "
        f"{load:.1f} at the end, {time.perf_counter() - began:.0f} s in all)"
    )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    header = ("measure", "value", "reference")
    for row in (header, *rows):
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return rows


if __name__ == "__main__":
    main(parse_quick(__doc__.splitlines()[0]))
