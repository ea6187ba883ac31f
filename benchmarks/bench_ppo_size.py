"""A PPO trial on a user's universe, before and after a change, in one run:
``python -m benchmarks.bench_ppo_size --before REV [--assets 20,100,400] [--rounds N]
[--unified] [--parts] [--quick]``.

Writes seeded price files of 5,000 days (``synthetic_prices``, one per universe size) into a
temporary folder once, exports the package of git revision ``REV`` to another, and runs
``alphaloop trial --mode ppo_only --data FILE --json`` at the default knobs and budget as a
whole process on each side (``PYTHONPATH`` set to the side's tree, the same interpreter, a
fresh alphaloop home), the sides alternating each round so load on a shared machine falls on
both alike. ``--unified`` adds the unified mode's trial at the largest size.

For each case: the median wall and CPU seconds of the process on each side and their ratios
(after / before: below 1 is faster now), the largest peak resident memory, and whether the two
sides' trials are the same (the largest difference of a daily return, a final weight, a point
of the reward curve and the objective, over every round). ``--parts`` then times where the
after side's ``ppo_only`` trial spends its time at each size, in this process (model and env
set-up, rollouts and the env stepping inside them, the PPO update, the evaluation).

``--quick`` runs one round at 20 and 100 assets. Needs git and the repository's history. Reports
numbers only; it asserts nothing, since timings depend on the machine and its load.
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
import warnings
from pathlib import Path
from typing import Any

from benchmarks._report import SummaryRow, print_rows
from benchmarks.bench_engines import REPO, export

N_DAYS = 5_000
SEED = 7
COMPARED = ("daily_returns", "final_weights", "curve")


def write_universes(sizes: list[int], folder: Path) -> dict[int, Path]:
    """One seeded price file per universe size (a column per asset, a row per day)."""
    from alphaloop.market import synthetic_prices

    paths = {}
    for n in sizes:
        paths[n] = folder / f"prices-{n}.csv"
        synthetic_prices(n_days=N_DAYS, n_assets=n, seed=SEED).to_csv(paths[n])
    return paths


def run_trial_process(tree: Path, mode: str, data: Path, home: Path) -> dict[str, Any]:
    """``alphaloop trial`` as a whole process on the package in ``tree``: its wall and CPU
    seconds, peak resident memory and the trial's JSON."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ALPHALOOP_HOME": str(home)}
    command = [sys.executable, "-m", "alphaloop", "trial", "--mode", mode]
    command += ["--data", str(data), "--json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        child = subprocess.Popen(command, cwd=tree, env=env, stdout=out, stderr=err)
        # wait4, not Popen.wait: the child's own resource use (CPU, peak memory).
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"the trial failed in {tree}:\n{err.read().decode()[-3000:]}")
        result = json.loads(out.read())
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # kilobytes on Linux
        "result": result,
    }


def cases_of(sizes: list[int], unified: bool) -> list[tuple[str, int]]:
    cases = [("ppo_only", n) for n in sizes]
    return [*cases, ("unified", max(sizes))] if unified else cases


def measure(
    before: Path, files: dict[int, Path], cases: list[tuple[str, int]], rounds: int, home: Path
) -> dict[tuple[str, int], dict[str, list[dict[str, Any]]]]:
    """Every round's runs of each case on each side, the sides alternating."""
    sides = {"before": before, "after": REPO}
    runs: dict[tuple[str, int], dict[str, list[dict[str, Any]]]] = {
        case: {"before": [], "after": []} for case in cases
    }
    for round_ in range(rounds):
        order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
        for mode, n in cases:
            for side in order:
                print(f"  round {round_ + 1}: {mode} at {n} assets, {side} ...", flush=True)
                run = run_trial_process(sides[side], mode, files[n], home / side)
                runs[(mode, n)][side].append(run)
    return runs


def _gap(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest difference between two trials' numbers (0.0: the same to the last bit)."""
    gaps = [abs(a["objective"] - b["objective"])]
    for key in COMPARED:
        gaps += [abs(x - y) for x, y in zip(_flatten(a[key]), _flatten(b[key]), strict=True)]
    return max(gaps)


def _flatten(value: Any) -> list[float]:
    if isinstance(value, list):
        return [x for item in value for x in _flatten(item)]
    return [float(value)]


def summarise(runs: dict[tuple[str, int], dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table = {}
    for (mode, n), sides in runs.items():
        row: dict[str, Any] = {}
        for side, entries in sides.items():
            row[side] = {
                "wall": statistics.median(e["wall"] for e in entries),
                "cpu": statistics.median(e["cpu"] for e in entries),
                "peak_mb": max(e["peak_mb"] for e in entries),
            }
        pairs = zip(sides["before"], sides["after"], strict=True)
        row["gap"] = max(_gap(a["result"], b["result"]) for a, b in pairs)
        table[f"{mode}, {n} assets"] = row
    return table


def print_table(table: dict[str, Any], revision: str, rounds: int) -> None:
    print(
        f"\nbefore = {revision}, after = this checkout; one trial a process, default knobs and "
        f"budget, {N_DAYS:,} days; medians of {rounds} round(s)"
    )
    rows = []
    for name, row in table.items():
        b, a = row["before"], row["after"]
        rows += [
            (
                name,
                f"wall {b['wall']:6.1f} s -> {a['wall']:6.1f} s ({a['wall'] / b['wall']:.2f}x)   "
                f"CPU {b['cpu']:6.1f} s -> {a['cpu']:6.1f} s ({a['cpu'] / b['cpu']:.2f}x)   "
                f"peak {b['peak_mb']:5.0f} MB -> {a['peak_mb']:5.0f} MB",
            ),
            ("  largest difference of the trials' numbers", f"{row['gap']:.1e}"),
        ]
    rows.append(("load average (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in os.getloadavg())))
    print_rows(rows)


def parts(files: dict[int, Path]) -> dict[int, dict[str, float]]:
    """Where this checkout's default ``ppo_only`` trial spends its time at each size."""
    from alphaloop.market import load_market
    from alphaloop.rl_engine import NumpyPPO
    from benchmarks.bench_trials import PARTS, ppo_trial

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, path in files.items():
            seconds, split, _, _ = ppo_trial(NumpyPPO, load_market(path), seed=0)
            out[n] = {"trial": seconds, **{part: split[part] for part in PARTS}}
    print("\nwhere this checkout's ppo_only trial spends its time (seconds; in this process)")
    rows = [
        (f"{n} assets", "   ".join(f"{part} {value:6.2f}" for part, value in split.items()))
        for n, split in out.items()
    ]
    print_rows(rows)
    return out


def summary(table: dict[str, Any]) -> list[SummaryRow]:
    return [
        (
            f"{name}: a trial's process, after / before",
            f"{row['after']['wall'] / row['before']['wall']:.2f}x wall",
            f"{row['after']['cpu'] / row['before']['cpu']:.2f}x CPU, peak "
            f"{row['after']['peak_mb']:.0f} MB; numbers differ by {row['gap']:.0e}",
        )
        for name, row in table.items()
    ]


def main(
    revision: str, sizes: list[int], rounds: int, unified: bool, with_parts: bool
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="alphaloop-ppo-size-") as folder:
        root = Path(folder)
        files = write_universes(sizes, root)
        before = export(revision, root / "before")
        runs = measure(before, files, cases_of(sizes, unified), rounds, root / "home")
        table = summarise(runs)
        print_table(table, revision, rounds)
        results: dict[str, Any] = {"table": table, "summary": summary(table)}
        if with_parts:
            results["parts"] = parts(files)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--assets", default="20,100,400", help="universe sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--unified", action="store_true", help="add unified at the largest size")
    parser.add_argument("--parts", action="store_true", help="where the after side's time goes")
    parser.add_argument("--quick", action="store_true", help="one round at 20 and 100 assets")
    args = parser.parse_args()
    chosen = [int(n) for n in args.assets.split(",")]
    if args.quick:
        chosen, args.rounds = [20, 100], 1
    main(args.before, chosen, args.rounds, args.unified, args.parts)
