"""Ray workers against local workers: ``python -m benchmarks.bench_ray`` (as root).

Starts a real two-node Ray cluster (a head of 1 CPU and a node of 2, so 3 task slots) in a
network namespace whose only interface is loopback (``tests/loopback_cluster.py``), and runs the
same ``cufolio_only`` session (embedded S&P 500 data, random proposer, the same seed and budget)
with 1, 2 and 3 workers, each on this machine (worker processes) and on the cluster (Ray tasks),
interleaved (local 1, Ray 1, local 2, Ray 2, ...) for ``--rounds`` rounds, every session in a
fresh process inside the namespace, as ``alphaloop research`` would run. It prints, for each
worker count, the median trials per hour (every trial row over the wall time of
``run_session``: workers' start-up and finalize included, the cluster's connection and its
pre-flight check not, which it prints apart) for both, Ray's over local's, and each side's
speed-up over its own 1 worker.

Beside them, the loop's own costs per trial row, measured in the session's process: proposals
(the proposer's ``propose``), journal write transactions (count and time) and reads, and the
whole process's CPU time (the loop, and for Ray the driver's Ray threads; with one local worker
the trials run in this process too, so that figure includes them). From these the bench prints
how many trials per second one loop could absorb if its own work were all it did.

Equal journaled work: the random proposer's draws are seeded by their position, so every
session runs the same trial rows and fold runs (printed: whether they matched).

The machine has few cores, shared: 3 workers oversubscribe 2 cores whether local or on Ray, and
the cluster's own processes (GCS, raylets, agents) take their share. The load average is
printed before and after; read the ratios side by side, not the absolute rates. Reports
numbers only; it asserts nothing. ``--quick`` runs one round of a smaller budget.

``--walk``: the S&P 500 walk instead (``alphaloop walk`` through the command line, as a user
runs it: ``cufolio_only``, TPE, ``--workers 2``, its last ``--epochs`` yearly epochs), on this
machine and on the cluster (``--ray-address``), interleaved for ``--rounds`` rounds: each
side's median wall time, Ray's over local's, and whether the two records are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks._report import SummaryRow, print_rows

MODE, DATA, SEED = "cufolio_only", "sp500", 7
BUDGET, QUICK_BUDGET = 24, 8
ROUNDS, QUICK_ROUNDS = 2, 1
WORKERS = (1, 2, 3)
CPUS = (1, 2)  # the head's and the node's: 3 task slots on the machine's cores


def _counter() -> dict[str, float]:
    return {"proposals": 0, "propose_s": 0.0, "writes": 0, "write_s": 0.0, "reads": 0}


def _instrument(counts: dict[str, float]) -> None:
    """Wraps the proposer's ``propose`` and the journal's write transactions and reads so they
    are counted and timed (this process only: a bench session's)."""
    from alphaloop.journal.connection import JournalFile
    from alphaloop.meta_agent.proposers import RandomProposer

    propose = RandomProposer.propose

    def timed_propose(self: Any, context: Any) -> Any:
        began = time.perf_counter()
        try:
            return propose(self, context)
        finally:
            counts["proposals"] += 1
            counts["propose_s"] += time.perf_counter() - began

    write = JournalFile._write

    @contextmanager
    def timed_write(self: Any) -> Iterator[Any]:
        began = time.perf_counter()
        with write(self) as conn:
            yield conn
        counts["writes"] += 1
        counts["write_s"] += time.perf_counter() - began

    rows = JournalFile._rows

    def counted_rows(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["reads"] += 1
        return rows(self, *args, **kwargs)

    RandomProposer.propose = timed_propose  # type: ignore[method-assign]
    JournalFile._write = timed_write  # type: ignore[method-assign]
    JournalFile._rows = counted_rows  # type: ignore[method-assign]


def session(where: str, workers: int, budget: int) -> dict[str, Any]:
    """One session in this process, at ``where`` (``local`` or a Ray address): its wall time,
    its journaled work and the loop's own costs."""
    from alphaloop.journal import Journal
    from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
    from alphaloop.settings import Settings

    counts = _counter()
    _instrument(counts)
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(ALPHALOOP_HOME=home)
        spec = SessionSpec(
            goal="maximise validation Sharpe",
            mode=MODE,
            budget=budget,
            proposer="random",
            data=DATA,
            seed=SEED,
            noise_seeds=3,
            workers=workers,
            ray_address=where,
        )
        began = time.perf_counter()
        sid = create_session(spec, settings)  # for Ray: connect and the pre-flight check
        setup = time.perf_counter() - began
        counts.update(_counter())
        cpu, began = time.process_time(), time.perf_counter()
        run_session(sid, settings)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        with Journal(settings.journal_path) as journal:
            ran = [t for t in journal.trials.of_session(sid, series=False) if t.status != "invalid"]
            folds = sum(len(journal.folds.of_trial(t.id)) for t in ran)
            places = sorted({t.ran_on or "" for t in ran})
    work = sorted((t.kind, t.config_hash, t.seed, t.status) for t in ran)
    return {
        "wall_s": wall,
        "setup_s": setup,
        "cpu_s": cpu,
        "trials": len(ran),
        "folds": folds,
        "work": work,
        "places": places,
        **counts,
    }


def run_one(cluster: Any, where: str, workers: int, budget: int) -> dict[str, Any]:
    """One session in a fresh process in the cluster's namespace (see the module docstring)."""
    module = __spec__.name if __spec__ else "benchmarks.bench_ray"
    argv = [sys.executable, "-c", f"from {module} import cli; cli()"]
    argv += ["--session", where, str(workers), str(budget)]
    done = cluster.exec(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"a bench session failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def walk(cluster: Any, where: str, epochs: int, budget: int) -> dict[str, Any]:
    """The S&P 500 walk through the CLI in the cluster's namespace, at ``where``: its wall time
    and what each epoch traded (by config: ids differ between journals)."""
    from alphaloop.market import load_market
    from alphaloop.meta_agent.session import SessionSpec
    from alphaloop.walk import WalkSpec, plan

    spec = WalkSpec(session=SessionSpec(goal="walk", mode=MODE, data=DATA, budget=budget))
    start = plan(spec, load_market(DATA))[-epochs].first_day
    argv = [sys.executable, "-m", "alphaloop", "walk", "maximise Sharpe", "--data", DATA]
    argv += ["--mode", MODE, "--budget", str(budget), "--proposer", "tpe", "--workers", "2"]
    argv += ["--start", str(start), "--ray-address", where, "--json"]
    with tempfile.TemporaryDirectory() as home:
        began = time.perf_counter()
        done = cluster.exec(argv, {"ALPHALOOP_HOME": home}, capture_output=True, timeout=7200)
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(f"a bench walk failed:\n{done.stderr.decode()[-3000:]}")
        shown = json.loads(done.stdout)["walk"]
        with sqlite3.connect(f"file:{home}/journal.db?mode=ro", uri=True) as conn:
            results = [json.loads(r) for (r,) in conn.execute(
                "SELECT result FROM walk_epochs ORDER BY epoch")]  # fmt: skip
            places = sorted({p for (p,) in conn.execute("SELECT DISTINCT ran_on FROM trials")})
    traded = [
        (r["start"], r["end"], {k: (p["config_hash"], p["returns"]) for k, p in r["picks"].items()})
        for r in results
    ]
    return {"wall_s": wall, "traded": traded, "places": places, "verdict": shown["status"]}


def main_walk(epochs: int, budget: int, rounds: int) -> list[SummaryRow]:
    """The walk on this machine and on the cluster, interleaved (see the module docstring)."""
    from tests.loopback_cluster import LoopbackCluster, available

    why = available()
    if why is not None:
        print(f"  skipped: {why}")
        return []
    print(f"  {os.cpu_count()} CPUs; cluster: head {CPUS[0]} CPU + node {CPUS[1]} CPUs on loopback")
    print(f"  the {DATA} walk, last {epochs} yearly epochs, {budget} trials an epoch, 2 workers")
    print(f"  load average before: {_load()}")
    cluster = LoopbackCluster()
    runs: dict[str, list[dict[str, Any]]] = {"local": [], "ray": []}
    try:
        cluster.start(CPUS)
        for _ in range(rounds):
            runs["local"].append(walk(cluster, "local", epochs, budget))
            runs["ray"].append(walk(cluster, cluster.address, epochs, budget))
    finally:
        cluster.close()
    print(f"  load average after: {_load()}")
    local, ray = _med(runs["local"], "wall_s"), _med(runs["ray"], "wall_s")
    first = runs["local"][0]["traded"]
    same = all(r["traded"] == first for rs in runs.values() for r in rs)
    rows = [
        (
            "  walk wall time, local | Ray (median)",
            f"{local:.0f} s | {ray:.0f} s; Ray/local {ray / local:.2f}x",
        ),
        (
            "  trials ran on",
            ", ".join(sorted({p for rs in runs.values() for r in rs for p in r["places"]})),
        ),
        ("  the records", "the same everywhere" if same else "NOT THE SAME"),
    ]
    print_rows(rows)
    label = f"S&P 500 walk ({epochs} epochs), Ray vs local"
    return [(label, f"{ray:.0f} s vs {local:.0f} s", f"{ray / local:.2f}x, 2 workers")]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _med(runs: list[dict[str, Any]], key: str | Callable[[dict[str, Any]], float]) -> float:
    get = key if callable(key) else (lambda r: r[key])
    return statistics.median(get(r) for r in runs)


def main(quick: bool = False, rounds: int | None = None) -> dict[str, Any]:
    from tests.loopback_cluster import LoopbackCluster, available

    why = available()
    if why is not None:
        print(f"  skipped: {why}")
        return {"summary": [], "results": {}}
    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    budget = QUICK_BUDGET if quick else BUDGET
    print(f"  {os.cpu_count()} CPUs; cluster: head {CPUS[0]} CPU + node {CPUS[1]} CPUs on loopback")
    print(f"  {MODE}, {budget} search trials on {DATA}, random proposer, seed {SEED}")
    print(f"  {rounds} round(s) of local 1, Ray 1, local 2, Ray 2, local 3, Ray 3")
    print(f"  load average before: {_load()}")
    cluster = LoopbackCluster()
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    try:
        cluster.start(CPUS)
        for _ in range(rounds):
            for w in WORKERS:
                for side, where in (("local", "local"), ("ray", cluster.address)):
                    runs.setdefault((side, w), []).append(run_one(cluster, where, w, budget))
    finally:
        cluster.close()
    print(f"  load average after: {_load()}")
    summary = report(runs)
    return {"summary": summary, "results": {f"{s} {w}": r for (s, w), r in runs.items()}}


def report(runs: dict[tuple[str, int], list[dict[str, Any]]]) -> list[SummaryRow]:
    """Prints the table and the loop's costs; returns the summary rows."""
    everything = [r for rs in runs.values() for r in rs]
    first = everything[0]
    equal = all(r["work"] == first["work"] for r in everything)
    trials, folds = first["trials"], first["folds"]
    print(f"  journaled work, each run: {trials} trial rows, {folds} fold runs"
          + ("; the same rows everywhere" if equal else "; NOT EQUAL"))  # fmt: skip
    per_hour = {k: trials / _med(rs, "wall_s") * 3600 for k, rs in runs.items()}
    lines = []
    for w in WORKERS:
        local, ray = per_hour[("local", w)], per_hour[("ray", w)]
        ratios = [
            a["wall_s"] / b["wall_s"]
            for a, b in zip(runs[("local", w)], runs[("ray", w)], strict=True)
        ]
        lines.append(
            (
                f"  {w} worker(s): trials/h local | Ray",
                f"{local:,.0f} | {ray:,.0f}   Ray/local {statistics.median(ratios):.2f}x "
                f"({', '.join(f'{r:.2f}' for r in ratios)});  vs 1 worker: local "
                f"{local / per_hour[('local', 1)]:.2f}x, Ray {ray / per_hour[('ray', 1)]:.2f}x",
            )
        )
    print_rows(lines)
    costs = []
    for (side, w), rs in sorted(runs.items()):
        n = trials
        costs.append(
            (
                f"  loop's own costs per trial row, {side} {w}",
                f"proposals {_med(rs, 'propose_s') / n * 1e3:.1f} ms; journal "
                f"{_med(rs, 'writes') / n:.1f} writes {_med(rs, 'write_s') / n * 1e3:.1f} ms, "
                f"{_med(rs, 'reads') / n:.0f} reads; process CPU "
                f"{_med(rs, 'cpu_s') / n * 1e3:.0f} ms"
                + (" (trials included: they run in it)" if (side, w) == ("local", 1) else ""),
            )
        )
    print_rows(costs)
    ray_cpu = {w: _med(runs[("ray", w)], "cpu_s") / trials for w in WORKERS}
    setup = _med(runs[("ray", 1)], "setup_s")
    print_rows(
        [
            ("  Ray: connect + pre-flight", f"{setup:.1f} s a session (before its clock)"),
            (
                "  one loop could absorb",
                ", ".join(f"{1 / ray_cpu[w]:.1f} trials/s at {w} Ray workers" for w in WORKERS)
                + " (1 / the driver's CPU per trial row)",
            ),
        ]
    )
    summary: list[SummaryRow] = []
    for w in WORKERS:
        local, ray = per_hour[("local", w)], per_hour[("ray", w)]
        summary.append(
            (
                f"Ray vs local, {w} worker(s), trials/h",
                f"{ray:,.0f} vs {local:,.0f} ({ray / local:.2f}x)",
                f"{trials} trial rows, 2-node loopback cluster",
            )
        )
    return summary


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round of a smaller budget")
    parser.add_argument("--rounds", type=int, help=f"rounds of the six sessions ({ROUNDS})")
    parser.add_argument(
        "--session",
        nargs=3,
        metavar=("WHERE", "WORKERS", "BUDGET"),
        help="run one session here and print its measures as JSON (what each run calls)",
    )
    parser.add_argument("--walk", action="store_true", help="the S&P 500 walk instead")
    parser.add_argument("--epochs", type=int, default=5, help="the walk's last epochs (5)")
    parser.add_argument("--budget", type=int, default=20, help="the walk's trials an epoch (20)")
    args = parser.parse_args(argv)
    if args.walk:
        main_walk(args.epochs, args.budget, args.rounds or 1)
    elif args.session:
        where, workers, budget = args.session
        print(json.dumps(session(where, int(workers), int(budget))))
    else:
        main(args.quick, args.rounds)


if __name__ == "__main__":
    cli()
