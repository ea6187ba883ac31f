"""A user's own universe, timed as the user runs it: ``python -m benchmarks.bench_user_size
[--before REV] [--rounds N] [--assets N] [--days N] [--only NAME] [--quick]``.

Writes a generated CSV of ``--assets`` prices by ``--days`` days (400 x 5,000 by default, the
size of a broad universe over twenty years; :func:`~alphaloop.market.synthetic_prices`, seed
7) once into a temporary folder, which also holds the alphaloop home of every command (nothing
is written elsewhere; the folder is removed after). Then each of these runs as a whole process
through the CLI, as a user would type it, and is timed with its peak memory (the largest
resident set of the process and what it waited for, ``wait4``'s ``ru_maxrss``):

* ``load``: the CSV read and checked by ``load_market``, the loader every command uses;
* ``trial cufolio_only`` / ``trial ppo_only`` / ``trial unified``: ``alphaloop trial --mode
  MODE --data CSV --json`` at the default knobs and budget;
* ``session``: ``alphaloop research start "maximise Sharpe" --mode cufolio_only --budget 20
  --proposer tpe --data CSV --json`` (baselines, the keep rule's confirmation runs and the
  finalize included).

With ``--before REV`` each command also runs on the package of that git revision (exported to
the same temporary folder), the sides alternating within a round, and the table gives both
and after / before. Prints medians over ``--rounds`` (default 3; ``--quick``: one round, a
100 x 2,000 CSV and a 5-trial session) beside the targets; asserts nothing, since timings
depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._report import print_rows
from benchmarks.bench_engines import REPO, export

# Targets: the seconds and peak MB a command should stay within (None: no target).
TARGETS = {
    "trial cufolio_only": (5.0, None),
    "trial ppo_only": (10.0, 1024.0),
    "session cufolio_only": (180.0, None),
}
LOAD = "from alphaloop.market import load_market; import sys; load_market(sys.argv[1])"


def write_csv(folder: Path, n_assets: int, n_days: int) -> Path:
    """The generated prices as a CSV with a date column, as a user's export would be."""
    from alphaloop.market import synthetic_prices

    prices = synthetic_prices(n_days, n_assets, seed=7)
    prices.columns = [f"S{i:03d}" for i in range(n_assets)]
    path = folder / f"prices_{n_assets}x{n_days}.csv"
    prices.to_csv(path)
    return path


def commands(csv: Path, budget: int) -> dict[str, list[str]]:
    """Each measured command's arguments to the interpreter."""
    data = ["--data", str(csv), "--json"]
    trial = ["-m", "alphaloop", "trial"]
    return {
        "load": ["-c", LOAD, str(csv)],
        "trial cufolio_only": [*trial, "--mode", "cufolio_only", *data],
        "trial ppo_only": [*trial, "--mode", "ppo_only", *data],
        "trial unified": [*trial, "--mode", "unified", *data],
        "session cufolio_only": [
            *["-m", "alphaloop", "research", "start", "maximise Sharpe"],
            *["--mode", "cufolio_only", "--budget", str(budget), "--proposer", "tpe", *data],
        ],
    }


def run(tree: Path, args: list[str], home: Path) -> tuple[float, float]:
    """Runs ``python ARGS`` on the package in ``tree``; (seconds, peak resident MB)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ALPHALOOP_HOME": str(home)}
    began = time.perf_counter()
    with open(home / "last.log", "w") as log:
        child = subprocess.Popen([sys.executable, *args], cwd=home, env=env, stdout=log, stderr=log)
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = (home / "last.log").read_text()[-2000:]
        raise RuntimeError(f"{' '.join(args[:4])} failed ({child.returncode}):\n{tail}")
    return seconds, usage.ru_maxrss / 1024.0  # kilobytes on Linux


def measure(
    sides: dict[str, Path], runs: dict[str, list[str]], rounds: int, folder: Path
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Every round's (seconds, MB) of each command on each side, the sides alternating."""
    results: dict[str, dict[str, list[tuple[float, float]]]] = {side: {} for side in sides}
    names = list(sides)
    for round_ in range(rounds):
        order = names if round_ % 2 == 0 else names[::-1]
        for name, args in runs.items():
            for side in order:
                home = folder / f"home-{side}-{round_}"
                home.mkdir(exist_ok=True)
                print(f"  round {round_ + 1}: {name} ({side}) ...", flush=True)
                results[side].setdefault(name, []).append(run(sides[side], args, home))
    return results


def report(results: dict[str, dict[str, list[tuple[float, float]]]]) -> list[tuple[str, str]]:
    """One row a command: each side's median seconds and peak MB, the ratio, the target."""
    rows = []
    after = results["after"]
    for name, entries in after.items():
        seconds = statistics.median(s for s, _ in entries)
        peak = max(mb for _, mb in entries)
        text = f"{seconds:7.2f} s  peak {peak:6.0f} MB"
        if "before" in results:
            old = results["before"][name]
            old_s = statistics.median(s for s, _ in old)
            old_mb = max(mb for _, mb in old)
            text = (
                f"before {old_s:7.2f} s  peak {old_mb:6.0f} MB   after {text}   "
                f"after / before {seconds / old_s:5.2f}"
            )
        target_s, target_mb = TARGETS.get(name, (None, None))
        if target_s is not None:
            text += f"   target <= {target_s:g} s" + (
                f" at <= {target_mb:g} MB" if target_mb is not None else ""
            )
        rows.append((name, text))
    return rows


def main(
    before: str | None,
    rounds: int,
    n_assets: int,
    n_days: int,
    budget: int,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Writes the CSV, runs every command (or those in ``only``) on each side, prints the
    table."""
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="alphaloop-user-size-") as name:
        folder = Path(name)
        csv = write_csv(folder, n_assets, n_days)
        sides = {"after": REPO}
        if before is not None:
            sides = {"before": export(before, folder / "before"), "after": REPO}
        runs = {k: v for k, v in commands(csv, budget).items() if not only or k in only}
        results = measure(sides, runs, rounds, folder)
    rows = report(results)
    print(
        f"\n{n_assets} assets x {n_days:,} days, whole processes through the CLI; medians of "
        f"{rounds} round(s), peak memory the largest of them; a session of {budget} trials"
        + (f"; before = {before}, after = this checkout" if before else "")
    )
    print_rows(rows)
    ends = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    starts = ", ".join(f"{x:.2f}" for x in load_at_start)
    print(f"  load average (1, 5, 15 min) at the start: {starts}; at the end: {ends}")
    return {"results": results, "rows": rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision to run beside this checkout")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--assets", type=int, default=400, help="assets (default 400)")
    parser.add_argument("--days", type=int, default=5_000, help="days (default 5,000)")
    parser.add_argument("--budget", type=int, default=20, help="session trials (default 20)")
    parser.add_argument(
        "--only", action="append", help="this command only, e.g. 'trial ppo_only' (repeatable)"
    )
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.assets, args.days, args.budget = 1, 100, 2_000, 5
    main(args.before, args.rounds, args.assets, args.days, args.budget, args.only)
