"""Parallel trials, 1 against 2 workers: ``python -m benchmarks.bench_parallel``.

Runs a ``cufolio_only`` session (embedded S&P 500 data) and a ``ppo_only`` session (synthetic
data, a small PPO budget) through the library, each with 1 and with 2 workers, the same
session seed and budget, each in a temporary alphaloop home, and prints the two side by side:
trials per hour (every trial row run, baselines, confirmations and the test row included, over
the session's wall time, workers' start-up and finalize included), fold runs per hour, and the
2-worker over 1-worker ratio.

Equal journaled work: the sessions use the random proposer, whose draws are seeded by their
position, so both worker counts run the same configs, with the same verdicts, races and
confirmations: the same trial rows and the same fold runs (the output says whether they
matched). TPE would not do: with 2 workers it proposes without the result of the trial still
running (constant liar), so its path, and the work it leads to, departs from one worker's.

Each session runs in a fresh Python process, as ``alphaloop research`` would: the 2-worker
session pays for starting its worker processes every time (no fork server left running by an
earlier session), and no session finds caches an earlier one filled (the baselines' metrics of
each fold). The clock runs around ``run_session`` only (imports and data loading excluded).

The machine's own ceiling is measured beside each pair: fold runs per second (the default
config on the session's three folds in turn, for five seconds) in one process alone, then in
two processes at once, each single-threaded as a worker is. Two processes on two cores need
not each run as fast as one alone (shared caches and memory bandwidth, a virtual machine's
neighbours): their throughput over one's is the most any 2-worker session can gain here, and
the session's speed-up over it is the loop's own efficiency (``--no-ceiling`` and
``--quick`` skip it). Search trials per hour by thirds of each session show whether the loop's own
work grows with its history: at ``--scale 40`` and more the last third runs slower than the first
when it does. So is how long a session's worker processes take to come up (their fork
server's imports), alone, in fresh processes: a short session pays it once, on one core.

The pairs run interleaved (1, 2, 1, 2, ...) and the ratio reported is the median of the pairs'
ratios, so load that comes and goes on a shared machine hits both sides alike; the load average
is printed before and after. On a saturated machine 2 workers get no more CPU than 1, so the
ratio means something only when the load average is well under the core count. The workers'
start-up (their fork server's imports, seconds of one core) is paid once a session, so a short
session measures it as much as the trials, and a session of hours, as a user runs them, hardly
at all: after the short sessions the bench runs three pairs of longer ones
(:data:`LONG_CASES`: 320 ``cufolio_only`` search trials; 64 ``ppo_only`` ones of the default
trial's 16,384 steps), unless ``--no-long``. Takes about 20 minutes; ``--quick`` runs one
pair of smaller budgets and no long sessions. ``--scale K`` runs K times the short sessions'
search trials. ``--ppo-steps N`` trains each PPO trial for N env steps
(2,048 by default, the default trial's 16,384 divided by 8, so a pair of sessions takes under
a minute, not four). ``--mode`` runs one mode only. Reports numbers only; it asserts
nothing (timings depend on the machine and its load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from alphaloop.journal import Journal, TrialKind, TrialRecord
from alphaloop.journal.codec import seconds_between
from alphaloop.market import market_of
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget
from benchmarks._report import SummaryRow, print_rows

CASES = (  # mode, data, budget, quick budget, PPO env steps
    ("cufolio_only", "sp500", 16, 6, None),
    ("ppo_only", "synthetic", 8, 3, 2048),
)
WORKERS = (1, 2)
SEED = 7
PAIRS, QUICK_PAIRS = 3, 1
# Sessions of a user's size, after the short ones above (mode, data, search trials, PPO env
# steps): the workers' start-up and a session's last trial alone, paid once a session, are a
# large share of a 10-second session, a small one of these and less of the hours a user runs.
# The PPO trials train for the default trial's 16,384 steps.
LONG_CASES = (
    ("cufolio_only", "sp500", 320, None),
    ("ppo_only", "synthetic", 64, 16_384),
)
LONG_PAIRS = 3


def _this_cli(*args: str) -> list[str]:
    """The command line that runs this module's ``cli`` with ``args`` in a fresh process."""
    # Started with -c, as ``alphaloop research`` starts from its small console script: a worker
    # process re-runs its parent's main module first, and this module imports the whole loop
    # (about a second per worker, which the command line never pays).
    module = __spec__.name if __spec__ else "benchmarks.bench_parallel"
    return [sys.executable, "-c", f"from {module} import cli; cli()", *args]


def run_one(mode: str, data: str, budget: int, steps: int | None, workers: int) -> dict[str, Any]:
    """One session in a fresh Python process (see the module docstring)."""
    argv = _this_cli("--session", mode, data, str(budget), str(steps or 0), str(workers))
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def session(mode: str, data: str, budget: int, steps: int | None, workers: int) -> dict[str, Any]:
    """One session in this process; its wall time and the work it journaled."""
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(ALPHALOOP_HOME=str(Path(home)))
        spec = SessionSpec(
            goal="maximise validation Sharpe",
            mode=mode,
            budget=budget,
            proposer="random",
            data=data,
            seed=SEED,
            noise_seeds=3,
            workers=workers,
            trial_budget=TrialBudget(total_timesteps=steps) if steps else TrialBudget(),
        )
        sid = create_session(spec, settings)
        began = time.perf_counter()
        run_session(sid, settings)
        wall = time.perf_counter() - began
        with Journal(settings.journal_path) as journal:
            rows = journal.trials.of_session(sid, series=False)
            ran = [t for t in rows if t.status != "invalid"]
            folds = sum(len(journal.folds.of_trial(t.id)) for t in ran)
    work = sorted((t.kind, t.config_hash, t.seed, t.status) for t in ran)
    return {"wall_s": wall, "trials": len(ran), "folds": folds, "work": work, "pace": pace(ran)}


def pace(rows: list[TrialRecord]) -> list[float]:
    """Search trials finished per hour in each third of the time from the first trial's start
    to the last one's end: a loop whose own work grows with its history slows down third by
    third, where the trials themselves take as long at the end as at the start."""
    began = min(t.started_at for t in rows)
    span = max(seconds_between(began, t.finished_at) for t in rows if t.finished_at)
    thirds = [0, 0, 0]
    for t in rows:
        if t.kind == TrialKind.search and t.finished_at:
            thirds[min(int(3 * seconds_between(began, t.finished_at) / span), 2)] += 1
    return [n / (span / 3) * 3600 for n in thirds]


PROBE_S = 5.0  # how long a probe process runs fold runs (whole runs, at least this long)


def probe(mode: str, data: str, steps: int | None) -> float:
    """Fold runs per second in this process, single-threaded as a worker, over whole runs of at
    least :data:`PROBE_S` seconds, after one run that pays the first call's costs."""
    from alphaloop.knobs import TrialConfig
    from alphaloop.placement.jobs import TrialJob, execute, single_threaded
    from alphaloop.spec import DataSpec
    from alphaloop.trials import build_folds

    single_threaded()
    market = market_of(DataSpec(data=data))
    folds = build_folds(market, 3)
    budget = TrialBudget(total_timesteps=steps) if steps else TrialBudget()

    def run(i: int) -> None:
        job = TrialJob(
            mode=mode,
            config=TrialConfig(),
            budget=budget,
            seed=SEED + i,
            metric="sharpe",
            policy_dir=None,
            idx=i,
            kind="search",
            rows=folds[i % len(folds)],
        )
        execute(job, market)

    run(0)
    began, runs = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - began) < PROBE_S:
        runs += 1
        run(runs)
    return runs / elapsed


STARTUP_ROUNDS = 5


def workers_up(mode: str, data: str) -> float:
    """Seconds from starting a ``mode`` session's worker processes to their being up, in this
    process, with the loop idle (a session's loop runs trials meanwhile)."""
    from alphaloop.placement.local import ProcessTrials
    from alphaloop.spec import DataSpec

    market = market_of(DataSpec(data=data))
    began = time.perf_counter()
    runner = ProcessTrials(market, max(WORKERS), mode)
    while not runner.up:
        time.sleep(0.005)
    up = time.perf_counter() - began
    runner.close()
    return up


def startup(mode: str, data: str) -> list[float]:
    """:func:`workers_up` in :data:`STARTUP_ROUNDS` fresh processes, one after another."""
    argv = _this_cli("--up", mode, data)
    return [
        float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()[-1])
        for _ in range(STARTUP_ROUNDS)
    ]


def ceiling(mode: str, data: str, steps: int | None) -> float:
    """Fold runs per second of two processes at once over one alone's (see the module
    docstring)."""
    argv = _this_cli("--probe", mode, data, str(steps or 0))

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)

    def rate(proc: subprocess.Popen[str]) -> float:
        out, _ = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"the probe process failed ({proc.returncode})")
        return float(out.strip().splitlines()[-1])

    alone = rate(start())
    side_by_side = [start(), start()]
    return sum(rate(p) for p in side_by_side) / alone


def _pace_row(runs: dict[int, list[dict[str, Any]]]) -> tuple[str, str]:
    """Search trials per hour by thirds of the session, medians over the runs of each count."""

    def thirds(w: int) -> str:
        return ", ".join(
            f"{statistics.median(r['pace'][i] for r in runs[w]):.0f}" for i in range(3)
        )

    return ("  search trials/h by thirds, 1 | 2", f"{thirds(1)} | {thirds(2)}")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "-"


def main(
    quick: bool = False,
    pairs: int | None = None,
    scale: int = 1,
    modes: list[str] | None = None,
    ppo_steps: int | None = None,
    with_ceiling: bool = True,
    with_long: bool = True,
) -> dict[str, Any]:
    summary: list[SummaryRow] = []
    results: dict[str, Any] = {}
    pairs = pairs or (QUICK_PAIRS if quick else PAIRS)
    machine = with_ceiling and not quick  # the ceiling and the workers' start-up
    print(f"  {os.cpu_count()} CPUs; random proposer, session seed {SEED}; {pairs} pair(s)")
    print(f"  load average before: {_load()}")
    for mode, data, budget, quick_budget, steps in CASES:
        if not modes or mode in modes:
            n = (quick_budget if quick else budget) * scale
            steps = ppo_steps if steps and ppo_steps else steps
            rows, results[mode] = measure(mode, data, n, steps, pairs, machine)
            summary.extend(rows)
    for mode, data, n, steps in LONG_CASES if with_long and not quick else ():
        if not modes or mode in modes:
            print(f"\n  long sessions, {LONG_PAIRS} pairs, no ceiling (measured above)")
            rows, results[f"{mode} long"] = measure(mode, data, n, steps, LONG_PAIRS, False)
            summary.extend(rows)
    print(f"  load average after: {_load()}")
    return {"summary": summary, "results": results}


def measure(
    mode: str, data: str, n: int, steps: int | None, pairs: int, machine: bool
) -> tuple[list[SummaryRow], dict[str, Any]]:
    """``pairs`` interleaved pairs of ``n``-search-trial sessions with 1 and 2 workers (and the
    machine's ceiling and the workers' start-up beside them when ``machine``), printed; the
    summary rows and the runs."""
    runs: dict[int, list[dict[str, Any]]] = {w: [] for w in WORKERS}
    ceilings: list[float] = []
    for _ in range(pairs):
        for w in WORKERS:
            runs[w].append(run_one(mode, data, n, steps, w))
        if machine:
            ceilings.append(ceiling(mode, data, steps))
    one, two = runs[1], runs[2]
    equal = all(r["work"] == one[0]["work"] for r in one + two)
    ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(one, two, strict=True)]
    ratio = statistics.median(ratios)
    walls = {w: statistics.median(r["wall_s"] for r in runs[w]) for w in WORKERS}
    trials, folds = one[0]["trials"], one[0]["folds"]
    per_hour = {w: trials / walls[w] * 3600 for w in WORKERS}
    size = f"{n} search trials on {data}" + (f", {steps:,} steps" if steps else "")
    work = f"{trials} trial rows, {folds} fold runs"
    print_rows(
        [
            (mode, size),
            (
                "  journaled work, each run",
                work + ("; the same rows for 1 and 2 workers" if equal else "; NOT EQUAL"),
            ),
            ("  median wall, 1 | 2 workers", f"{walls[1]:.1f} s | {walls[2]:.1f} s"),
            ("  trials per hour, 1 | 2", f"{per_hour[1]:.0f} | {per_hour[2]:.0f}"),
            (
                "  fold runs per hour, 1 | 2",
                f"{folds / walls[1] * 3600:.0f} | {folds / walls[2] * 3600:.0f}",
            ),
            (
                "  2 workers / 1 worker",
                f"{ratio:.2f}x (median of {', '.join(f'{r:.2f}' for r in ratios)})",
            ),
            _pace_row(runs),
        ]
    )
    summary = _machine_rows(mode, data, ratio, ceilings) if machine else []
    summary.append(
        (f"{mode} trials/hour, 1 | 2 workers", f"{per_hour[1]:.0f} | {per_hour[2]:.0f}", work)
    )
    summary.append((f"{mode} speed-up, 2 workers", f"{ratio:.2f}x", f"{size}; target 1.8x"))
    return summary, {"runs": runs, "ratios": ratios, "equal_work": equal, "ceilings": ceilings}


def _machine_rows(mode: str, data: str, ratio: float, ceilings: list[float]) -> list[SummaryRow]:
    """Prints the workers' start-up alone and the machine's ceiling beside the session pairs'
    speed-up; the ceiling's summary row."""
    up = startup(mode, data)
    limit = statistics.median(ceilings)
    print_rows(
        [
            (
                "  workers up after (alone)",
                f"{statistics.median(up):.2f} s (median of {len(up)} fresh processes, "
                f"{min(up):.2f}-{max(up):.2f})",
            ),
            (
                "  ceiling: 2 processes / 1",
                f"{limit:.2f}x (median of {', '.join(f'{c:.2f}' for c in ceilings)})",
            ),
            ("  speed-up / ceiling", f"{ratio / limit:.0%} (the loop's efficiency)"),
        ]
    )
    return [(f"{mode} machine ceiling, 2 processes", f"{limit:.2f}x", "")]


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats and smaller budgets (a smoke run)"
    )
    parser.add_argument("--pairs", type=int, help=f"1-and-2-worker pairs per mode ({PAIRS})")
    parser.add_argument("--scale", type=int, default=1, help="K times the search trials (1)")
    parser.add_argument("--ppo-steps", type=int, help="env steps per PPO trial (2,048)")
    parser.add_argument(
        "--mode", action="append", choices=[c[0] for c in CASES], help="only this mode"
    )
    parser.add_argument(
        "--no-ceiling", action="store_true", help="skip measuring the machine's ceiling"
    )
    parser.add_argument("--no-long", action="store_true", help="skip the long sessions")
    parser.add_argument(
        "--probe",
        nargs=3,
        metavar=("MODE", "DATA", "STEPS"),
        help="print this process's fold runs per second (what the ceiling starts)",
    )
    parser.add_argument(
        "--up",
        nargs=2,
        metavar=("MODE", "DATA"),
        help="print how long this process's workers take to come up (what the start-up runs)",
    )
    parser.add_argument(
        "--session",
        nargs=5,
        metavar=("MODE", "DATA", "BUDGET", "STEPS", "WORKERS"),
        help="run one session here and print its measures as JSON (what each run calls)",
    )
    args = parser.parse_args(argv)
    if args.probe:
        mode, data, steps = args.probe
        print(probe(mode, data, int(steps) or None))
    elif args.up:
        print(workers_up(*args.up))
    elif args.session:
        mode, data, budget, steps, workers = args.session
        print(json.dumps(session(mode, data, int(budget), int(steps) or None, int(workers))))
    else:
        main(
            args.quick,
            args.pairs,
            args.scale,
            args.mode,
            args.ppo_steps,
            not args.no_ceiling,
            not args.no_long,
        )


if __name__ == "__main__":
    cli()
